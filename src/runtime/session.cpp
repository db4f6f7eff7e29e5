// The step routine of design.md 1.3. One step, prefill or decode:
//   S = context minus tokens a policy excluded for good; live = new tokens
//   for each stage [start, end):
//     run layers [start, end) on the live rows, keys = KV[l][S]; depth of live rows = end
//     if a boundary follows, inside layer end-1, once its K/V are stored and the last token's
//       scores are known: cut S by them (or keep it, or apply a fixed exclusion); live tokens
//       cut here park their state (layer end-1's input and query) in their Aux slot and skip
//       the rest of the layer; tokens of the kept S at depth `end` that are not live are
//       revived from their Aux slot and finish layer end-1 with the kept live rows
// Invariant at each layer l: {t in S : d_t <= l} == live. Each (token, layer) pair is computed
// at most once (gemfilter alone recomputes by definition: it re-runs the kept tokens).
#include "runtime/session.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "base/check.h"
#include "base/timer.h"
#include "prune/select.h"

namespace lazyllm {

namespace {

enum class BoundaryMode {
    kSelect,   // score and keep the top fraction (lazy; static and gemfilter at prefill)
    kNone,     // keep S; only revive (lazy with --lazy-decode off)
    kExclude,  // drop the tokens excluded at prefill (static in decode)
};

struct Boundary {
    int layer;
    BoundaryMode mode;
    float keep;
};

}  // namespace

Result<Session> Session::create(const LlamaModel& model, const SessionOptions& opts) {
    const ModelConfig& c = model.config();
    const int64_t n_ctx = opts.n_ctx > 0 ? opts.n_ctx : c.n_ctx_train;
    if (n_ctx > c.n_ctx_train) {
        return make_error(ErrorCode::kInvalidArgument,
                          "context size {} exceeds the model's training context {}", n_ctx,
                          c.n_ctx_train);
    }
    const prune::Schedule& sch = opts.schedule;
    if (opts.policy != prune::Policy::kFull) {
        if (sch.boundaries.empty() || sch.boundaries.size() != sch.keep.size()) {
            return make_error(ErrorCode::kInvalidArgument,
                              "policy '{}' needs a schedule with as many keep fractions as boundary layers",
                              prune::policy_name(opts.policy));
        }
        LAZYLLM_TRY(prune::validate_schedule(sch, c.n_layer));
        if (opts.policy == prune::Policy::kLazy && sch.revive_max >= 0 && !sch.prune_decode) {
            return make_error(ErrorCode::kInvalidArgument,
                              "revive_max {} needs pruning in decode steps (--lazy-decode on): "
                              "with it off every deferred token revives in the first decode step",
                              sch.revive_max);
        }
    }
    Session s;
    s.model_ = &model;
    s.opts_ = opts;
    s.opts_.n_ctx = n_ctx;
    s.kv_ = KvCache(c.n_layer, n_ctx, c.n_embd_kv(), kv_type_for_gemm(model.gemm_bf16()));
    s.depth_.assign(static_cast<size_t>(n_ctx), 0);
    s.excluded_.assign(static_cast<size_t>(n_ctx), 0);
    if (opts.policy == prune::Policy::kLazy) {
        s.aux_.assign(static_cast<size_t>(n_ctx) * c.n_embd, 0.0f);
        s.aux_q_.assign(static_cast<size_t>(n_ctx) * c.n_embd_q(), 0.0f);
        if (opts.check_invariants) s.aux_valid_.assign(static_cast<size_t>(n_ctx), 0);
    }
    if (opts.check_invariants) s.computed_.assign(static_cast<size_t>(n_ctx) * c.n_layer, 0);
    s.tokens_.reserve(static_cast<size_t>(n_ctx));
    return s;
}

bool Session::has_deferred() const {
    const int L = model_->config().n_layer;
    for (int64_t t = 0; t < n_past_; ++t) {
        if (depth_[t] < L && !excluded_[t]) return true;
    }
    return false;
}

double Session::prompt_fraction_computed() const {
    if (n_prompt_ == 0) return 0.0;
    return static_cast<double>(prompt_token_layers_) /
           (static_cast<double>(n_prompt_) * model_->config().n_layer);
}

std::vector<int32_t> Session::select_at_boundary(const std::vector<int32_t>& S,
                                                 std::vector<float>& scores, float keep,
                                                 int64_t n_total) {
    if (opts_.schedule.score_pool > 1) {
        prune::pool_scores(std::span<const float>(scores.data(), S.size()), S,
                           opts_.schedule.score_pool, pooled_);
        scores.swap(pooled_);
    }
    // Protected: the first keep_first positions (they count toward the kept amount) and the
    // last max(1, keep_recent) (the last token always; the window comes on top of the kept
    // amount, so the question and the answer do not displace the context they ask about).
    const int64_t n_first = std::min<int64_t>(opts_.schedule.keep_first, n_total);
    const int64_t recent_from =
        std::max(n_first, n_total - std::max<int64_t>(1, opts_.schedule.keep_recent));
    const int64_t n_recent = opts_.schedule.keep_recent > 1 ? n_total - recent_from : 0;
    const int64_t n_keep = std::min<int64_t>(
        static_cast<int64_t>(S.size()),
        prune::keep_count(keep, n_total, static_cast<int64_t>(S.size())) + n_recent);
    protect_.clear();
    for (int32_t p = 0; p < n_first; ++p) protect_.push_back(p);
    for (auto p = static_cast<int32_t>(recent_from); p < n_total; ++p) protect_.push_back(p);
    return prune::select_top(std::span<const float>(scores.data(), S.size()), S, n_keep, protect_);
}

void Session::bound_revivals(std::vector<int32_t>& kept, const std::vector<float>& scores,
                             int layer, int max) {
    // kept is a sorted subset of S_ (sorted); live_ is sorted too. Candidates in kept's order.
    cand_pos_.clear();
    cand_scores_.clear();
    size_t si = 0, li = 0;
    for (int32_t t : kept) {
        while (S_[si] < t) ++si;
        while (li < live_.size() && live_[li] < t) ++li;
        const bool live = li < live_.size() && live_[li] == t;
        if (!live && depth_[t] == layer) {
            cand_pos_.push_back(t);
            cand_scores_.push_back(scores[si]);
        }
    }
    if (static_cast<int64_t>(cand_pos_.size()) <= max) return;
    // The `max` best, in select_top's order (the selection's: ties to the lower position, NaN
    // as -inf); every other candidate leaves `kept` (cand_pos_ is a subsequence of kept, and
    // chosen_ of cand_pos_, all sorted).
    prune::select_top(cand_scores_, cand_pos_, max, {}, select_scratch_, chosen_);
    size_t ci = 0, ri = 0;
    std::erase_if(kept, [&](int32_t t) {
        if (ci == cand_pos_.size() || cand_pos_[ci] != t) return false;  // not a candidate
        ++ci;
        if (ri < chosen_.size() && chosen_[ri] == t) {
            ++ri;
            return false;
        }
        return true;
    });
}

void Session::check_invariants(int layer, const std::vector<int32_t>& S,
                               const std::vector<int32_t>& live, int64_t n_total) const {
    // The current token is in S at every layer.
    LAZYLLM_CHECK(!S.empty() && S.back() == n_total - 1);
    LAZYLLM_CHECK(!live.empty() && live.back() == n_total - 1);
    // {t in S : d_t <= layer} == live, and every live token sits exactly at depth `layer`.
    size_t li = 0;
    for (int32_t t : S) {
        if (depth_[t] <= layer) {
            LAZYLLM_CHECK_MSG(li < live.size() && live[li] == t, "token of S without KV is not live");
            LAZYLLM_CHECK(depth_[t] == layer);
            ++li;
        }
    }
    LAZYLLM_CHECK_MSG(li == live.size(), "a live token is not in S");
}

Result<StepStats> Session::step(std::span<const int32_t> tokens, float* logits) {
    Timer timer;
    const ModelConfig& c = model_->config();
    const int L = c.n_layer;
    const int64_t E = c.n_embd;
    const int64_t m = static_cast<int64_t>(tokens.size());
    if (m == 0) return make_error(ErrorCode::kInvalidArgument, "step with no tokens");
    if (n_past_ + m > kv_.n_ctx()) {
        return make_error(ErrorCode::kOutOfRange,
                          "{} tokens after {} already in context exceed the context size {}", m,
                          n_past_, kv_.n_ctx());
    }
    const bool prefill = n_past_ == 0;
    const int64_t n_total = n_past_ + m;
    const prune::Policy policy = opts_.policy;
    const prune::Schedule& sch = opts_.schedule;
    Profile* prof = opts_.profile ? &profile_ : nullptr;

    StepStats st;
    st.n_new = m;
    st.rows_per_layer.assign(static_cast<size_t>(L), 0);
    st.tail_rows_per_layer.assign(static_cast<size_t>(L), 0);

    h_.resize(static_cast<size_t>(m * E));
    LAZYLLM_TRY(model_->embed(tokens.data(), m, h_.data(), prof));
    if (prefill) n_prompt_ = m;
    for (int64_t i = 0; i < m; ++i) {
        tokens_.push_back(tokens[i]);
        depth_[n_past_ + i] = 0;
    }

    auto protected_pos = [&](int32_t p) {
        return p >= n_total - std::max(1, sch.keep_recent) || p < sch.keep_first;
    };
    // Schedule::min_context: a step over a shorter context runs as full (no cut, no drop).
    const bool prune_step = n_total >= sch.min_context;
    // The boundary at `layer`, inside layer - 1: its K/V are stored for every live row (qkv:
    // their q|k|v there, [|live|, qkv_stride]) and scores_ holds the last token's scores over
    // S_. New live set: tokens of the kept S at depth `layer` (live ones carry on, others are
    // revived from Aux); live tokens cut here park their state in Aux (lazy). Returns the rows
    // that finish layer - 1: h_next_ and q_next_, swapped into h_ and live_ with S_ = kept.
    const int64_t Q = c.n_embd_q();
    auto cross_boundary = [&](const Boundary& bd, int layer, const float* qkv,
                              int64_t qkv_stride) -> TailRows {
        std::vector<int32_t> kept;
        {
            Timer tsel;
            if (bd.mode == BoundaryMode::kSelect) {
                kept = select_at_boundary(S_, scores_, bd.keep, n_total);
                if (sch.revive_max >= 0) bound_revivals(kept, scores_, layer, sch.revive_max);
            } else if (bd.mode == BoundaryMode::kExclude) {
                for (int32_t t : S_) {
                    if (!excluded_[t]) kept.push_back(t);
                }
            } else {
                kept = S_;
            }
            if (prof) prof->add(OpKind::kPrune, tsel.elapsed_ns());
        }
        if (policy == prune::Policy::kStatic && prefill) {
            size_t k = 0;
            for (int32_t t : S_) {
                if (k < kept.size() && kept[k] == t) {
                    ++k;
                } else {
                    excluded_[t] = 1;
                }
            }
        }
        next_live_.clear();
        h_next_.resize(0);
        q_next_.resize(0);
        const int64_t revived_before = st.revived;
        const size_t row = static_cast<size_t>(E) * sizeof(float);
        const size_t q_row = static_cast<size_t>(Q) * sizeof(float);
        auto take_row = [&](const float* h, const float* q) {
            const size_t n_rows = next_live_.size();
            h_next_.resize((n_rows + 1) * static_cast<size_t>(E));
            q_next_.resize((n_rows + 1) * static_cast<size_t>(Q));
            std::memcpy(h_next_.data() + n_rows * E, h, row);
            std::memcpy(q_next_.data() + n_rows * Q, q, q_row);
        };
        auto park = [&](size_t li) {  // live row li is cut here
            if (policy != prune::Policy::kLazy) return;
            const auto t = static_cast<size_t>(live_[li]);
            std::memcpy(aux_.data() + t * E, h_.data() + li * E, row);
            std::memcpy(aux_q_.data() + t * Q, qkv + static_cast<int64_t>(li) * qkv_stride, q_row);
            if (!aux_valid_.empty()) aux_valid_[t] = 1;
        };
        size_t li = 0;
        for (int32_t t : kept) {
            while (li < live_.size() && live_[li] < t) park(li++);
            if (li < live_.size() && live_[li] == t) {
                take_row(h_.data() + li * E, qkv + static_cast<int64_t>(li) * qkv_stride);
                next_live_.push_back(t);
                ++li;
            } else if (depth_[t] == layer) {
                LAZYLLM_CHECK_MSG(policy == prune::Policy::kLazy, "revival outside lazy policy");
                if (!aux_valid_.empty()) {
                    LAZYLLM_CHECK_MSG(aux_valid_[t], "revived token has no Aux slot");
                    aux_valid_[t] = 0;
                }
                take_row(aux_.data() + static_cast<size_t>(t) * E,
                         aux_q_.data() + static_cast<size_t>(t) * Q);
                next_live_.push_back(t);
                ++st.revived;
            }
        }
        while (li < live_.size()) park(li++);
        if (opts_.on_boundary) {
            BoundaryTrace tr;
            tr.step = n_steps_;
            tr.layer = layer;
            tr.S = S_;
            if (bd.mode == BoundaryMode::kSelect) {
                tr.scores.assign(scores_.begin(), scores_.begin() + static_cast<int64_t>(S_.size()));
            }
            tr.kept = kept;
            tr.live = next_live_;
            tr.revived = st.revived - revived_before;
            opts_.on_boundary(tr);
        }
        // The buffers left behind stay as they are until the next boundary: the forward
        // still reads them for the rest of this layer (its keys are S_prev_).
        S_prev_.swap(S_);
        S_.swap(kept);
        live_.swap(next_live_);
        h_.swap(h_next_);
        return TailRows{h_.data(), q_next_.data(), Q, live_.data(),
                        static_cast<int64_t>(live_.size())};
    };

    // Runs layers [start, end) on live_, keys S_. With a boundary `bd` at `end`, the cut
    // (cross_boundary) happens inside layer end-1 and leaves S_, live_ and h_ at the next stage.
    auto run_stage = [&](int start, int end, float* scores, const Boundary* bd) {
        // Every live row stores its K/V at layers [start, end), cut or not.
        for (int32_t t : live_) {
            if (!computed_.empty()) {
                for (int l = start; l < end; ++l) {
                    uint8_t& done = computed_[static_cast<size_t>(t) * L + l];
                    LAZYLLM_CHECK_MSG(policy == prune::Policy::kGemFilter || done == 0,
                                      "a (token, layer) pair was computed twice");
                    done = 1;
                }
            }
            depth_[t] = static_cast<int16_t>(end);
            if (t < n_prompt_) prompt_token_layers_ += end - start;
        }
        const auto n_live = static_cast<int32_t>(live_.size());
        for (int l = start; l < end; ++l) st.rows_per_layer[l] += n_live;
        for (int l = start; l + 1 < end; ++l) st.tail_rows_per_layer[l] += n_live;
        st.token_layers += static_cast<int64_t>(n_live) * (end - start);
        const bool contiguous = static_cast<int64_t>(S_.size()) == n_total;
        LayerRun run;
        run.h = h_.data();
        run.pos = live_.data();
        run.n_rows = n_live;
        run.key_pos = contiguous ? nullptr : S_.data();
        run.n_keys = static_cast<int64_t>(S_.size());
        run.il_begin = start;
        run.il_end = end;
        run.scores = scores;
        run.score_layers = sch.score_layers;
        run.last_row_out = end == L;  // the step's only output: the last row's logits
        run.step_rows = m;
        if (bd != nullptr) {
            run.cut = [&, bd](const float* qkv, int64_t qkv_stride) {
                return cross_boundary(*bd, end, qkv, qkv_stride);
            };
        }
        model_->forward_layers(run, kv_, scratch_, prof);
        // Rows past the boundary (after a cut), or the last row alone (the last layer).
        st.tail_rows_per_layer[end - 1] +=
            bd != nullptr ? static_cast<int32_t>(live_.size()) : (end == L ? 1 : n_live);
    };

    // Candidate set and live rows at layer 0.
    S_.clear();
    live_.clear();
    if (prefill && prune_step && policy == prune::Policy::kRandom) {
        // Random token drop (paper's baseline): prompt tokens dropped before inference, seeded.
        const int64_t n_keep = prune::keep_count(sch.keep.front(), n_total, n_total);
        std::vector<int32_t> droppable;
        for (int32_t p = 0; p < n_total; ++p) {
            if (!protected_pos(p)) droppable.push_back(p);
        }
        const int64_t n_protected = n_total - static_cast<int64_t>(droppable.size());
        const int64_t n_drop = std::max<int64_t>(0, n_total - std::max(n_keep, n_protected));
        std::mt19937_64 rng(opts_.seed);
        for (int64_t i = 0; i < n_drop; ++i) {  // partial Fisher-Yates
            const uint64_t span = droppable.size() - static_cast<uint64_t>(i);
            const size_t j = static_cast<size_t>(i) + static_cast<size_t>(rng() % span);
            std::swap(droppable[static_cast<size_t>(i)], droppable[j]);
            excluded_[droppable[static_cast<size_t>(i)]] = 1;
        }
    }
    // Random (from its prefill on) and gemfilter (after its prefill) exclude tokens at every layer.
    const bool exclude_at_layer0 =
        policy == prune::Policy::kRandom || (policy == prune::Policy::kGemFilter && !prefill);
    for (int32_t p = 0; p < n_total; ++p) {
        if (exclude_at_layer0 && excluded_[p]) continue;
        S_.push_back(p);
    }
    {
        // Rows of h_ are the new tokens; keep those still in S_ (random drops some), compacted
        // in place (row r <= i; no copy at all when none is dropped).
        int64_t r = 0;
        for (int64_t i = 0; i < m; ++i) {
            const int32_t p = static_cast<int32_t>(n_past_ + i);
            if (exclude_at_layer0 && excluded_[p]) continue;
            live_.push_back(p);
            if (r != i) {
                std::memcpy(h_.data() + r * E, h_.data() + i * E,
                            static_cast<size_t>(E) * sizeof(float));
            }
            ++r;
        }
        h_.resize(static_cast<size_t>(r * E));
    }

    // GemFilter (two passes): score at the first boundary, then run the whole model again on
    // the kept tokens only, at their original positions.
    if (prefill && prune_step && policy == prune::Policy::kGemFilter) {
        const int b = sch.boundaries.front();
        scores_.resize(S_.size());
        run_stage(0, b, scores_.data(), nullptr);
        std::vector<int32_t> kept = select_at_boundary(S_, scores_, sch.keep.front(), n_total);
        std::vector<uint8_t> keep_mask(static_cast<size_t>(n_total), 0);
        for (int32_t t : kept) keep_mask[t] = 1;
        for (int32_t p = 0; p < n_total; ++p) excluded_[p] = keep_mask[p] ? 0 : 1;
        std::vector<int32_t> kept_ids;
        kept_ids.reserve(kept.size());
        for (int32_t t : kept) {
            kept_ids.push_back(tokens_[t]);
            depth_[t] = 0;
        }
        h_.resize(kept.size() * static_cast<size_t>(E));
        LAZYLLM_TRY(model_->embed(kept_ids.data(), static_cast<int64_t>(kept.size()), h_.data(), prof));
        S_ = kept;
        live_ = kept;
    }

    // Stage plan.
    std::vector<Boundary> bounds;
    switch (policy) {
        case prune::Policy::kFull:
        case prune::Policy::kRandom:
        case prune::Policy::kGemFilter:
            break;
        case prune::Policy::kLazy: {
            // A step of several new tokens (a prompt, or a new turn after a cached one) selects;
            // a one-token decode step only with prune_decode. Below min_context no step selects;
            // it still crosses the boundaries when an earlier step left tokens in Aux slots, so
            // they revive where they stopped.
            const bool select = prune_step && (prefill || m > 1 || sch.prune_decode);
            if (!select && !has_deferred()) break;  // exactly the full step
            for (size_t j = 0; j < sch.boundaries.size(); ++j) {
                bounds.push_back({sch.boundaries[j], select ? BoundaryMode::kSelect : BoundaryMode::kNone,
                                  sch.keep[j]});
            }
            break;
        }
        case prune::Policy::kStatic:
            // One cut at prefill from the first boundary's scores; pruned tokens never return.
            if (prefill && !prune_step) break;
            bounds.push_back({sch.boundaries.front(),
                              prefill ? BoundaryMode::kSelect : BoundaryMode::kExclude,
                              sch.keep.front()});
            break;
    }

    int start = 0;
    for (size_t s = 0; s <= bounds.size(); ++s) {
        const int end = s < bounds.size() ? bounds[s].layer : L;
        if (opts_.check_invariants) check_invariants(start, S_, live_, n_total);
        const Boundary* bd = s < bounds.size() ? &bounds[s] : nullptr;
        const bool score = bd != nullptr && bd->mode == BoundaryMode::kSelect;
        if (score) scores_.resize(S_.size());
        run_stage(start, end, score ? scores_.data() : nullptr, bd);
        start = end;
    }
    LAZYLLM_CHECK(!live_.empty() && live_.back() == n_total - 1);
    model_->logits(h_.data() + (live_.size() - 1) * E, m, logits, scratch_, prof);
    if (!aux_valid_.empty()) {
        for (int64_t t = 0; t < n_total; ++t) {
            const bool mid = depth_[t] > 0 && depth_[t] < L && !excluded_[t];
            if (mid) LAZYLLM_CHECK_MSG(aux_valid_[t], "a token between 0 and L layers has no Aux slot");
        }
    }
    n_past_ = n_total;
    ++n_steps_;
    total_token_layers_ += st.token_layers;
    st.ms = timer.elapsed_ms();
    return st;
}

// Truncation (Conversation: a request that diverges from the cached tokens). Tokens below n
// keep their depth, Aux slot and KV; a later step appends at n and its keys are the positions
// below n_total only, so the stale rows past n are never read before they are rewritten.
void Session::truncate(int64_t n) {
    LAZYLLM_CHECK(n >= 0 && n <= n_past_);
    const int L = model_->config().n_layer;
    for (int64_t t = n; t < n_past_; ++t) {
        // A token's computed pairs are layers [0, depth) (each once; gemfilter aside).
        if (t < n_prompt_) prompt_token_layers_ -= depth_[t];
        depth_[t] = 0;
        excluded_[t] = 0;
        if (!aux_valid_.empty()) aux_valid_[t] = 0;
        if (!computed_.empty()) {
            std::fill_n(computed_.begin() + t * L, L, uint8_t{0});
        }
    }
    tokens_.resize(static_cast<size_t>(n));
    n_prompt_ = std::min(n_prompt_, n);
    if (n == 0) prompt_token_layers_ = 0;
    n_past_ = n;
}

}  // namespace lazyllm
