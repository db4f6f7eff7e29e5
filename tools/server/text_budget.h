// The bytes of request text being tokenized at once, across connections. Tokenizing one long
// word takes up to 55 bytes of scratch per byte of text (an 8 MiB body: 450 MB), and every
// connection has a thread of its own (task_pool.h, up to --http-threads): without a bound, a few
// hundred clients sending large prompts at once could take tens of GB.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>

namespace lazyllm::server {

class TextBudget {
public:
    explicit TextBudget(size_t cap_bytes) : cap_(cap_bytes) {}

    // Waits until `bytes` fit beside the text in flight (a text alone always fits), then takes
    // them; false, taking nothing, once give_up() (asked every `poll`) is true first.
    bool acquire(size_t bytes, const std::function<bool()>& give_up,
                 std::chrono::milliseconds poll = std::chrono::milliseconds(100));
    void release(size_t bytes);
    size_t in_flight() const;

private:
    const size_t cap_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    size_t in_flight_ = 0;
};

// Holds a TextBudget's bytes until destroyed.
class TextBudgetHold {
public:
    TextBudgetHold(TextBudget& budget, size_t bytes) : budget_(budget), bytes_(bytes) {}
    ~TextBudgetHold() { budget_.release(bytes_); }
    TextBudgetHold(const TextBudgetHold&) = delete;
    TextBudgetHold& operator=(const TextBudgetHold&) = delete;

private:
    TextBudget& budget_;
    size_t bytes_;
};

}  // namespace lazyllm::server
