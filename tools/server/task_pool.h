// The threads that serve HTTP connections. cpp-httplib runs each connection on one task of its
// queue, from accept to close, idle keep-alive waits included; with a fixed pool of N threads,
// N idle connections (a browser keeps several open; so does a slow or hostile client) leave
// every other client waiting until their idle timeout. This pool keeps `min_threads` and starts
// another whenever a connection arrives and none is free, up to `max_threads`; the threads beyond
// `min_threads` end after `retire_after` without work. Past `max_threads`, connections wait in
// order for a thread (the accepted sockets are bounded by the process's descriptor limit).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace lazyllm::server {

class ElasticPool {
public:
    ElasticPool(size_t min_threads, size_t max_threads, std::chrono::milliseconds retire_after);
    ~ElasticPool();  // shutdown() when not called yet
    ElasticPool(const ElasticPool&) = delete;
    ElasticPool& operator=(const ElasticPool&) = delete;

    void enqueue(std::function<void()> job);
    // Runs the jobs already queued, then joins every thread. Later enqueues are dropped.
    void shutdown();

    size_t threads() const;       // started and not yet ended
    size_t peak_threads() const;  // the most at once since construction

private:
    bool start_thread_locked();  // false: no thread could be started
    void work();
    void join_ended();  // joins the threads that retired

    const size_t min_threads_, max_threads_;
    const std::chrono::milliseconds retire_after_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> jobs_;
    std::map<std::thread::id, std::thread> threads_;
    std::vector<std::thread> ended_;             // retired, to join outside the lock
    size_t idle_ = 0, starting_ = 0, peak_ = 0;  // starting_: started, not yet waiting
    bool shutdown_ = false;
};

}  // namespace lazyllm::server
