#include "server/scheduler.h"

#include <fmt/format.h>

#include <algorithm>

#include "server/metrics.h"
#include "server/thread_name.h"

namespace lazyllm::server {

std::string prune_key(const PruneOptions& p) {
    const ScheduleOverrides& o = p.overrides;
    auto opt = [](const auto& v) { return v ? fmt::format("{}", *v) : std::string("-"); };
    return fmt::format(
        "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", policy_name(p.policy), preset_name(p.preset),
        p.schedule ? to_string(*p.schedule) : "-", opt(o.keep_first), opt(o.keep_recent),
        opt(o.min_context), opt(o.prune_decode), opt(o.score_layers), opt(o.score_pool),
        opt(o.revive_max), opt(o.revive_weight), opt(o.repair), opt(o.verify_margin), p.seed);
}

Scheduler::Scheduler(const Engine& engine, SchedulerConfig cfg, Metrics& metrics)
    : engine_(engine), cfg_(cfg), metrics_(metrics) {
    slots_.resize(static_cast<size_t>(cfg_.n_slots));
    worker_ = std::thread([this] {
        name_this_thread("lazyllm-sched");
        run();
    });
}

Scheduler::~Scheduler() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
}

bool Scheduler::submit(const std::shared_ptr<Job>& job) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        drop_dead_jobs_locked();
        // Every job passes through the queue, also one a free slot takes at the next round: the
        // queue holds queue_capacity jobs beyond those the free slots will take.
        const int free_slots = std::max(0, cfg_.n_slots - busy_.load());
        if (static_cast<int>(queue_.size()) >= cfg_.queue_capacity + free_slots) return false;
        job->submitted = std::chrono::steady_clock::now();
        queue_.push_back(job);
    }
    cv_.notify_all();
    return true;
}

void Scheduler::drop_dead_jobs_locked() {
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(queue_, [now](const std::shared_ptr<Job>& job) {
        const bool expired = now > job->deadline;
        if (!job->cancelled && !expired) return false;
        std::lock_guard<std::mutex> jl(job->mu);
        if (!job->cancelled) {
            job->error = ApiError{408,
                                  "the request waited past the server's per-request timeout "
                                  "(--timeout)",
                                  "server_error", "", "timeout"};
        }
        job->done = true;
        job->cv.notify_all();
        return true;
    });
}

int Scheduler::queue_depth() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(queue_.size());
}

int Scheduler::busy_slots() const { return busy_.load(); }

int Scheduler::pick_slot(const Job& job) const {
    int best = -1;
    int64_t best_prefix = -1;
    uint64_t best_used = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
        const Slot& s = slots_[i];
        if (s.job) continue;
        int64_t prefix = 0;
        if (s.conv && s.key == job.prune_key && job.cache_prompt) prefix = s.conv->common_prefix(job.prompt);
        // Longest prefix first; among equals the least recently used slot, so that a fresh
        // conversation does not evict a cache another client may come back to.
        if (prefix > best_prefix || (prefix == best_prefix && s.last_used < best_used)) {
            best = static_cast<int>(i);
            best_prefix = prefix;
            best_used = s.last_used;
        }
    }
    return best;
}

void Scheduler::finish(Slot& slot, std::optional<ApiError> error) {
    const std::shared_ptr<Job> job = std::move(slot.job);
    slot.job.reset();
    if (slot.conv && slot.conv->in_turn()) slot.conv->abandon();
    --busy_;
    {
        std::lock_guard<std::mutex> lock(job->mu);
        if (slot.conv) job->stats = slot.conv->stats();
        job->error = std::move(error);
        job->done = true;
    }
    job->cv.notify_all();
    if (!job->error && !job->cancelled) metrics_.turn(job->stats);
}

namespace {

// An engine error as an API error: the request's fault (400 naming `param`) for a bad argument or
// a value out of range, else the server's (500).
ApiError engine_error(const Error& err, const char* param) {
    ApiError e;
    e.message = err.message();
    if (err.code() == ErrorCode::kInvalidArgument || err.code() == ErrorCode::kOutOfRange) {
        e.param = param;
    } else {
        e.status = 500;
        e.type = "server_error";
    }
    return e;
}

}  // namespace

