// Monotonic wall-clock timing.
#pragma once

#include <chrono>
#include <cstdint>

namespace lazyllm {

inline int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

class Timer {
public:
    Timer() : start_(now_ns()) {}
    void reset() { start_ = now_ns(); }
    int64_t elapsed_ns() const { return now_ns() - start_; }
    double elapsed_ms() const { return static_cast<double>(elapsed_ns()) / 1e6; }

private:
    int64_t start_;
};

}  // namespace lazyllm
