// The Llama-family forward over a dense block of live rows (design.md 2): every kernel sees
// dense rows. The K/V of a pruned key set S are not gathered: attention reads rows S straight
// from the position-addressed cache (kernels::AttentionArgs::kv_row).
//   per layer: x = rmsnorm(h); [q|k|v] = x Wqkv^T; (q, k = rmsnorm per head: QK-norm);
//              rope(q, k) at own positions; KV[il][pos] = k, v (fp32 or f16);
//              a = attn(q, KV[il][S]) (within the window on sliding-window layers);
//              h += a Wo^T (gemma3: h += rmsnorm(a Wo^T));
//              x = rmsnorm(h); [g|u] = x Wgu^T; h += (act(g) * u) Wdown^T (gemma3: the sum
//              post-normed as well; act = silu, or GELU-tanh for gemma3)
#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "base/scratch.h"
#include "kernels/attention.h"
#include "kernels/quant.h"
#include "model/llama_model.h"

namespace lazyllm {

namespace {

// Row work fused into the bf16 AMX GEMMs (kernels::RowsDone): run by the GEMM thread on the
// rows it just finished, while they are in its cache, on one thread each.
struct QkvRows {  // after qkv: QK-norm and RoPE on q and k, then k and v into the cache
    kernels::KernelContext ctx;
    const kernels::RopeTable* rope = nullptr;
    const float* q_norm = nullptr;  // [head_dim] QK-norm weights, or null
    const float* k_norm = nullptr;
    float eps = 0.0f;
    kernels::RopeMode mode = kernels::RopeMode::kNorm;
    float* qkv = nullptr;
    int64_t n_qkv = 0, n_q = 0, n_kv = 0;
    const int32_t* pos = nullptr;
    int n_head = 0, n_head_kv = 0, head_dim = 0;
    KvCache* kv = nullptr;
    int il = 0;
};

// Rows [r0, r1) on c.ctx's threads (the row hook's: one).
void qkv_finish(const QkvRows& c, int64_t r0, int64_t r1) {
    const int64_t n = r1 - r0;
    float* rows = c.qkv + r0 * c.n_qkv;
    const int32_t* pos = c.pos + r0;
    if (c.q_norm != nullptr) {
        kernels::rms_norm_heads(c.ctx, rows, c.n_qkv, n, c.n_head, c.head_dim, c.q_norm, c.eps);
        kernels::rms_norm_heads(c.ctx, rows + c.n_q, c.n_qkv, n, c.n_head_kv, c.head_dim,
                                c.k_norm, c.eps);
    }
    kernels::rope(c.ctx, *c.rope, c.mode, rows, pos, n, c.n_qkv, c.n_head, c.head_dim);
    kernels::rope(c.ctx, *c.rope, c.mode, rows + c.n_q, pos, n, c.n_qkv, c.n_head_kv, c.head_dim);
    c.kv->store(c.ctx, c.il, rows + c.n_q, rows + c.n_q + c.n_kv, c.n_qkv, n, pos);
}

void qkv_rows(void* p, int64_t r0, int64_t r1) {
    qkv_finish(*static_cast<const QkvRows*>(p), r0, r1);
}

// After a GEMM into the residual stream: with y (gemma3, the GEMM wrote its rows to y), h +=
// rmsnorm(y, post); then, with w, x16 (or x) = rmsnorm(h, w), the next GEMM's input.
struct NormRows {
    kernels::KernelContext ctx;
    float* h = nullptr;
    float* y = nullptr;
    const float* post = nullptr;
    const float* w = nullptr;
    uint16_t* x16 = nullptr;  // the bf16 path's input, else
    float* x = nullptr;       // the fp32 and quantized paths'
    int64_t n_embd = 0;
    float eps = 0.0f;
};

void norm_rows(void* p, int64_t r0, int64_t r1) {
    const NormRows& c = *static_cast<const NormRows*>(p);
    const int64_t n = r1 - r0, E = c.n_embd;
    float* h = c.h + r0 * E;
    if (c.y != nullptr) {
        float* y = c.y + r0 * E;
        kernels::rms_norm(c.ctx, y, c.post, y, n, E, c.eps);
        kernels::add_inplace(c.ctx, h, y, n * E);
    }
    if (c.w == nullptr) return;
    if (c.x16 != nullptr) {
        kernels::rms_norm_bf16(c.ctx, h, c.w, c.x16 + r0 * E, n, E, c.eps);
    } else {
        kernels::rms_norm(c.ctx, h, c.w, c.x + r0 * E, n, E, c.eps);
    }
}

}  // namespace

bool Linear::forward(kernels::Workspace& ws, LinearPath path, LinearInput x, int64_t n, float* y,
                     int64_t ldx, int64_t ldy, bool accumulate,
                     const kernels::RowsDone* done) const {
    switch (path) {
        case LinearPath::kQuant:
            quant.forward(x.f32, n, y, ldx, ldy, accumulate, &ws, kernels::QuantRows::kDecode);
            return false;
        case LinearPath::kQuantPrompt:
            quant.forward(x.f32, n, y, ldx, ldy, accumulate, &ws, kernels::QuantRows::kPrompt);
            return false;
        case LinearPath::kQuantOutliers:
            quant.forward(x.f32, n, y, ldx, ldy, accumulate, &ws,
                          kernels::QuantRows::kPromptOutliers);
            return false;
        case LinearPath::kQuantTiles:
            quant.forward(x.f32, n, y, ldx, ldy, accumulate, &ws, kernels::QuantRows::kPromptTiles);
            return false;
        case LinearPath::kBf16:
            return gemm.forward_bf16(x.bf16, n, y, ldx, ldy, accumulate, done, &ws);
        case LinearPath::kF32:
            gemm.forward(x.f32, n, y, ldx, ldy, accumulate, &ws);
            return false;
    }
    return false;
}

kernels::AttentionArgs LlamaModel::attention_args(const KvCache& kv, int il) const {
    const ModelConfig& c = config_;
    kernels::AttentionArgs a;
    a.k = kv.k(il);
    a.v = kv.v(il);
    a.kv_type = kv.type();
    a.kv_stride = c.head_dim;  // each head's rows in a block (KvCache)
    a.kv_head_stride = kv.head_stride();
    a.n_head = c.n_head;
    a.n_head_kv = c.n_head_kv;
    a.head_dim = c.head_dim;
    a.scale = c.attn_scale;
    a.window = c.is_swa(il) ? c.sliding_window : 0;
    a.bf16 = bf16_attention_;
    a.out_stride = c.n_embd_q();
    return a;
}

kernels::KernelContext LlamaModel::kernel_ctx(ForwardScratch& s) const {
    kernels::KernelContext ctx = opts_.ctx;
    ctx.ws = &s.kernels;
    return ctx;
}

const kernels::RopeTable& LlamaModel::rope_table(int il) const {
    return config_.is_swa(il) ? rope_swa_ : rope_;
}

void LlamaModel::post_norm_add(const std::vector<float>& w, float* y, float* h, int64_t n) const {
    const int64_t E = config_.n_embd;
    kernels::rms_norm(opts_.ctx, y, w.data(), y, n, E, config_.rms_eps);
    kernels::add_inplace(opts_.ctx, h, y, n * E);
}

// The state of one forward_layers call: its rows, its path and the activation buffers of that
// path, the row hooks of the bf16 GEMMs. Each method is one named part of a layer.
class LlamaModel::LayerPass {
public:
    static constexpr int64_t kFfnChunkRows = 256;
    // ffn()'s equal chunks of a longer step (at least kFfnChunkRows / 2 rows) stay on the same
    // side of the tiles' threshold as the step.
    static_assert(kFfnChunkRows / 2 >= kernels::kTileMinRows);

