// A generation session: KV cache, per-token depth and Aux slots, and the one step routine that
// runs prefill and decode alike (design.md 1.3). Policies: full, lazy (LazyLLM), static,
// random, gemfilter (design.md 1.5). The model knows nothing of pruning; this file decides
// which rows each stage of layers runs on.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "lazyllm/result.h"
#include "model/kv_cache.h"
#include "model/llama_model.h"
#include "model/profile.h"
#include "prune/policy.h"
#include "prune/schedule.h"
#include "prune/select.h"

namespace lazyllm {

// What happened at one stage boundary of one step (for tests, tracing and `--verbose`).
struct BoundaryTrace {
    int64_t step = 0;             // 0 = prefill
    int layer = 0;                // the boundary: layers >= `layer` see the kept set
    std::vector<int32_t> S;       // candidate set before the cut (sorted positions)
    std::vector<float> scores;    // importance of S's tokens, as selected on (empty if not scored)
    std::vector<int32_t> kept;    // S after the cut
    std::vector<int32_t> live;    // rows computed from `layer` on (kept tokens at depth `layer`)
    int64_t revived = 0;          // of which revived from Aux slots
};

struct SessionOptions {
    int64_t n_ctx = 0;  // 0: the model's training context
    prune::Policy policy = prune::Policy::kFull;
    prune::Schedule schedule;    // boundaries / keep fractions (ignored by kFull)
    uint64_t seed = 1;           // kRandom's drop pattern
    bool check_invariants = false;  // assert design.md 1.3's invariants at every stage (tests)
    bool profile = false;
    // Schedule::repair: also run the LM head on the last repaired row (Session::repaired_logits:
    // full's logits for that step's last token; tests).
    bool repair_logits = false;
    std::function<void(const BoundaryTrace&)> on_boundary;  // optional observer
};

// What a step's tokens are (Session::step).
enum class StepTokens { kGenerated, kPrompt };

// What one step did.
struct StepStats {
    int64_t n_new = 0;
    // [n_layer] live rows computed at each layer (their K/V)
    std::vector<int32_t> rows_per_layer;
    // [n_layer] rows that also ran the layer's attention, Wo and FFN: fewer at the last layer
    // (the last row only, LayerRun::last_row_out) and at the layer before a boundary (the rows
    // kept there, plus revived rows finishing it; LayerRun::cut)
    std::vector<int32_t> tail_rows_per_layer;
    int64_t token_layers = 0;             // (token, layer) pairs computed in this step
    // Of those, the pairs of the previous step's repair, which this step ran first (that step's
    // turn ended on its first token, before the step that would have run it).
    int64_t earlier_repair_token_layers = 0;
    int64_t revived = 0;                  // tokens revived from Aux slots (or repaired)
    int64_t repaired = 0;                 // (token, layer) pairs Schedule::repair ran again
                                          // (the layers it ran for the first time not counted)
    // Schedule::verify_margin found a near tie and the step repaired itself: its logits are the
    // repaired row's (full's), its ms and token_layers include the repair.
    bool verified = false;
    double ms = 0.0;
};

class Session {
public:
    // donor: a finished session of the same model whose buffers this one takes instead of
    // allocating its own (the KV cache where its shape matches, the forward's scratch, the Aux
    // slots where large enough, the row buffers), as llama.cpp keeps a context's buffers from
    // one prompt to the next: their pages are resident already, and a session reads nothing
    // it has not written. The donor keeps the rest and should be destroyed.
    static Result<Session> create(const LlamaModel& model, const SessionOptions& opts,
                                  Session* donor = nullptr);
    // Frees the Aux slots, which only LazyLLM's policy uses, of a session kept as a donor: the
    // memory a session of another policy would not take.
    void free_aux_slots() {
        ScratchVector<float>().swap(aux_);
        ScratchVector<float>().swap(aux_q_);
    }

