// Ctrl-C during a generation (run, and each answer of run --conversation): the first one stops
// generating after the token in hand and the answer so far stands (stop reason "interrupted";
// run then exits 130, as a shell reports a program ended by SIGINT); SA_RESETHAND makes a
// second one end the process at once (a prompt step runs to its end before the first is seen).
#pragma once

#include <atomic>
#include <csignal>

namespace lazyllm::cli {

// Set by the handler; a generation's text callback reads it and stops.
extern std::atomic<bool> g_interrupted;

// Sets the handler (and clears g_interrupted) for one generation; the destructor puts back what
// was there. SA_RESTART: a write to stdout that the signal interrupts goes on.
class CatchInterrupt {
public:
    CatchInterrupt();
    ~CatchInterrupt();
    CatchInterrupt(const CatchInterrupt&) = delete;
    CatchInterrupt& operator=(const CatchInterrupt&) = delete;

private:
    struct sigaction old_ {};
};

}  // namespace lazyllm::cli