    LayerPass(const LlamaModel& m, const LayerRun& run, KvCache& kv, ForwardScratch& s,
              Profile* prof)
        : m_(m), c_(m.config_), run_(run), kv_(kv), s_(s), prof_(prof) {
        const int64_t n = run.n_rows;
        qkv_ = grow(s.qkv, n * c_.n_qkv());  // [n, Q + 2 KV]
        step_rows_ = run.step_rows > 0 ? run.step_rows : n;
        prepare(n);
        // Scores (LazyLLM boundary): summed over layers [score_begin_, il_end), global layers
        // only on a sliding-window model (a local layer's query sees only its window).
        LAZYLLM_CHECK(run.score_layers >= 1);
        score_begin_ = std::max(run.il_begin, run.il_end - run.score_layers);
        if (run.scores != nullptr) {
            first_scored_ = m.first_scored_layer(score_begin_, run.il_end);
            LAZYLLM_CHECK_MSG(first_scored_ >= 0, "a boundary scored on sliding-window layers only");
            if (first_scored_ < run.il_end - 1) grow(s.score_row, run.n_keys);
        }
        // A key set S (pruned step) is read by row index; else keys are the prefix [0, n_keys).
        key_pos_ = run.key_pos != nullptr ? run.key_pos : kv.iota();
        attn_flops_ = attention_flops(run.pos, n, 0);
        if (c_.sliding_window > 0) attn_flops_swa_ = attention_flops(run.pos, n, c_.sliding_window);
        init_hooks();
    }

