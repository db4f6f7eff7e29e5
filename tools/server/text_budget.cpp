#include "server/text_budget.h"

namespace lazyllm::server {

bool TextBudget::acquire(size_t bytes, const std::function<bool()>& give_up,
                         std::chrono::milliseconds poll) {
    std::unique_lock<std::mutex> lock(mu_);
    const auto fits = [&] { return in_flight_ == 0 || in_flight_ + bytes <= cap_; };
    while (!fits()) {
        if (cv_.wait_for(lock, poll, fits)) break;
        lock.unlock();
        const bool stop = give_up();  // may take a while (a /proc scan): not under the lock
        lock.lock();
        if (stop && !fits()) return false;
    }
    in_flight_ += bytes;
    return true;
}

void TextBudget::release(size_t bytes) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        in_flight_ -= bytes;
    }
    cv_.notify_all();
}

size_t TextBudget::in_flight() const {
    std::lock_guard<std::mutex> lock(mu_);
    return in_flight_;
}

}  // namespace lazyllm::server