    // Appends `tokens` at the next positions and runs one step; `logits` ([n_vocab]) receives
    // the last token's logits (full's when Schedule::verify_margin settled a near tie:
    // StepStats::verified). `tokens` is kPrompt text or kGenerated tokens: a prompt runs on
    // the prefill weights however short (LayerRun::prompt). Errors: empty input, context
    // overflow, bad ids.
    Result<StepStats> step(std::span<const int32_t> tokens, float* logits,
                           StepTokens kind = StepTokens::kGenerated);
    // Forgets the tokens at positions >= n (0 <= n <= n_past): their depths, Aux slots and
    // exclusions; their KV rows become stale and are overwritten by later steps. The tokens
    // kept are untouched, so design.md 1.3's invariants still hold (Conversation's prefix reuse).
    void truncate(int64_t n);
    // Continuous batching (session_batch.cpp): one decode step of several sessions of the same
    // model in one forward (LlamaModel::forward_decode_batch). Session i appends tokens[i];
    // logits ([n, n_vocab]) receive each one's next-token logits. Each must be batchable().
    static Status step_batch(std::span<Session* const> sessions, std::span<const int32_t> tokens,
                             float* logits);
    // The most sessions one step_batch takes (the model's quantized decode rows per call).
    int64_t max_batch() const;
    // Past its first step, room for one more token, quantized decode weights, and a next
    // one-token step that is exactly the full step (the full policy; LazyLLM when decode steps
    // do not select and no token waits in an Aux slot).
    bool batchable() const;

    int64_t n_past() const { return n_past_; }
    int64_t n_ctx() const { return kv_.n_ctx(); }
    int64_t n_prompt() const { return n_prompt_; }  // tokens of the first step
    const std::vector<int32_t>& tokens() const { return tokens_; }
    // Depth d_t: number of layers holding token t's KV (design.md 1.3).
    const std::vector<int16_t>& depth() const { return depth_; }
    // (token, layer) pairs of prompt tokens computed so far / (n_prompt * n_layer): the paper's
    // "% of prompt token computed" (Table 2), in [0, 1]; with Schedule::repair, which computes
    // pairs a second time, each time counts and the share can pass 1.
    double prompt_fraction_computed() const;
    int64_t total_token_layers() const { return total_token_layers_; }
    // The lowest position a step after the last prompt step (StepTokens::kPrompt) revived from
    // its Aux slot: tokens below it hold the state that prompt step left (INT64_MAX: none).
    int64_t first_revived_since_prompt() const { return first_revived_since_prompt_; }
    const Profile& profile() const { return profile_; }
    const KvCache& kv() const { return kv_; }
    const SessionOptions& options() const { return opts_; }
    // Schedule::repair: whether the next step first repairs the previous one, and (with
    // SessionOptions::repair_logits) the last repaired row's logits ([n_vocab]; empty before).
    bool repair_pending() const { return repair_end_ > repair_begin_; }
    const std::vector<float>& repaired_logits() const { return repaired_logits_; }
    // Bytes of the Aux slots: [n_ctx, n_embd + n_embd_q] floats for LazyLLM that revives, none
    // under Schedule::repair (it never reads them) or another policy.
    size_t aux_bytes() const { return (aux_.size() + aux_q_.size()) * sizeof(float); }

    Session(Session&&) = default;
    Session& operator=(Session&&) = default;

private:
    // The state one step's stages share.
    struct StepCtx {
        prune::StepInfo info;
        StepStats& st;
        Profile* prof;
        bool prompt = false;  // StepTokens::kPrompt
    };