    // The layer body (docs/design.md 2); the comments name what the AMX GEMM's row hooks fuse.
    void layer(int il) {
        const LayerWeights& w = m_.layers_[il];
        attention_norm(w);                        // x = rmsnorm(h)
        qkv(w, il);                               // [q|k|v] = x Wqkv^T; RoPE; K/V into the cache
        kernels::AttentionArgs a = m_.attention_args(kv_, il);
        a.row_invariant = row_invariant_attention(il);
        score(a, il);                             // LazyLLM: the last row's head-mean attention
        const TailRows o = tail_rows(il);         // the rows that go on past the K/V
        attention(a, o);                          // attn = softmax(q K^T / sqrt(d)) V over S
        attn_out(w, o);                           // h += attn Wo^T; x = rmsnorm(h) (hook)
        ffn(w, o, il);                            // h += (silu(x Wg^T) * x Wu^T) Wdown^T
    }

private:
    // Path and buffers for `rows` rows (again when a cut brings more rows: quant_max_rows()).
    // bf16 GEMMs take bf16 activations written directly by RMSNorm, by attention and by the
    // gate|up GEMM's fused SwiGLU (no fp32 round trip through memory); the values are the same
    // RNE roundings the GEMM would apply. A decode step (few rows) streams every weight once
    // for little work: it runs on the 4/8-bit copies (fp32 activations, quantized per block
    // inside), prefill on the GEMMs; with prefill_quant() there are only the 4/8-bit weights.
    void prepare(int64_t rows) {
        const int64_t E = c_.n_embd, Q = c_.n_embd_q(), F = c_.n_ff;
        const bool decode = m_.decode_weights_step(step_rows_, run_.prompt);
        const bool quant = m_.prefill_quant_ || (decode && rows <= m_.quant_max_rows_);
        const bool bf16 = !quant && m_.layers_[run_.il_begin].qkv.gemm.is_bf16();
        if (quant) {
            // A prompt step of kTileMinRows tokens or more runs all its calls on AMX tiles where
            // the blocks have them, its last layer's few rows and pruned stages included, so a
            // row's result does not depend on the calls the step makes. A decode step's rows
            // (its own, and prompt tokens LazyLLM revives into it) run as prompt rows: the int8
            // kernels, as kQuant, in calls of fewer than kTileMinRows rows, the tiles (where the
            // blocks have them) in larger ones (QuantLinear::tile_rows).
            const bool tiles = m_.prefill_tiles_ && step_rows_ >= kernels::kTileMinRows;
            path_ = decode  ? LinearPath::kQuantPrompt
                    : tiles ? LinearPath::kQuantTiles
                            : LinearPath::kQuantOutliers;
        } else {
            path_ = bf16 ? LinearPath::kBf16 : LinearPath::kF32;
        }
        x16_ = bf16 ? grow(s_.x16, rows * E) : nullptr;        // [rows, E]
        act16_ = bf16 ? grow(s_.act16, rows * F) : nullptr;    // [rows, F]
        attn16_ = bf16 ? grow(s_.attn16, rows * Q) : nullptr;  // [rows, Q]
        // fp32 and quantized paths: x and attention's output share one buffer. x (the normed
        // input) is dead once the qkv GEMM has read it, attention's output once Wo has, and only
        // then does the FFN norm write x ([rows, E] and [rows, Q] views of rows x max(E, Q)).
        x_ = bf16 ? nullptr : grow(s_.x, rows * std::max(E, Q));
        attn_ = x_;
        // fp32 gate|up rows: every fp32 and quantized path. Such passes run the FFN in chunks
        // of at most kFfnChunkRows rows (ffn()).
        const bool fp32_gate_up = !bf16;
        const int64_t ffn_rows = fp32_gate_up ? std::min(rows, kFfnChunkRows) : rows;
        gate_up_ = fp32_gate_up ? grow(s_.gate_up, ffn_rows * 2 * F) : nullptr;  // [.., 2F]
        act_ = bf16 ? nullptr : grow(s_.act, ffn_rows * F);                      // [.., F]
        y_ = c_.post_norms ? grow(s_.y, rows * E) : nullptr;         // [rows, E]
    }
    bool bf16() const { return path_ == LinearPath::kBf16; }
    bool quant() const {
        return path_ == LinearPath::kQuant || path_ == LinearPath::kQuantPrompt ||
               path_ == LinearPath::kQuantOutliers || path_ == LinearPath::kQuantTiles;
    }
    // Wo and down (inputs: attention's and SwiGLU's outputs) take their int8 rounding whole: the
    // outlier channels that move answers are the residual stream's, in the normed inputs of
    // q|k|v and gate|up (docs/evaluation.md), and SwiGLU's heavy tails would make each row
    // choose different ones (hundreds of columns per call).
    LinearPath inner_path() const {
        return path_ == LinearPath::kQuantOutliers ? LinearPath::kQuantPrompt : path_;
    }
    LinearInput x_in() const { return {x_, x16_}; }

