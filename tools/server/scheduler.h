// Slots and the request queue of `lazyllm serve`. N slots each keep a Conversation (tokens, KV,
// depths, Aux slots) across requests; a bounded FIFO queue holds requests waiting for a slot.
// One worker thread drives every slot: it admits queued requests to free slots (the slot whose
// cache shares the longest prefix with the request, under the same pruning options), runs the
// new prompt suffix of each starting request as one step, and then the decode steps of all
// generating slots, batched into one forward where their policies allow (full policy; see
// Conversation::next_batch), so streams advance together. HTTP threads only submit jobs and read
// their output.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lazyllm/conversation.h"
#include "lazyllm/engine.h"
#include "server/api_request.h"

namespace lazyllm::server {

class Metrics;

// One request's generation: its input, and the output the worker fills in (under mu).
struct Job {
    // Input (set before submit).
    std::vector<TokenId> prompt;
    TurnOptions turn;
    PruneOptions prune;
    std::string prune_key;  // slots reuse a cache only under the same pruning options
    bool cache_prompt = true;
    std::chrono::steady_clock::time_point deadline;

    // Output.
    std::mutex mu;
    std::condition_variable cv;
    std::string text;      // generated text not yet taken by the HTTP thread
    std::vector<TokenLogprob> logprobs;  // the same for TurnOptions::logprobs
    bool started = false;  // the prompt step ran (TTFT reached)
    bool done = false;
    std::optional<ApiError> error;
    TurnStats stats;
    std::string policy, schedule;
    int slot = -1;
    double queue_ms = 0.0;
    std::chrono::steady_clock::time_point submitted;

    std::atomic<bool> cancelled{false};  // set by the HTTP thread (client gone)
};

// A canonical key of pruning options: equal keys give the same Session options.
std::string prune_key(const PruneOptions& p);

struct SchedulerConfig {
    int n_slots = 2;
    int queue_capacity = 16;
    int64_t n_ctx = 0;  // per slot
    bool batch_decode = true;  // false: each slot's decode step alone (for comparison)
};

class Scheduler {
public:
    Scheduler(const Engine& engine, SchedulerConfig cfg, Metrics& metrics);
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Queues a job; false when every slot is busy and queue_capacity jobs already wait for one
    // (the caller answers 503). Jobs whose client left are not counted.
    bool submit(const std::shared_ptr<Job>& job);
    int queue_depth() const;
    int busy_slots() const;
    int n_slots() const { return cfg_.n_slots; }
    int64_t n_ctx() const { return cfg_.n_ctx; }

private:
    struct Slot {
        std::unique_ptr<Conversation> conv;
        std::string key;  // prune_key of conv
        std::shared_ptr<Job> job;
        uint64_t last_used = 0;
    };

    void run();
    // Picks the free slot for a job: longest common prefix under the same key, else the least
    // recently used. -1 when none is free.
    int pick_slot(const Job& job) const;
    // Starts a job on its slot: (re)opens the conversation if the key differs, runs the prompt.
    void start(Slot& slot);
    // One decode step of each started job, batched where their policies allow.
    void advance(const std::vector<Slot*>& slots);
    void finish(Slot& slot, std::optional<ApiError> error);
    // Under mu_: ends the queued jobs whose client left or whose deadline passed, wherever they
    // stand in the queue.
    void drop_dead_jobs_locked();

    const Engine& engine_;
    SchedulerConfig cfg_;
    Metrics& metrics_;
    std::vector<Slot> slots_;  // touched by the worker only, apart from busy counts
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Job>> queue_;
    std::atomic<int> busy_{0};
    uint64_t tick_ = 0;
    // Per-round working lists (worker only; reused).
    std::vector<Slot*> decoding_;
    std::vector<Conversation*> convs_;
    std::vector<TurnDelta> deltas_;
    bool stop_ = false;
    std::thread worker_;
};

}  // namespace lazyllm::server
