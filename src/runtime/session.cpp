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
// at most once (gemfilter alone recomputes by definition: it re-runs the kept tokens; and
// Schedule::repair runs a step's tokens again from its first boundary, in the next step, or in
// the same one when Schedule::verify_margin finds a near tie).
#include "runtime/session.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "base/timer.h"
#include "lazyllm/sampling.h"
#include "prune/select.h"

namespace lazyllm {

namespace {

// Every boundary's score must sum at least one global layer of a sliding-window model
// (LlamaModel::first_scored_layer): its stage's last score_layers layers.
Status check_scored_layers(const LlamaModel& model, const std::vector<int>& boundaries,
                           int score_layers, std::string_view what) {
    const ModelConfig& c = model.config();
    if (c.sliding_window <= 0) return {};
    for (size_t i = 0; i < boundaries.size(); ++i) {
        const int b = boundaries[i];
        const int start = i == 0 ? 0 : boundaries[i - 1];
        const int lo = std::max(start, b - score_layers);
        if (model.first_scored_layer(lo, b) >= 0) continue;
        std::vector<int> global;
        for (int il = 0; il < c.n_layer; ++il) {
            if (!c.is_swa(il)) global.push_back(il);
        }
        return make_error(ErrorCode::kInvalidArgument,
                          "{}boundary layer {} would score on layers {}..{}, all sliding-window "
                          "layers of this {} model; put each boundary after a global layer ({}) "
                          "or raise score_layers",
                          what, b, lo, b - 1, c.arch_name, fmt::join(global, ", "));
    }
    return {};
}

}  // namespace

Result<Session> Session::create(const LlamaModel& model, const SessionOptions& opts,
                                Session* donor) {
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
            return make_error(ErrorCode::kInvalidArgument, "policy '{}' needs a schedule with {}",
                              prune::policy_name(opts.policy),
                              sch.boundaries.empty() ? "at least one boundary layer"
                                                     : "as many keep fractions as boundary layers");
        }
        LAZYLLM_TRY(prune::validate_schedule(sch, c.n_layer));
        LAZYLLM_TRY(check_scored_layers(model, sch.boundaries, sch.score_layers, ""));
        for (size_t t = 0; t < sch.tiers.size(); ++t) {
            LAZYLLM_TRY(check_scored_layers(model, sch.tiers[t].boundaries, sch.score_layers,
                                            fmt::format("tiers[{}]: ", t)));
        }
        if (opts.policy == prune::Policy::kLazy && sch.revive_weight != 1.0f && !sch.prune_decode) {
            return make_error(ErrorCode::kInvalidArgument,
                              "revive_weight {} needs pruning in decode steps (--lazy-decode on): "
                              "with it off decode steps do not select",
                              sch.revive_weight);
        }
        if (opts.policy == prune::Policy::kLazy && sch.revive_max > 0 && !sch.prune_decode) {
            return make_error(ErrorCode::kInvalidArgument,
                              "revive_max {} needs pruning in decode steps (--lazy-decode on): "
                              "with it off a decode step revives every deferred token (all) or "
                              "none (0)",
                              sch.revive_max);
        }
    }
    Session s;
    s.model_ = &model;
    s.opts_ = opts;
    s.opts_.n_ctx = n_ctx;
    s.policy_ = prune::make_policy(opts.policy, sch, opts.seed);
    if (donor != nullptr) {
        LAZYLLM_CHECK_MSG(donor->model_ == &model, "a session's buffers go to one of its model");
        s.take_buffers(*donor);
    }
    const KvCache& kv = s.kv_;
    if (kv.n_layer() != c.n_layer || kv.n_ctx() != n_ctx || kv.n_head_kv() != c.n_head_kv ||
        kv.head_dim() != c.head_dim || kv.type() != model.kv_type()) {
        s.kv_ = KvCache();  // the donor's, of another size, freed first
        s.kv_ = KvCache(c.n_layer, n_ctx, c.n_head_kv, c.head_dim, model.kv_type());
    }
    s.depth_.assign(static_cast<size_t>(n_ctx), 0);
    s.recomputed_.assign(static_cast<size_t>(n_ctx), 0);
    s.excluded_.assign(static_cast<size_t>(n_ctx), 0);
    // Schedule::repair brings a step's cut tokens to the last layer by running the step again,
    // never from their Aux slots: no slots then. The slots are left uninitialized, so only the
    // pages of parked tokens become resident (a slot is read only after its token was cut).
    if (opts.policy == prune::Policy::kLazy && !sch.repair) {
        s.aux_.resize(static_cast<size_t>(n_ctx) * c.n_embd);
        s.aux_q_.resize(static_cast<size_t>(n_ctx) * c.n_embd_q());
        if (opts.check_invariants) s.aux_valid_.assign(static_cast<size_t>(n_ctx), 0);
    } else if (model.lean_memory()) {
        s.free_aux_slots();  // a donor's, not needed here (else kept for a later lazy session)
    }
    if (opts.check_invariants) s.computed_.assign(static_cast<size_t>(n_ctx) * c.n_layer, 0);
    s.tokens_.reserve(static_cast<size_t>(n_ctx));
    return s;
}