    // A prompt step's cut moves most of its rows into Aux slots (Session::park). Where the
    // model says so (LlamaModel::lean_memory), the row buffers that are dead at that point
    // (the normed input, which the qkv GEMM has read; the FFN's; post-norm outputs) give their
    // pages back to the system before it, and qkv its rows past the kept ones after it, so
    // that the slots take memory these held rather than adding to the peak. Rows the layers
    // write again fault back in (the kept ones: a fifth).
    void release_dead_rows() {
        release_from(s_.x, 0);
        release_from(s_.x16, 0);
        release_from(s_.attn16, 0);
        release_from(s_.act16, 0);
        release_from(s_.y, 0);
    }

    // Attention FLOPs (profile only): QK^T and PV over the visible (query, key) pairs, i.e. the
    // keys at or before each row's position (about half of a prefix, all of it in decode), and
    // within the window before it on a sliding-window layer (window > 0).
    double attention_flops(const int32_t* pos, int64_t rows, int window) const {
        double visible = 0.0;
        const int32_t* end = key_pos_ + run_.n_keys;
        for (int64_t i = 0; prof_ != nullptr && i < rows; ++i) {
            const int32_t* first =
                window > 0 ? std::upper_bound(key_pos_, end, pos[i] - window) : key_pos_;
            visible += static_cast<double>(std::upper_bound(first, end, pos[i]) - first);
        }
        return 4.0 * visible * c_.n_head * c_.head_dim;
    }
    int window_of(int il) const { return c_.is_swa(il) ? c_.sliding_window : 0; }