    Session() = default;
    // step's parts, in order: append the new tokens and their embeddings; the candidate set and
    // live rows at layer 0; GemFilter's first pass; the stages between the policy's boundaries;
    // the last row's logits.
    Result<prune::StepInfo> begin_step(std::span<const int32_t> tokens, Profile* prof);
    void initial_sets(const prune::StepInfo& info);
    Status gemfilter_first_pass(StepCtx& sc);
    // Runs layers [start, end) on live_, keys S_. With a boundary `bd` at `end`, the cut
    // (cross_boundary) happens inside layer end-1 and leaves S_, live_ and h_ at the next stage.
    void run_stage(StepCtx& sc, int start, int end, float* scores, const prune::Boundary* bd);
    // The boundary at `layer`, inside layer - 1 (see session.cpp's header).
    TailRows cross_boundary(StepCtx& sc, const prune::Boundary& bd, int layer, const float* qkv,
                            int64_t qkv_stride);
    // The cut of a boundary: the positions of S_ that go on, into kept_.
    void cut(StepCtx& sc, const prune::Boundary& bd, int layer);
    // Appends a row (hidden state, query) to the rows that finish a boundary's layer.
    void take_row(const float* h, const float* q);
    // Live row li, cut at a boundary, waits in its token's Aux slot (lazy without repair).
    void park(size_t li, const float* qkv, int64_t qkv_stride);
    // Schedule::repair: keeps the live rows' input of layer - 1 at the step's first boundary;
    // repair() runs them again from there to the last layer over every key.
    void save_for_repair(const StepCtx& sc, int layer);
    // `logits` ([n_vocab] or nullptr): the last repaired row's logits.
    void repair(StepStats& st, Profile* prof, float* logits);
    float* repair_logits_out();  // repaired_logits_, sized [n_vocab]
    // Whether a token before this step stopped short of the last layer (it waits in its Aux
    // slot for a step that selects it).
    bool has_deferred() const;
    void check_invariants(int layer, const std::vector<int32_t>& S,
                          const std::vector<int32_t>& live, int64_t n_total) const;
    void check_aux_slots(int64_t n_total) const;
    void take_buffers(Session& donor);  // create's donor

    const LlamaModel* model_ = nullptr;
    SessionOptions opts_;
    std::unique_ptr<prune::StepPolicy> policy_;
    KvCache kv_;
    ForwardScratch scratch_;
    Profile profile_;
    std::vector<int32_t> tokens_;
    int64_t n_past_ = 0;
    int64_t n_prompt_ = 0;
    int64_t first_revived_since_prompt_ = std::numeric_limits<int64_t>::max();
    int64_t n_steps_ = 0;
    int64_t total_token_layers_ = 0;
    int64_t prompt_token_layers_ = 0;  // (prompt token, layer) pairs computed
    std::vector<int16_t> depth_;   // [n_ctx]
    std::vector<int16_t> recomputed_;  // [n_ctx] pairs of the token Schedule::repair ran again
    // Aux slot of a token cut at a boundary (0 < d_t < L): it stopped inside layer d_t - 1,
    // with that layer's K/V stored but its attention, Wo and FFN not run (LayerRun::cut).
    // Empty under Schedule::repair.
    ScratchVector<float> aux_;     // [n_ctx, n_embd] hidden state entering layer depth_[t] - 1
    ScratchVector<float> aux_q_;   // [n_ctx, n_embd_q] its query at that layer (RoPE applied)
    std::vector<uint8_t> aux_valid_;  // [n_ctx] (check_invariants only)
    std::vector<uint8_t> computed_;   // [n_ctx, n_layer] (check_invariants only)
    // Static / random / gemfilter: tokens cut for good at prefill (static: from its boundary
    // layer on; random and gemfilter: at every layer).
    std::vector<uint8_t> excluded_;  // [n_ctx]
    // Per-step working buffers (reused).
    ScratchVector<float> h_, h_next_;  // GEMM outputs accumulate into h_ (tile loads/stores)
    ScratchVector<float> q_next_;      // [live rows, n_embd_q] queries of the rows past a cut
    std::vector<float> scores_;
    std::vector<int32_t> live_, next_live_, S_, S_prev_, kept_;
    std::vector<prune::Boundary> plan_;  // this step's boundaries
    prune::CutScratch cut_scratch_;
    // Schedule::repair: the input of layer repair_layer_ of the step that deferred tokens, for
    // its rows at positions [repair_begin_, repair_end_) ([rows, n_embd]), and how that step
    // ran (LayerRun::step_rows, LayerRun::prompt), so the repair runs its rows the same way.
    std::vector<float> repair_h_;
    int64_t repair_begin_ = 0, repair_end_ = 0, repair_step_rows_ = 0;
    int repair_layer_ = 0;
    bool repair_prompt_ = false;
    std::vector<float> repaired_logits_;
};

}  // namespace lazyllm
