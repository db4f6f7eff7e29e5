#include "cli/interrupt.h"

#include <unistd.h>

namespace lazyllm::cli {

std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);  // safe to set in a signal handler

namespace {

void on_interrupt(int) {
    g_interrupted.store(true, std::memory_order_relaxed);
    constexpr char kNote[] =
        "\nlazyllm: interrupted: stopping after this step (Ctrl-C again to quit)\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kNote, sizeof(kNote) - 1);
}

}  // namespace

CatchInterrupt::CatchInterrupt() {
    g_interrupted.store(false, std::memory_order_relaxed);
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_);
}

CatchInterrupt::~CatchInterrupt() { sigaction(SIGINT, &old_, nullptr); }

}  // namespace lazyllm::cli