    // bf16 path: the GEMMs' row hooks do the row-local work that follows them (QK-norm, RoPE
    // and the K/V store after qkv; gemma3's post-norm and the FFN norm after attn_out; its
    // post-norm and the next layer's attention norm after down) when the AMX kernel can
    // (forward_bf16 says); else the passes below do it. Either way the same kernels run on the
    // same rows, so results do not change. Their time then counts in the GEMM's profile entry.
    void init_hooks() {
        kernels::KernelContext ctx1 = m_.opts_.ctx;
        ctx1.n_threads = 1;
        qkv_hook_.ctx = ctx1;
        qkv_hook_.rope = &m_.rope_;
        qkv_hook_.mode = c_.rope_mode;
        qkv_hook_.qkv = qkv_;
        qkv_hook_.n_qkv = c_.n_qkv();
        qkv_hook_.n_q = c_.n_embd_q();
        qkv_hook_.n_kv = c_.n_embd_kv();
        qkv_hook_.pos = run_.pos;
        qkv_hook_.n_head = c_.n_head;
        qkv_hook_.n_head_kv = c_.n_head_kv;
        qkv_hook_.head_dim = c_.head_dim;
        qkv_hook_.eps = c_.rms_eps;
        qkv_hook_.kv = &kv_;
        norm_hook_.ctx = ctx1;
        norm_hook_.n_embd = c_.n_embd;
        norm_hook_.eps = c_.rms_eps;
    }

    // x (or x16) = rmsnorm(h, w) over n rows of h.
    void norm(const float* h, const std::vector<float>& w, int64_t n) {
        OpTimer t(prof_, OpKind::kRmsNorm);
        const kernels::KernelContext& ctx = m_.opts_.ctx;
        if (bf16()) {
            kernels::rms_norm_bf16(ctx, h, w.data(), x16_, n, c_.n_embd, c_.rms_eps);
        } else {
            kernels::rms_norm(ctx, h, w.data(), x_, n, c_.n_embd, c_.rms_eps);
        }
    }

    void attention_norm(const LayerWeights& w) {
        if (!x16_ready_) norm(run_.h, w.attn_norm, run_.n_rows);
    }

    void qkv(const LayerWeights& w, int il) {
        const kernels::KernelContext& ctx = m_.opts_.ctx;
        const int64_t n = run_.n_rows, NQKV = c_.n_qkv();
        qkv_hook_.il = il;
        qkv_hook_.rope = &m_.rope_table(il);
        qkv_hook_.q_norm = w.q_norm.empty() ? nullptr : w.q_norm.data();
        qkv_hook_.k_norm = w.k_norm.empty() ? nullptr : w.k_norm.data();
        const kernels::RowsDone done{&qkv_rows, &qkv_hook_};
        bool hooked = false;  // QK-norm, RoPE and the K/V store done by the qkv GEMM's row hook
        {
            OpTimer t(prof_, OpKind::kQkv, 2.0 * n * c_.n_embd * NQKV);
            hooked = w.qkv.forward(s_.kernels, path_, x_in(), n, qkv_, 0, 0, false,
                                   bf16() ? &done : nullptr);
        }
        if (hooked) return;
        OpTimer t(prof_, OpKind::kRope);  // with the K/V store
        kernels::parallel_rows(ctx, n, NQKV, done);  // a block per thread
    }

    // LazyLLM's importance at a boundary: the first scored layer writes run.scores, later ones
    // add to it. `a` gets the run's keys and queries here.
    void score(kernels::AttentionArgs& a, int il) {
        const int64_t n = run_.n_rows, NQKV = c_.n_qkv();
        a.kv_row = run_.key_pos;  // cache row = position; null for the prefix (row j)
        a.kv_pos = key_pos_;
        a.n_kv = run_.n_keys;
        a.q = qkv_;
        a.q_pos = run_.pos;
        a.n_q = n;
        a.q_stride = NQKV;
        a.out = attn_;
        a.out16 = attn16_;
        if (run_.scores == nullptr || il < first_scored_ || c_.is_swa(il)) return;
        float* dst = il == first_scored_ ? run_.scores : s_.score_row.data();
        if (n == 1) {
            // One row (decode): its attention call computes the score from its own pass over K
            // (AttentionArgs::scores, the same bits). At a cut the score must come before the
            // rows that go on are known, so that call runs here; attention() then has nothing
            // left to do unless the cut brought more rows.
            score_dst_ = dst;
            if (run_.cut && il == run_.il_end - 1) {
                o_flops_ = attn_flops_;
                attention(a, TailRows{run_.h, qkv_, NQKV, run_.pos, 1});
                early_out_ = a.out;
                early_out16_ = a.out16;
            }
            return;
        }
        // Several rows (a decode step with revived rows): the same from this layer's attention
        // call where its kernel can (kernels::attention_scores_from_pass), but not at the cut,
        // whose call runs after it on the rows it keeps.
        if (!(run_.cut && il == run_.il_end - 1) &&
            kernels::attention_scores_from_pass(kernel_ctx(), a)) {
            score_dst_ = dst;
            return;
        }
        OpTimer t(prof_, OpKind::kScore);
        kernels::attention_scores_head_mean(kernel_ctx(), a, qkv_ + (n - 1) * NQKV, run_.pos[n - 1],
                                            dst);
        add_score(dst);
    }