void Scheduler::start(Slot& slot) {
    Job& job = *slot.job;
    if (!slot.conv || slot.key != job.prune_key) {
        slot.conv.reset();  // frees the old cache before the new one is made
        auto conv = engine_.open_conversation(job.prune, cfg_.n_ctx);
        if (!conv.ok()) {
            ApiError e = engine_error(conv.error(), "lazyllm");
            slot.key.clear();
            finish(slot, e);
            return;
        }
        slot.conv = std::move(conv).value();
        slot.key = job.prune_key;
    }
    if (!job.cache_prompt) {
        // Between turns (each ends done or abandoned) the truncation cannot fail.
        if (Status st = slot.conv->truncate(0); !st.ok()) {
            slot.conv.reset();
            slot.key.clear();
            finish(slot, engine_error(Error(ErrorCode::kInternal, st.error().message()), "prompt"));
            return;
        }
    }
    auto d = slot.conv->start_turn(job.prompt, job.turn);
    if (!d.ok()) {
        ApiError e = engine_error(d.error(), "prompt");
        // The cache may hold part of a failed step: forget it.
        slot.conv.reset();
        slot.key.clear();
        finish(slot, e);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(job.mu);
        job.started = true;
        job.stats = slot.conv->stats();
        job.policy = slot.conv->policy();
        job.schedule = slot.conv->schedule();
    }
    job.cv.notify_all();
}

void Scheduler::advance(const std::vector<Slot*>& slots) {
    convs_.clear();
    for (Slot* slot : slots) convs_.push_back(slot->conv.get());
    Status st;
    if (cfg_.batch_decode) {
        st = Conversation::next_batch(convs_, deltas_);
    } else {
        deltas_.assign(convs_.size(), TurnDelta{});
        for (size_t i = 0; i < convs_.size() && st.ok(); ++i) {
            auto d = convs_[i]->next();
            if (d.ok()) {
                deltas_[i] = *d;
            } else {
                st = d.error();
            }
        }
    }
    if (!st.ok()) {
        for (Slot* slot : slots) {
            ApiError e;
            e.status = 500;
            e.type = "server_error";
            e.message = st.error().message();
            finish(*slot, e);
        }
        return;
    }
    for (size_t i = 0; i < slots.size(); ++i) {
        Slot& slot = *slots[i];
        Job& job = *slot.job;
        const TurnDelta& d = deltas_[i];
        if (!d.text.empty() || !d.logprobs.empty()) {
            std::lock_guard<std::mutex> lock(job.mu);
            job.text += d.text;
            for (const TokenLogprob& t : d.logprobs) job.logprobs.push_back(t);
            job.stats = slot.conv->stats();
        }
        job.cv.notify_all();
        if (d.done) finish(slot, std::nullopt);
    }
}

void Scheduler::run() {
    while (true) {
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [&] { return stop_ || !queue_.empty() || busy_.load() > 0; });
            if (stop_) break;
            drop_dead_jobs_locked();
            // Admit queued jobs to free slots, in FIFO order.
            while (!queue_.empty()) {
                std::shared_ptr<Job> job = queue_.front();
                const int i = pick_slot(*job);
                if (i < 0) break;
                queue_.pop_front();
                job->slot = i;
                job->queue_ms = std::chrono::duration<double, std::milli>(
                                    std::chrono::steady_clock::now() - job->submitted).count();
                slots_[static_cast<size_t>(i)].job = std::move(job);
                slots_[static_cast<size_t>(i)].last_used = ++tick_;
                ++busy_;
            }
        }
        // One round: each busy slot starts (its prompt step) or decodes one token; the decode
        // steps of all generating slots run together (Conversation::next_batch).
        const auto now = std::chrono::steady_clock::now();
        decoding_.clear();
        for (Slot& slot : slots_) {
            if (!slot.job) continue;
            if (slot.job->cancelled) {
                finish(slot, std::nullopt);
            } else if (now > slot.job->deadline) {
                ApiError e;
                e.status = 408;
                e.message = "the request ran past the server's per-request timeout (--timeout)";
                e.type = "server_error";
                e.code = "timeout";
                finish(slot, e);
            } else if (!slot.conv || !slot.conv->in_turn()) {
                if (slot.job->started) {
                    finish(slot, std::nullopt);
                } else {
                    start(slot);
                }
            } else {
                decoding_.push_back(&slot);
            }
        }
        if (!decoding_.empty()) advance(decoding_);
    }
    // Shutting down: release everything still waiting.
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& job : queue_) {
        std::lock_guard<std::mutex> jl(job->mu);
        job->error = ApiError{503, "the server is shutting down", "server_error", "", "shutting_down"};
        job->done = true;
        job->cv.notify_all();
    }
    for (Slot& slot : slots_) {
        if (slot.job) finish(slot, ApiError{503, "the server is shutting down", "server_error", "", "shutting_down"});
    }
}

}  // namespace lazyllm::server
