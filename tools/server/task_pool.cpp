#include "server/task_pool.h"

#include <algorithm>
#include <system_error>
#include <utility>

#include "server/thread_name.h"

namespace lazyllm::server {

ElasticPool::ElasticPool(size_t min_threads, size_t max_threads,
                         std::chrono::milliseconds retire_after)
    : min_threads_(std::min(min_threads, std::max<size_t>(max_threads, 1))),
      max_threads_(std::max<size_t>(max_threads, 1)),
      retire_after_(retire_after) {
    std::lock_guard<std::mutex> lock(mu_);
    while (threads_.size() < min_threads_ && start_thread_locked()) {
    }
}

ElasticPool::~ElasticPool() { shutdown(); }

bool ElasticPool::start_thread_locked() {
    std::thread t;
    try {
        t = std::thread(&ElasticPool::work, this);
    } catch (const std::system_error&) {
        return false;  // out of threads (a pids limit, memory): the job waits for a running one
    }
    const auto id = t.get_id();
    threads_.emplace(id, std::move(t));
    ++starting_;
    peak_ = std::max(peak_, threads_.size());
    return true;
}

void ElasticPool::enqueue(std::function<void()> job) {
    join_ended();
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (shutdown_) return;
        jobs_.push_back(std::move(job));
        if (idle_ + starting_ < jobs_.size() && threads_.size() < max_threads_)
            start_thread_locked();
    }
    cv_.notify_one();
}

void ElasticPool::work() {
    name_this_thread("lazyllm-http");
    std::unique_lock<std::mutex> lock(mu_);
    --starting_;
    for (;;) {
        ++idle_;
        const bool woken =
            cv_.wait_for(lock, retire_after_, [this] { return shutdown_ || !jobs_.empty(); });
        --idle_;
        if (jobs_.empty()) {
            if (shutdown_) return;  // shutdown() joins every thread still in threads_
            if (!woken && threads_.size() > min_threads_) break;
            continue;
        }
        std::function<void()> job = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        job();
        job = nullptr;  // what the job captured goes before the lock is taken again
        lock.lock();
    }
    // Retire: hand this thread's handle to the next enqueue() or shutdown() to join.
    auto self = threads_.find(std::this_thread::get_id());
    ended_.push_back(std::move(self->second));
    threads_.erase(self);
}

void ElasticPool::join_ended() {
    std::vector<std::thread> ended;
    {
        std::lock_guard<std::mutex> lock(mu_);
        ended.swap(ended_);
    }
    for (auto& t : ended) t.join();
}

void ElasticPool::shutdown() {
    std::map<std::thread::id, std::thread> running;
    {
        std::lock_guard<std::mutex> lock(mu_);
        shutdown_ = true;
    }
    cv_.notify_all();
    // Threads may still retire while the others drain the queue: join until none is left.
    for (;;) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (threads_.empty() && ended_.empty()) break;
            running.swap(threads_);
        }
        for (auto& [id, t] : running) t.join();
        running.clear();
        join_ended();
    }
}

size_t ElasticPool::threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_.size();
}

size_t ElasticPool::peak_threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return peak_;
}

}  // namespace lazyllm::server
