#include "prune/policy.h"

#include <algorithm>
#include <random>

#include "prune/select.h"

namespace lazyllm::prune {

bool is_protected(const Schedule& schedule, int32_t pos, int64_t n_total) {
    return pos >= n_total - std::max(1, schedule.keep_recent) || pos < schedule.keep_first;
}

namespace {

// No pruning: every layer runs on every token.
class FullPolicy final : public StepPolicy {
public:
    void plan(const StepInfo&, std::vector<Boundary>&) const override {}
};

// LazyLLM (paper Sec. 3): every step selects afresh at every boundary; cut tokens wait in Aux
// slots. A step of several new tokens (a prompt, or a new turn over a cached one) selects; a
// one-token decode step only with prune_decode. Below min_context no step selects; it still
// crosses the boundaries when an earlier step left tokens in Aux slots, so they revive where
// they stopped. A step over a context that reaches a tier's min_context cuts at the tier's.
class LazyPolicy final : public StepPolicy {
public:
    explicit LazyPolicy(const Schedule& s) : s_(s) {}
    void plan(const StepInfo& info, std::vector<Boundary>& out) const override {
        const bool select = info.prune_step && (info.prefill || info.n_new > 1 || s_.prune_decode);
        if (!select && !info.has_deferred) return;  // exactly the full step
        // Schedule::tiers need repair, so a step that only revives has the schedule's own cuts.
        const StepCuts cuts = cuts_for(s_, info.n_total);
        for (size_t j = 0; j < cuts.boundaries.size(); ++j) {
            out.push_back({cuts.boundaries[j], select ? BoundaryMode::kSelect : BoundaryMode::kNone,
                           cuts.keep[j]});
        }
    }
    bool revives() const override { return true; }

private:
    Schedule s_;
};

// Static pruning (the paper's baseline): one cut at prefill from the first boundary's scores;
// the cut tokens never return.
class StaticPolicy final : public StepPolicy {
public:
    explicit StaticPolicy(const Schedule& s) : s_(s) {}
    void plan(const StepInfo& info, std::vector<Boundary>& out) const override {
        if (info.prefill && !info.prune_step) return;
        out.push_back({s_.boundaries.front(),
                       info.prefill ? BoundaryMode::kSelect : BoundaryMode::kExclude,
                       s_.keep.front()});
    }
    bool cut_is_final(const StepInfo& info) const override { return info.prefill; }

private:
    Schedule s_;
};

// Random token drop (the paper's baseline): prompt tokens dropped before inference, seeded,
// protected positions aside; dropped tokens are out of every layer from then on.
class RandomPolicy final : public StepPolicy {
public:
    RandomPolicy(const Schedule& s, uint64_t seed) : s_(s), seed_(seed) {}
    void exclude_before(const StepInfo& info, std::span<uint8_t> excluded) const override {
        if (!info.prefill || !info.prune_step) return;
        const int64_t n_total = info.n_total;
        // The recent window on top of the keep count, as select_kept gives the other policies.
        const int64_t n_keep = std::min(n_total, keep_count(s_.keep.front(), n_total, n_total) +
                                                     recent_window(s_, n_total).extra);
        std::vector<int32_t> droppable;
        for (int32_t p = 0; p < n_total; ++p) {
            if (!is_protected(s_, p, n_total)) droppable.push_back(p);
        }
        const int64_t n_protected = n_total - static_cast<int64_t>(droppable.size());
        const int64_t n_drop = std::max<int64_t>(0, n_total - std::max(n_keep, n_protected));
        std::mt19937_64 rng(seed_);
        for (int64_t i = 0; i < n_drop; ++i) {  // partial Fisher-Yates
            const uint64_t span = droppable.size() - static_cast<uint64_t>(i);
            const size_t j = static_cast<size_t>(i) + static_cast<size_t>(rng() % span);
            std::swap(droppable[static_cast<size_t>(i)], droppable[j]);
            excluded[droppable[static_cast<size_t>(i)]] = 1;
        }
    }
    bool excludes_at_layer0(const StepInfo&) const override { return true; }
    void plan(const StepInfo&, std::vector<Boundary>&) const override {}

private:
    Schedule s_;
    uint64_t seed_;
};

// GemFilter-style two-pass selection: at prefill, score at the first boundary, then run the
// whole model again on the kept tokens only, at their original positions; later steps never
// see the others.
class GemFilterPolicy final : public StepPolicy {
public:
    bool excludes_at_layer0(const StepInfo& info) const override { return !info.prefill; }
    bool two_pass(const StepInfo& info) const override { return info.prefill && info.prune_step; }
    void plan(const StepInfo&, std::vector<Boundary>&) const override {}
};

}  // namespace

std::unique_ptr<StepPolicy> make_policy(Policy policy, const Schedule& schedule, uint64_t seed) {
    switch (policy) {
        case Policy::kLazy: return std::make_unique<LazyPolicy>(schedule);
        case Policy::kStatic: return std::make_unique<StaticPolicy>(schedule);
        case Policy::kRandom: return std::make_unique<RandomPolicy>(schedule, seed);
        case Policy::kGemFilter: return std::make_unique<GemFilterPolicy>();
        case Policy::kFull: break;
    }
    return std::make_unique<FullPolicy>();
}

}  // namespace lazyllm::prune