    void add_score(const float* dst) {
        if (dst == run_.scores) return;
        for (int64_t j = 0; j < run_.n_keys; ++j) run_.scores[j] += dst[j];
    }

    // The rows that go on through attention, Wo and the FFN: all of them; the last one alone in
    // the narrowed last layer; or those the cut picks at the run's last layer (K/V of every row
    // are stored either way).
    // A prompt step's rows attend as they would in a longer prompt (AttentionArgs::
    // row_invariant), so that a prompt continued over a cached prefix gives a cold run's values;
    // but for the last layer's one row that makes the logits, which is the call's only row
    // either way, kept on the kernel its size picks.
    bool row_invariant_attention(int il) const {
        return run_.prompt && !(run_.last_row_out && il == c_.n_layer - 1);
    }

    TailRows tail_rows(int il) {
        const int64_t n = run_.n_rows, E = c_.n_embd, NQKV = c_.n_qkv();
        o_flops_ = c_.is_swa(il) ? attn_flops_swa_ : attn_flops_;
        if (run_.cut && il == run_.il_end - 1) {
            const bool release = run_.prompt && m_.lean_memory();
            if (release) release_dead_rows();
            const TailRows o = run_.cut(qkv_, NQKV);
            LAZYLLM_CHECK(o.n_rows > 0 && o.h != nullptr && o.q != nullptr && o.pos != nullptr);
            if (o.n_rows > n) prepare(o.n_rows);
            if (release) release_from(s_.qkv, static_cast<size_t>(o.n_rows * NQKV));
            o_flops_ = attention_flops(o.pos, o.n_rows, window_of(il));
            return o;
        }
        if (run_.last_row_out && il == c_.n_layer - 1 && n > 1) {
            o_flops_ = attention_flops(run_.pos + n - 1, 1, window_of(il));
            return TailRows{run_.h + (n - 1) * E, qkv_ + (n - 1) * NQKV, NQKV, run_.pos + n - 1, 1};
        }
        return TailRows{run_.h, qkv_, NQKV, run_.pos, n};
    }

    void attention(kernels::AttentionArgs& a, const TailRows& o) {
        if (early_out_ != nullptr || early_out16_ != nullptr) {
            // score() ran this layer's call for the step's one row: done if the cut kept just it.
            const bool done = o.n_rows == 1 && o.pos[0] == run_.pos[0] && early_out_ == attn_ &&
                              early_out16_ == attn16_;
            early_out_ = nullptr;
            early_out16_ = nullptr;
            if (done) return;
        }
        a.q = o.q;
        a.q_pos = o.pos;
        a.n_q = o.n_rows;
        a.q_stride = o.q_stride;
        a.out = attn_;  // chosen again if the cut grew the rows
        a.out16 = attn16_;
        a.scores = score_dst_;
        OpTimer t(prof_, OpKind::kAttention, o_flops_);
        kernels::attention(kernel_ctx(), a);
        if (score_dst_ != nullptr) add_score(score_dst_);
        score_dst_ = nullptr;
        a.scores = nullptr;
    }

    // The model's kernel context with this pass's Workspace (attention's scratch).
    kernels::KernelContext kernel_ctx() const { return m_.kernel_ctx(s_); }