void Session::take_buffers(Session& donor) {
    kv_ = std::move(donor.kv_);
    scratch_ = std::move(donor.scratch_);
    aux_ = std::move(donor.aux_);
    aux_q_ = std::move(donor.aux_q_);
    h_ = std::move(donor.h_);
    h_next_ = std::move(donor.h_next_);
    q_next_ = std::move(donor.q_next_);
    // h_ holds the next prompt's rows, h_next_ those past a cut: the larger buffer to h_ (an
    // odd number of cuts left it in h_next_).
    if (h_.capacity() < h_next_.capacity()) h_.swap(h_next_);
    aux_.clear();  // sizes from create; capacities (and resident pages) kept
    aux_q_.clear();
    h_.clear();
    h_next_.clear();
    q_next_.clear();
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

void Session::check_aux_slots(int64_t n_total) const {
    const int L = model_->config().n_layer;
    for (int64_t t = 0; t < n_total; ++t) {
        const bool mid = depth_[t] > 0 && depth_[t] < L && !excluded_[t];
        if (!mid) continue;
        if (opts_.schedule.repair) {
            LAZYLLM_CHECK_MSG(t >= repair_begin_ && t < repair_end_,
                              "a token between 0 and L layers is not in the pending repair");
        } else {
            LAZYLLM_CHECK_MSG(!aux_valid_.empty() && aux_valid_[t],
                              "a token between 0 and L layers has no Aux slot");
        }
    }
}

Result<StepStats> Session::step(std::span<const int32_t> tokens, float* logits, StepTokens kind) {
    Timer timer;
    const int L = model_->config().n_layer;
    const int64_t E = model_->config().n_embd;
    Profile* prof = opts_.profile ? &profile_ : nullptr;
    StepStats st;
    if (repair_pending()) repair(st, prof, opts_.repair_logits ? repair_logits_out() : nullptr);
    st.earlier_repair_token_layers = st.token_layers;
    LAZYLLM_ASSIGN_OR_RETURN(const prune::StepInfo info, begin_step(tokens, prof));
    StepCtx sc{info, st, prof, kind == StepTokens::kPrompt};
    st.n_new = info.n_new;
    st.rows_per_layer.assign(static_cast<size_t>(L), 0);
    st.tail_rows_per_layer.assign(static_cast<size_t>(L), 0);

    initial_sets(info);
    if (policy_->two_pass(info)) LAZYLLM_TRY(gemfilter_first_pass(sc));
    plan_.clear();
    policy_->plan(info, plan_);
    int start = 0;
    for (size_t s = 0; s <= plan_.size(); ++s) {
        const prune::Boundary* bd = s < plan_.size() ? &plan_[s] : nullptr;
        const int end = bd != nullptr ? bd->layer : L;
        if (opts_.check_invariants) check_invariants(start, S_, live_, info.n_total);
        const bool score = bd != nullptr && bd->mode == prune::BoundaryMode::kSelect;
        if (score) scores_.resize(S_.size());
        run_stage(sc, start, end, score ? scores_.data() : nullptr, bd);
        start = end;
    }

    LAZYLLM_CHECK(!live_.empty() && live_.back() == info.n_total - 1);
    model_->logits(h_.data() + (live_.size() - 1) * E, info.n_new, sc.prompt, logits, scratch_,
                   prof);
    if (opts_.check_invariants) check_aux_slots(info.n_total);
    if (repair_pending()) {
        // Nothing to repair only when the step cut nothing: neither did one of its own rows stop
        // short, nor did its rows attend over fewer keys than the whole context (a short turn
        // whose rows are all kept, inside keep_recent, while older tokens were cut as keys).
        // The sets are nested within a step, so the last stage's is the smallest.
        const bool deferred =
            std::any_of(depth_.begin() + repair_begin_, depth_.begin() + repair_end_,
                        [L](int16_t d) { return d < L; });
        const bool cut_keys = static_cast<int64_t>(S_.size()) < info.n_total;
        if (!deferred && !cut_keys) repair_end_ = repair_begin_;
    }
    const int64_t V = model_->config().n_vocab;
    if (repair_pending() && opts_.schedule.verify_margin > 0.0f &&
        top_two_gap({logits, static_cast<size_t>(V)}) < opts_.schedule.verify_margin) {
        repair(st, prof, logits);  // a near tie: the next token from full's logits
        if (opts_.repair_logits) repaired_logits_.assign(logits, logits + V);
        st.verified = true;
    }
    n_past_ = info.n_total;
    if (kind == StepTokens::kPrompt)
        first_revived_since_prompt_ = std::numeric_limits<int64_t>::max();
    ++n_steps_;
    total_token_layers_ += st.token_layers;
    st.ms = timer.elapsed_ms();
    return st;
}

Result<prune::StepInfo> Session::begin_step(std::span<const int32_t> tokens, Profile* prof) {
    const int64_t m = static_cast<int64_t>(tokens.size());
    if (m == 0) return make_error(ErrorCode::kInvalidArgument, "step with no tokens");
    if (n_past_ + m > kv_.n_ctx()) {
        return make_error(ErrorCode::kOutOfRange,
                          "{} tokens after {} already in context exceed the context size {}", m,
                          n_past_, kv_.n_ctx());
    }
    prune::StepInfo info;
    info.prefill = n_past_ == 0;
    info.n_new = m;
    info.n_total = n_past_ + m;
    // Schedule::min_context: a step over a shorter context runs as full (no cut, no drop).
    info.prune_step = info.n_total >= opts_.schedule.min_context;
    // Only a policy that revives plans by it (an O(n_past) scan: not on every policy's decode step).
    info.has_deferred = policy_->revives() && has_deferred();
    h_.resize(static_cast<size_t>(m * model_->config().n_embd));
    LAZYLLM_TRY(model_->embed(tokens.data(), m, h_.data(), prof));
    if (info.prefill) n_prompt_ = m;
    for (int64_t i = 0; i < m; ++i) {
        tokens_.push_back(tokens[i]);
        depth_[n_past_ + i] = 0;
    }
    return info;
}

void Session::initial_sets(const prune::StepInfo& info) {
    const int64_t E = model_->config().n_embd;
    policy_->exclude_before(info, excluded_);
    const bool exclude = policy_->excludes_at_layer0(info);
    S_.clear();
    live_.clear();
    for (int32_t p = 0; p < info.n_total; ++p) {
        if (exclude && excluded_[p]) continue;
        S_.push_back(p);
    }
    // Rows of h_ are the new tokens; keep those still in S_ (random drops some), compacted in
    // place (row r <= i; no copy at all when none is dropped).
    int64_t r = 0;
    for (int64_t i = 0; i < info.n_new; ++i) {
        const auto p = static_cast<int32_t>(n_past_ + i);
        if (exclude && excluded_[p]) continue;
        live_.push_back(p);
        if (r != i) {
            std::memcpy(h_.data() + r * E, h_.data() + i * E,
                        static_cast<size_t>(E) * sizeof(float));
        }
        ++r;
    }
    h_.resize(static_cast<size_t>(r * E));
}

// GemFilter (two passes): score at the first boundary, then run the whole model again on the
// kept tokens only, at their original positions.
Status Session::gemfilter_first_pass(StepCtx& sc) {
    const prune::Schedule& sch = opts_.schedule;
    const int64_t n_total = sc.info.n_total;
    scores_.resize(S_.size());
    run_stage(sc, 0, sch.boundaries.front(), scores_.data(), nullptr);
    prune::select_kept(sch, S_, scores_, sch.keep.front(), n_total, cut_scratch_, kept_);
    std::fill_n(excluded_.begin(), n_total, uint8_t{1});
    std::vector<int32_t> kept_ids;
    kept_ids.reserve(kept_.size());
    for (int32_t t : kept_) {
        excluded_[t] = 0;
        kept_ids.push_back(tokens_[t]);
        depth_[t] = 0;
    }
    h_.resize(kept_.size() * static_cast<size_t>(model_->config().n_embd));
    LAZYLLM_TRY(model_->embed(kept_ids.data(), static_cast<int64_t>(kept_.size()), h_.data(),
                              sc.prof));
    S_ = kept_;
    live_ = kept_;
    return {};
}

void Session::run_stage(StepCtx& sc, int start, int end, float* scores,
                        const prune::Boundary* bd) {
    const int L = model_->config().n_layer;
    StepStats& st = sc.st;
    // Every live row stores its K/V at layers [start, end), cut or not.
    for (int32_t t : live_) {
        if (!computed_.empty()) {
            for (int l = start; l < end; ++l) {
                uint8_t& done = computed_[static_cast<size_t>(t) * L + l];
                LAZYLLM_CHECK_MSG(opts_.policy == prune::Policy::kGemFilter || done == 0,
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
    const bool contiguous = static_cast<int64_t>(S_.size()) == sc.info.n_total;
    LayerRun run;
    run.h = h_.data();
    run.pos = live_.data();
    run.n_rows = n_live;
    run.key_pos = contiguous ? nullptr : S_.data();
    run.n_keys = static_cast<int64_t>(S_.size());
    run.il_begin = start;
    run.il_end = end;
    run.scores = scores;
    run.score_layers = opts_.schedule.score_layers;
    run.last_row_out = end == L;  // the step's only output: the last row's logits
    run.step_rows = sc.info.n_new;
    run.prompt = sc.prompt;
    if (bd != nullptr) {
        run.cut = [this, &sc, bd, end](const float* qkv, int64_t qkv_stride) {
            return cross_boundary(sc, *bd, end, qkv, qkv_stride);
        };
    }
    model_->forward_layers(run, kv_, scratch_, sc.prof);
    // Rows past the boundary (after a cut), or the last row alone (the last layer).
    st.tail_rows_per_layer[end - 1] +=
        bd != nullptr ? static_cast<int32_t>(live_.size()) : (end == L ? 1 : n_live);
}

void Session::cut(StepCtx& sc, const prune::Boundary& bd, int layer) {
    Timer timer;
    const prune::Schedule& sch = opts_.schedule;
    switch (bd.mode) {
        case prune::BoundaryMode::kSelect: {
            // revive_weight and revive_max shape one-token decode steps; a step of several new
            // tokens (a new turn over a cached conversation) selects and revives as the paper.
            const bool decode = sc.info.n_new == 1;
            const prune::DeferredWeight deferred{live_, depth_, layer, sch.revive_weight};
            prune::select_kept(sch, S_, scores_, bd.keep, sc.info.n_total, cut_scratch_, kept_,
                               decode ? &deferred : nullptr);
            if (sch.revive_max >= 0 && decode) {
                prune::bound_revivals(S_, scores_, live_, depth_, layer, sch.revive_max,
                                      cut_scratch_.protect, cut_scratch_, kept_);
            }
            break;
        }
        case prune::BoundaryMode::kExclude:
            kept_.clear();
            for (int32_t t : S_) {
                if (!excluded_[t]) kept_.push_back(t);
            }
            break;
        case prune::BoundaryMode::kNone:
            kept_ = S_;
            if (sch.revive_max == 0 && sc.info.n_new == 1) {
                // Nothing revives: a token that stopped at this layer stays in its Aux slot, and
                // the layers from here on see the set an earlier step left (live_ is sorted).
                std::erase_if(kept_, [&](int32_t t) {
                    return depth_[t] == layer && !std::binary_search(live_.begin(), live_.end(), t);
                });
            }
            break;
    }
    if (sc.prof) sc.prof->add(OpKind::kPrune, timer.elapsed_ns());
    if (!policy_->cut_is_final(sc.info)) return;
    size_t k = 0;
    for (int32_t t : S_) {
        if (k < kept_.size() && kept_[k] == t) {
            ++k;
        } else {
            excluded_[t] = 1;
        }
    }
}

void Session::save_for_repair(const StepCtx& sc, int layer) {
    // Every earlier token reached the last layer (the previous step's repair, or a full step),
    // so the rows entering the first boundary's layer are this step's new tokens.
    const int64_t E = model_->config().n_embd;
    const auto n = static_cast<int64_t>(live_.size());
    LAZYLLM_CHECK_MSG(n == sc.info.n_new && live_.front() == n_past_,
                      "repair: rows other than the step's own at its first boundary");
    repair_h_.assign(h_.data(), h_.data() + n * E);
    repair_begin_ = n_past_;
    repair_end_ = n_past_ + n;
    repair_layer_ = layer - 1;
    repair_step_rows_ = sc.info.n_new;
    repair_prompt_ = sc.prompt;
}

// The repaired step's rows run layers [repair_layer_, L) again from the saved input, keys the
// whole prefix: the calls that step's full run makes there (same rows, step size and weights),
// so their K/V become full's; the deferred ones reach the last layer without their Aux slots.
float* Session::repair_logits_out() {
    repaired_logits_.resize(static_cast<size_t>(model_->config().n_vocab));
    return repaired_logits_.data();
}

void Session::repair(StepStats& st, Profile* prof, float* logits) {
    const int L = model_->config().n_layer;
    const int64_t E = model_->config().n_embd;
    const int64_t n = repair_end_ - repair_begin_;
    live_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) live_[i] = static_cast<int32_t>(repair_begin_ + i);
    h_.resize(static_cast<size_t>(n * E));
    std::memcpy(h_.data(), repair_h_.data(), static_cast<size_t>(n * E) * sizeof(float));
    LayerRun run;
    run.h = h_.data();
    run.pos = live_.data();
    run.n_rows = n;
    run.n_keys = repair_end_;  // key_pos nullptr: the prefix [0, repair_end_)
    run.il_begin = repair_layer_;
    run.il_end = L;
    run.last_row_out = true;
    run.step_rows = repair_step_rows_;
    run.prompt = repair_prompt_;
    model_->forward_layers(run, kv_, scratch_, prof);
    if (logits != nullptr) {
        model_->logits(h_.data() + (n - 1) * E, repair_step_rows_, repair_prompt_, logits, scratch_,
                       prof);
    }
    // Every row reached the first boundary, so it held layer repair_layer_'s K/V: the layers
    // from there to its depth ran again, the rest for the first time.
    for (int32_t t : live_) {
        const int again = depth_[t] - repair_layer_;
        if (depth_[t] < L) ++st.revived;
        if (t < n_prompt_) prompt_token_layers_ += L - repair_layer_;
        recomputed_[t] = static_cast<int16_t>(recomputed_[t] + again);
        st.repaired += again;
        depth_[t] = static_cast<int16_t>(L);
        if (!aux_valid_.empty()) aux_valid_[t] = 0;
        if (!computed_.empty()) std::fill_n(computed_.begin() + t * L, L, uint8_t{1});
    }
    st.token_layers += n * (L - repair_layer_);
    // Sized in a step that verifies itself (its rows per layer count the repair's); a step that
    // repairs the previous one sizes them after.
    if (!st.rows_per_layer.empty()) {
        for (int il = repair_layer_; il < L; ++il) {
            st.rows_per_layer[il] += static_cast<int32_t>(n);
            st.tail_rows_per_layer[il] += il == L - 1 ? 1 : static_cast<int32_t>(n);
        }
    }
    repair_end_ = repair_begin_;
}

void Session::take_row(const float* h, const float* q) {
    const int64_t E = model_->config().n_embd, Q = model_->config().n_embd_q();
    const size_t n_rows = next_live_.size();
    h_next_.resize((n_rows + 1) * static_cast<size_t>(E));
    q_next_.resize((n_rows + 1) * static_cast<size_t>(Q));
    std::memcpy(h_next_.data() + n_rows * E, h, static_cast<size_t>(E) * sizeof(float));
    std::memcpy(q_next_.data() + n_rows * Q, q, static_cast<size_t>(Q) * sizeof(float));
}

void Session::park(size_t li, const float* qkv, int64_t qkv_stride) {
    if (aux_.empty()) return;  // a policy that never revives, or Schedule::repair
    const int64_t E = model_->config().n_embd, Q = model_->config().n_embd_q();
    const auto t = static_cast<size_t>(live_[li]);
    std::memcpy(aux_.data() + t * E, h_.data() + li * E, static_cast<size_t>(E) * sizeof(float));
    std::memcpy(aux_q_.data() + t * Q, qkv + static_cast<int64_t>(li) * qkv_stride,
                static_cast<size_t>(Q) * sizeof(float));
    if (!aux_valid_.empty()) aux_valid_[t] = 1;
}

// Inside layer - 1: its K/V are stored for every live row (qkv: their q|k|v there,
// [|live|, qkv_stride]) and scores_ holds the last token's scores over S_. New live set: tokens
// of the kept S at depth `layer` (live ones carry on, others are revived from Aux); live tokens
// cut here park their state in Aux (lazy). Returns the rows that finish layer - 1: h_next_ and
// q_next_, swapped into h_ and live_ with S_ = kept.
TailRows Session::cross_boundary(StepCtx& sc, const prune::Boundary& bd, int layer,
                                 const float* qkv, int64_t qkv_stride) {
    const int64_t E = model_->config().n_embd, Q = model_->config().n_embd_q();
    if (opts_.schedule.repair && opts_.policy == prune::Policy::kLazy &&
        bd.mode == prune::BoundaryMode::kSelect && layer == plan_.front().layer) {
        save_for_repair(sc, layer);
    }
    cut(sc, bd, layer);
    next_live_.clear();
    h_next_.resize(0);
    q_next_.resize(0);
    const int64_t revived_before = sc.st.revived;
    size_t li = 0;
    for (int32_t t : kept_) {
        while (li < live_.size() && live_[li] < t) park(li++, qkv, qkv_stride);
        if (li < live_.size() && live_[li] == t) {
            take_row(h_.data() + li * E, qkv + static_cast<int64_t>(li) * qkv_stride);
            next_live_.push_back(t);
            ++li;
        } else if (depth_[t] == layer) {
            LAZYLLM_CHECK_MSG(policy_->revives() && !aux_.empty(),
                              "revival outside the lazy policy, or under repair");
            if (!aux_valid_.empty()) {
                LAZYLLM_CHECK_MSG(aux_valid_[t], "revived token has no Aux slot");
                aux_valid_[t] = 0;
            }
            take_row(aux_.data() + static_cast<size_t>(t) * E,
                     aux_q_.data() + static_cast<size_t>(t) * Q);
            next_live_.push_back(t);
            ++sc.st.revived;
            if (!sc.prompt)
                first_revived_since_prompt_ = std::min<int64_t>(first_revived_since_prompt_, t);
        }
    }
    while (li < live_.size()) park(li++, qkv, qkv_stride);
    if (opts_.on_boundary) {
        BoundaryTrace tr;
        tr.step = n_steps_;
        tr.layer = layer;
        tr.S = S_;
        if (bd.mode == prune::BoundaryMode::kSelect) {
            tr.scores.assign(scores_.begin(), scores_.begin() + static_cast<int64_t>(S_.size()));
        }
        tr.kept = kept_;
        tr.live = next_live_;
        tr.revived = sc.st.revived - revived_before;
        opts_.on_boundary(tr);
    }
    // The buffers left behind stay as they are until the next boundary: the forward still
    // reads them for the rest of this layer (its keys are S_prev_).
    S_prev_.swap(S_);
    S_.swap(kept_);
    live_.swap(next_live_);
    h_.swap(h_next_);
    // The rows before the cut are dead now; in a prompt step their buffer goes back to the
    // system where the model releases its row buffers too (LlamaModel::lean_memory), so
    // that the Aux slots just filled take its place in memory rather than adding to the peak.
    if (sc.prompt && model_->lean_memory()) release_from(h_next_, 0);
    return TailRows{h_.data(), q_next_.data(), Q, live_.data(),
                    static_cast<int64_t>(live_.size())};
}

// Truncation (Conversation: a request that diverges from the cached tokens). Tokens below n
// keep their depth, Aux slot and KV; a later step appends at n and its keys are the positions
// below n_total only, so the stale rows past n are never read before they are rewritten.
void Session::truncate(int64_t n) {
    LAZYLLM_CHECK(n >= 0 && n <= n_past_);
    const int L = model_->config().n_layer;
    for (int64_t t = n; t < n_past_; ++t) {
        // A token's computed pairs are layers [0, depth), and those repair ran again.
        if (t < n_prompt_) prompt_token_layers_ -= depth_[t] + recomputed_[t];
        depth_[t] = 0;
        recomputed_[t] = 0;
        excluded_[t] = 0;
        if (!aux_valid_.empty()) aux_valid_[t] = 0;
        if (!computed_.empty()) {
            std::fill_n(computed_.begin() + t * L, L, uint8_t{0});
        }
    }
    repair_end_ = std::max(repair_begin_, std::min(repair_end_, n));
    tokens_.resize(static_cast<size_t>(n));
    n_prompt_ = std::min(n_prompt_, n);
    if (n == 0) prompt_token_layers_ = 0;
    if (n <= first_revived_since_prompt_)
        first_revived_since_prompt_ = std::numeric_limits<int64_t>::max();
    n_past_ = n;
}

}  // namespace lazyllm
