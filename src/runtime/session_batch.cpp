// Session::step_batch: the decode steps of several sessions as one forward, each a step with no
// boundary (the full policy's, or a LazyLLM step with nothing to select or revive): its one new
// token runs every layer over the whole context, so the state it changes is the token's depth
// (L), the token list and the counters, exactly as Session::step leaves them for a one-token
// step.
#include <algorithm>
#include <array>

#include "base/check.h"
#include "runtime/session.h"

namespace lazyllm {

bool Session::batchable() const {
    if (n_past_ == 0 || n_past_ >= kv_.n_ctx() || !model_->quantized_decode()) return false;
    if (repair_pending()) return false;  // step() repairs first
    if (opts_.policy == prune::Policy::kFull) return true;
    // Another policy's next one-token step is batchable when it is exactly the full step: no
    // boundary planned, nothing excluded (LazyLLM whose decode steps do not select, once its
    // first decode step has revived every deferred token).
    prune::StepInfo info;
    info.n_new = 1;
    info.n_total = n_past_ + 1;
    info.prune_step = info.n_total >= opts_.schedule.min_context;
    info.has_deferred = policy_->revives() && has_deferred();
    if (policy_->two_pass(info)) return false;
    if (policy_->excludes_at_layer0(info) &&
        std::any_of(excluded_.begin(), excluded_.begin() + n_past_, [](uint8_t e) { return e != 0; })) {
        return false;
    }
    std::vector<prune::Boundary> plan;
    policy_->plan(info, plan);
    return plan.empty();
}

int64_t Session::max_batch() const { return model_->quant_max_rows(); }

Status Session::step_batch(std::span<Session* const> sessions, std::span<const int32_t> tokens,
                           float* logits) {
    const int64_t n = static_cast<int64_t>(sessions.size());
    if (n == 0 || tokens.size() != sessions.size()) {
        return make_error(ErrorCode::kInvalidArgument, "step_batch: {} sessions and {} tokens",
                          sessions.size(), tokens.size());
    }
    const LlamaModel& model = *sessions[0]->model_;
    if (n > model.quant_max_rows()) {
        return make_error(ErrorCode::kInvalidArgument, "step_batch: {} sessions, at most {}", n,
                          model.quant_max_rows());
    }
    for (Session* s : sessions) {
        if (s->model_ != &model || !s->batchable()) {
            return make_error(ErrorCode::kInvalidArgument,
                              "step_batch: a session's next step is not a full decode step of "
                              "this model with room for a token");
        }
    }
    const ModelConfig& c = model.config();
    const int L = c.n_layer;
    Session& s0 = *sessions[0];
    s0.h_.resize(static_cast<size_t>(n * c.n_embd));
    LAZYLLM_TRY(model.embed(tokens.data(), n, s0.h_.data(), nullptr));
    // n <= quant_max_rows() <= kQuantMaxRowsWide: fixed arrays, no allocation per step.
    static_assert(kQuantMaxRows <= kQuantMaxRowsWide && kQuantMaxRowsAmx <= kQuantMaxRowsWide);
    std::array<int32_t, kQuantMaxRowsWide> pos{};
    std::array<KvCache*, kQuantMaxRowsWide> kvs{};
    for (int64_t i = 0; i < n; ++i) {
        pos[i] = static_cast<int32_t>(sessions[i]->n_past_);
        kvs[i] = &sessions[i]->kv_;
    }
    model.forward_decode_batch(s0.h_.data(), pos.data(), kvs.data(), n, logits, s0.scratch_);
    for (int64_t i = 0; i < n; ++i) {
        Session& s = *sessions[i];
        const int64_t p = s.n_past_;
        s.tokens_.push_back(tokens[i]);
        s.depth_[p] = static_cast<int16_t>(L);
        if (!s.computed_.empty()) {
            std::fill_n(s.computed_.begin() + p * L, L, uint8_t{1});
        }
        s.n_past_ = p + 1;
        ++s.n_steps_;
        s.total_token_layers_ += L;
    }
    return {};
}

}  // namespace lazyllm