    void attn_out(const LayerWeights& w, const TailRows& o) {
        const int64_t Q = c_.n_embd_q(), E = c_.n_embd;
        const bool post = c_.post_norms;  // h += rmsnorm(attn Wo^T) (gemma3), else attn Wo^T
        set_norm_hook(o.h, post ? w.post_attn_norm.data() : nullptr, w.ffn_norm.data());
        const kernels::RowsDone done{&norm_rows, &norm_hook_};
        bool hooked = false;  // the post-norm and x16 = rmsnorm(h, ffn_norm) done by wo's row hook
        {
            OpTimer t(prof_, OpKind::kAttnOut, 2.0 * o.n_rows * Q * E);
            hooked =
                w.wo.forward(s_.kernels, inner_path(), {attn_, attn16_}, o.n_rows, post ? y_ : o.h,
                             Q, E, /*accumulate=*/!post, bf16() ? &done : nullptr);
        }
        if (hooked) return;
        if (post) {
            post_norm(o.n_rows, done);
        } else {
            norm(o.h, w.ffn_norm, o.n_rows);
        }
    }

    // The row hook's work after a GEMM into h (post: the GEMM wrote y; next: the next GEMM's
    // input norm, or null).
    void set_norm_hook(float* h, const float* post, const float* next) {
        norm_hook_.h = h;
        norm_hook_.y = post != nullptr ? y_ : nullptr;
        norm_hook_.post = post;
        norm_hook_.w = next;
        norm_hook_.x16 = x16_;
        norm_hook_.x = x_;
    }

    // The hook's work (gemma3's post-norm, then the next input's norm if set) where no GEMM ran
    // it: on blocks of rows over the threads, each block's three steps while it is in cache.
    void post_norm(int64_t n, const kernels::RowsDone& done) {
        OpTimer t(prof_, OpKind::kRmsNorm);
        kernels::parallel_rows(m_.opts_.ctx, n, c_.n_embd, done);
    }

    // A pass that writes fp32 gate|up rows (quantized, fp32) runs the FFN in equal
    // chunks of at most kFfnChunkRows rows: its [rows, 2 n_ff] and [rows, n_ff] buffers stay
    // bounded on long prompts (on a 1B model they would be 200 MB at 2k rows), and the gate|up
    // rows stay in cache until the GLU reads them (PackedLinear::forward_glu_bf16 does the
    // same inside for SwiGLU on bf16 GEMMs); equal, as a call on AMX tiles dequantizes its
    // weights once whatever its rows (a short last chunk would pay that for a few rows). Every
    // linear computes each row alone, so the results are the same bit for bit; the chunks take
    // no row hook (ffn_rows).
    void ffn(const LayerWeights& w, const TailRows& o, int il) {
        const int64_t E = c_.n_embd;
        if (gate_up_ == nullptr || o.n_rows <= kFfnChunkRows) {
            ffn_rows(w, o, x_in(), il);
            return;
        }
        const int64_t n_chunks = (o.n_rows + kFfnChunkRows - 1) / kFfnChunkRows;
        for (int64_t i = 0; i < n_chunks; ++i) {
            const int64_t r0 = o.n_rows * i / n_chunks, r1 = o.n_rows * (i + 1) / n_chunks;
            TailRows part = o;
            part.h = o.h + r0 * E;
            part.n_rows = r1 - r0;
            const LinearInput x{x_ != nullptr ? x_ + r0 * E : nullptr,
                                x16_ != nullptr ? x16_ + r0 * E : nullptr};
            ffn_rows(w, part, x, il, /*hook=*/false);
        }
    }

