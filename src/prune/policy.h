// Pruning policies (docs/design.md 1.5): what each one decides about a step, over plain data.
// The session (src/runtime/session.cpp) runs the step; a policy only says which tokens leave
// for good before it, where its boundaries are and what each boundary does, and what becomes
// of the tokens a boundary cuts. LazyLLM is one policy; full and the paper's baselines (static,
// random) and GemFilter are the others, so every comparison runs in one binary.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "prune/schedule.h"

namespace lazyllm::prune {

// What a boundary does to the candidate set S.
enum class BoundaryMode {
    kSelect,   // score S and keep the top fraction (lazy; static and gemfilter at prefill)
    kNone,     // keep S; only revive tokens waiting in Aux slots (lazy steps that do not prune)
    kExclude,  // drop the tokens excluded for good at prefill (static after its prefill)
};

struct Boundary {
    int layer = 0;  // pruning happens before this layer, inside layer - 1
    BoundaryMode mode = BoundaryMode::kNone;
    float keep = 1.0f;  // cumulative keep fraction (kSelect)
};

// The facts about a step a policy decides on.
struct StepInfo {
    bool prefill = false;      // the session's first step
    bool prune_step = false;   // the context reaches Schedule::min_context
    int64_t n_new = 0;         // new tokens of the step
    int64_t n_total = 0;       // context tokens after the step
    bool has_deferred = false;  // a token of an earlier step waits in its Aux slot
};

class StepPolicy {
public:
    virtual ~StepPolicy() = default;

    // Marks tokens excluded for good before the step runs (excluded: [n_ctx] flags).
    virtual void exclude_before(const StepInfo& /*info*/, std::span<uint8_t> /*excluded*/) const {}
    // Whether excluded tokens are out of the candidate set from layer 0 of this step.
    virtual bool excludes_at_layer0(const StepInfo& /*info*/) const { return false; }
    // GemFilter: score at the first boundary, then run the whole model again on the kept tokens.
    virtual bool two_pass(const StepInfo& /*info*/) const { return false; }
    // The step's boundaries, in layer order (none: every layer runs on every token).
    virtual void plan(const StepInfo& info, std::vector<Boundary>& out) const = 0;
    // Whether the tokens a kSelect boundary of this step cuts are excluded for good (static).
    virtual bool cut_is_final(const StepInfo& /*info*/) const { return false; }
    // Whether cut tokens wait in Aux slots for a later step to revive them (LazyLLM alone).
    virtual bool revives() const { return false; }
};

// The policy over a validated schedule (random's drop pattern comes from `seed`).
std::unique_ptr<StepPolicy> make_policy(Policy policy, const Schedule& schedule, uint64_t seed);

// Positions a schedule never prunes: the first keep_first and the last max(1, keep_recent).
bool is_protected(const Schedule& schedule, int32_t pos, int64_t n_total);

}  // namespace lazyllm::prune