    // The FFN of the rows of o, whose normed input is x; with `hook`, down's row hook may also
    // write the next layer's normed input (x16, from row 0: the whole step's rows only).
    void ffn_rows(const LayerWeights& w, const TailRows& o, LinearInput x, int il,
                  bool hook = true) {
        const int64_t n_o = o.n_rows, E = c_.n_embd, F = c_.n_ff;
        if (bf16()) {
            // One GEMM with the GLU fused into its output stage on the AMX backend (the fp32
            // gate/up rows are never written); GEMM + glu_bf16 inside on the others.
            OpTimer t(prof_, OpKind::kGateUp, 2.0 * n_o * E * 2 * F);
            w.gate_up.gemm.forward_glu_bf16(c_.ffn_act, x.bf16, n_o, act16_, 0, 0, &s_.kernels);
        } else {
            {
                OpTimer t(prof_, OpKind::kGateUp, 2.0 * n_o * E * 2 * F);
                w.gate_up.forward(s_.kernels, path_, x, n_o, gate_up_);
            }
            OpTimer t(prof_, OpKind::kSwiglu);
            kernels::glu(m_.opts_.ctx, c_.ffn_act, gate_up_, act_, n_o, F);
        }
        // The post-norm (gemma3) and the next layer's attention norm, if this call runs it:
        // down's row hook on the bf16 path.
        const bool post = c_.post_norms;
        const bool next = hook && il + 1 < run_.il_end;
        set_norm_hook(o.h, post ? w.post_ffn_norm.data() : nullptr,
                      next ? m_.layers_[il + 1].attn_norm.data() : nullptr);
        const kernels::RowsDone done{&norm_rows, &norm_hook_};
        bool hooked = false;
        {
            OpTimer t(prof_, OpKind::kDown, 2.0 * n_o * F * E);
            hooked =
                w.down.forward(s_.kernels, inner_path(), {act_, act16_}, n_o, post ? y_ : o.h, F, E,
                               /*accumulate=*/!post, bf16() && (post || next) ? &done : nullptr);
        }
        if (post && !hooked) {
            norm_hook_.w = nullptr;  // the next layer's attention norm runs as its own pass
            post_norm(n_o, done);
        }
        x16_ready_ = hooked && next;
    }

    const LlamaModel& m_;
    const ModelConfig& c_;
    const LayerRun& run_;
    KvCache& kv_;
    ForwardScratch& s_;
    Profile* prof_;
    LinearPath path_ = LinearPath::kF32;
    int64_t step_rows_ = 0;
    int score_begin_ = 0;
    int first_scored_ = 0;  // the first layer summed into run.scores
    const int32_t* key_pos_ = nullptr;
    // A decode layer's score, written by its attention call (score()); that call's output
    // buffers when score() ran it before the cut.
    float* score_dst_ = nullptr;
    const float* early_out_ = nullptr;
    const uint16_t* early_out16_ = nullptr;
    double attn_flops_ = 0.0, attn_flops_swa_ = 0.0, o_flops_ = 0.0;
    float* qkv_ = nullptr;
    uint16_t *x16_ = nullptr, *act16_ = nullptr, *attn16_ = nullptr;
    float *x_ = nullptr, *attn_ = nullptr, *gate_up_ = nullptr, *act_ = nullptr;
    float* y_ = nullptr;  // a sublayer's output before its post-norm (gemma3)
    QkvRows qkv_hook_;
    NormRows norm_hook_;
    bool x16_ready_ = false;  // x16 = rmsnorm(h) for this layer's attention (the down hook)
};

void LlamaModel::forward_layers(const LayerRun& run, KvCache& kv, ForwardScratch& s,
                                Profile* prof) const {
    LAZYLLM_CHECK(run.n_rows > 0 && run.n_keys >= 1 && run.il_begin >= 0 &&
                  run.il_end <= config_.n_layer);
    LAZYLLM_CHECK(run.n_keys <= kv.n_ctx());
    LAZYLLM_DCHECK(run.key_pos != nullptr || run.pos[run.n_rows - 1] < run.n_keys);
    LAZYLLM_CHECK_MSG(!(run.cut && run.last_row_out && run.il_end == config_.n_layer),
                      "a run that ends at the last layer cannot also cut its rows");
    LayerPass pass(*this, run, kv, s, prof);
    for (int il = run.il_begin; il < run.il_end; ++il) pass.layer(il);
}

int LlamaModel::first_scored_layer(int begin, int end) const {
    for (int il = begin; il < end; ++il) {
        if (!config_.is_swa(il)) return il;
    }
    return -1;
}

}  // namespace lazyllm
