// The Llama-family forward over a dense block of live rows (design.md 2): every kernel sees
// dense rows. The K/V of a pruned key set S are not gathered: attention reads rows S straight
// from the position-addressed cache (kernels::AttentionArgs::kv_row).
//   per layer: x = rmsnorm(h); [q|k|v] = x Wqkv^T; rope(q, k) at own positions;
//              KV[il][pos] = k, v (fp32 or f16); a = attn(q, KV[il][S]); h += a Wo^T;
//              x = rmsnorm(h); [g|u] = x Wgu^T; h += (silu(g) * u) Wdown^T
#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "base/scratch.h"
#include "base/timer.h"
#include "kernels/attention.h"
#include "kernels/quant.h"
#include "model/llama_model.h"

namespace lazyllm {

namespace {

// Times a scope into a Profile when one is given.
class OpTimer {
public:
    OpTimer(Profile* prof, OpKind kind, double flops = 0.0)
        : prof_(prof), kind_(kind), flops_(flops), t0_(prof ? now_ns() : 0) {}
    ~OpTimer() {
        if (prof_) prof_->add(kind_, now_ns() - t0_, flops_);
    }

private:
    Profile* prof_;
    OpKind kind_;
    double flops_;
    int64_t t0_;
};

// Row work fused into the bf16 AMX GEMMs (kernels::RowsDone): run by the GEMM thread on the
// rows it just finished, while they are in its cache, on one thread each.
struct QkvRows {  // after qkv: RoPE on q and k, then k and v into the cache
    kernels::KernelContext ctx;
    const kernels::RopeTable* rope = nullptr;
    kernels::RopeMode mode = kernels::RopeMode::kNorm;
    float* qkv = nullptr;
    int64_t n_qkv = 0, n_q = 0, n_kv = 0;
    const int32_t* pos = nullptr;
    int n_head = 0, n_head_kv = 0, head_dim = 0;
    kernels::KvType kv_type = kernels::KvType::kF32;
    void* k_cache = nullptr;
    void* v_cache = nullptr;
};

void qkv_rows(void* p, int64_t r0, int64_t r1) {
    const QkvRows& c = *static_cast<const QkvRows*>(p);
    const int64_t n = r1 - r0;
    float* rows = c.qkv + r0 * c.n_qkv;
    const int32_t* pos = c.pos + r0;
    kernels::rope(c.ctx, *c.rope, c.mode, rows, pos, n, c.n_qkv, c.n_head, c.head_dim);
    kernels::rope(c.ctx, *c.rope, c.mode, rows + c.n_q, pos, n, c.n_qkv, c.n_head_kv, c.head_dim);
    kernels::kv_store_rows(c.ctx, c.kv_type, rows + c.n_q, c.n_qkv, n, c.n_kv, pos, c.k_cache,
                           c.n_kv);
    kernels::kv_store_rows(c.ctx, c.kv_type, rows + c.n_q + c.n_kv, c.n_qkv, n, c.n_kv, pos,
                           c.v_cache, c.n_kv);
}

struct NormRows {  // after a GEMM that accumulates into h: the next GEMM's bf16 input
    kernels::KernelContext ctx;
    const float* h = nullptr;
    const float* w = nullptr;
    uint16_t* x16 = nullptr;
    int64_t n_embd = 0;
    float eps = 0.0f;
};

void norm_rows(void* p, int64_t r0, int64_t r1) {
    const NormRows& c = *static_cast<const NormRows*>(p);
    kernels::rms_norm_bf16(c.ctx, c.h + r0 * c.n_embd, c.w, c.x16 + r0 * c.n_embd, r1 - r0,
                           c.n_embd, c.eps);
}

}  // namespace

Status LlamaModel::embed(const int32_t* ids, int64_t n, float* h, Profile* prof) const {
    OpTimer t(prof, OpKind::kEmbed);
    const int64_t E = config_.n_embd;
    for (int64_t i = 0; i < n; ++i) {
        if (ids[i] < 0 || ids[i] >= config_.n_vocab) {
            return make_error(ErrorCode::kOutOfRange, "token id {} at index {} is outside the vocabulary [0, {})",
                              ids[i], i, config_.n_vocab);
        }
        const uint8_t* row = token_embd_ + static_cast<size_t>(ids[i]) * token_embd_row_bytes_;
        LAZYLLM_TRY(kernels::dequantize_row_f32(opts_.ctx.isa, token_embd_type_, row, h + i * E, E));
    }
    return {};
}

void LlamaModel::forward_layers(const LayerRun& run, KvCache& kv, ForwardScratch& s,
                                Profile* prof) const {
    const ModelConfig& c = config_;
    const kernels::KernelContext& ctx = opts_.ctx;
    const int64_t n = run.n_rows;
    const int64_t E = c.n_embd, Q = c.n_embd_q(), KV = c.n_embd_kv(), F = c.n_ff;
    const int64_t NQKV = c.n_qkv();
    LAZYLLM_CHECK(n > 0 && run.n_keys >= 1 && run.il_begin >= 0 && run.il_end <= c.n_layer);
    LAZYLLM_CHECK(run.n_keys <= kv.n_ctx());
    LAZYLLM_DCHECK(run.key_pos != nullptr || run.pos[n - 1] < run.n_keys);
    LAZYLLM_CHECK_MSG(!(run.cut && run.last_row_out && run.il_end == c.n_layer),
                      "a run that ends at the last layer cannot also cut its rows");

    float* qkv = grow(s.qkv, n * NQKV);  // [n, Q + 2 KV]
    // bf16 GEMMs take bf16 activations written directly by RMSNorm, by attention and by the
    // gate|up GEMM's fused SwiGLU (no fp32 round trip through memory); the values are the same
    // RNE roundings the GEMM would apply.
    // A decode step (few rows) streams every weight once for little work: it uses the 4/8-bit
    // QuantLinear copies (fp32 activations in, quantized per block inside), prefill the GEMMs.
    // The rows after a cut (LayerRun::cut) may outnumber the run's (revived rows join a decode
    // step's new token): the path and buffers are then chosen again for the larger count
    // (quant_max_rows(), llama_model.h).
    bool quant = false, bf16 = false;
    uint16_t *x16 = nullptr, *act16 = nullptr, *attn16 = nullptr;
    float *x = nullptr, *attn = nullptr, *gate_up = nullptr, *act = nullptr;
    const int64_t step_rows = run.step_rows > 0 ? run.step_rows : n;
    auto prepare = [&](int64_t rows) {
        quant = quantized_decode_ && step_rows <= kQuantMaxRows && rows <= quant_max_rows_;
        bf16 = !quant && layers_[run.il_begin].qkv.is_bf16();
        x16 = bf16 ? grow(s.x16, rows * E) : nullptr;        // [rows, E]
        act16 = bf16 ? grow(s.act16, rows * F) : nullptr;    // [rows, F]
        attn16 = bf16 ? grow(s.attn16, rows * Q) : nullptr;  // [rows, Q]
        attn = bf16 ? nullptr : grow(s.attn, rows * Q);      // [rows, Q]
        // fp32 activation buffers only where the GEMMs take fp32 (quantized decode, fp32 GEMMs).
        x = bf16 ? nullptr : grow(s.x, rows * E);                  // [rows, E]
        gate_up = bf16 ? nullptr : grow(s.gate_up, rows * 2 * F);  // [rows, 2F]
        act = bf16 ? nullptr : grow(s.act, rows * F);              // [rows, F]
    };
    prepare(n);
    // Scores (LazyLLM boundary): summed over layers [score_begin, il_end).
    LAZYLLM_CHECK(run.score_layers >= 1);
    const int score_begin = std::max(run.il_begin, run.il_end - run.score_layers);
    if (run.scores != nullptr && score_begin < run.il_end - 1) grow(s.score_row, run.n_keys);
    // A key set S (pruned step) is read by row index; else keys are the prefix [0, n_keys).
    const int32_t* key_pos = run.key_pos != nullptr ? run.key_pos : kv.iota();
    // Attention FLOPs (profile only): QK^T and PV over the visible (query, key) pairs, i.e. the
    // keys at or before each row's position: about half of a prefix, all of it in decode.
    auto attention_flops = [&](const int32_t* pos, int64_t rows) {
        double visible = 0.0;
        for (int64_t i = 0; prof != nullptr && i < rows; ++i) {
            visible += static_cast<double>(std::upper_bound(key_pos, key_pos + run.n_keys, pos[i]) -
                                           key_pos);
        }
        return 4.0 * visible * c.n_head * c.head_dim;
    };
    const double attn_flops = attention_flops(run.pos, n);

    // bf16 path: the GEMMs' row hooks do the row-local work that follows them (RoPE and the
    // K/V store after qkv, the FFN norm after attn_out, the next layer's attention norm after
    // down) when the AMX kernel can (forward_bf16 says); else the passes below do it. Either
    // way the same kernels run on the same rows, so results do not change. Their time then
    // counts in the GEMM's profile entry.
    kernels::KernelContext ctx1 = ctx;
    ctx1.n_threads = 1;
    QkvRows qkv_hook;
    qkv_hook.ctx = ctx1;
    qkv_hook.rope = &rope_;
    qkv_hook.mode = c.rope_mode;
    qkv_hook.qkv = qkv;
    qkv_hook.n_qkv = NQKV;
    qkv_hook.n_q = Q;
    qkv_hook.n_kv = KV;
    qkv_hook.pos = run.pos;
    qkv_hook.n_head = c.n_head;
    qkv_hook.n_head_kv = c.n_head_kv;
    qkv_hook.head_dim = c.head_dim;
    qkv_hook.kv_type = kv.type();
    NormRows norm_hook;
    norm_hook.ctx = ctx1;
    norm_hook.n_embd = E;
    norm_hook.eps = c.rms_eps;
    const kernels::RowsDone qkv_done{&qkv_rows, &qkv_hook};
    const kernels::RowsDone norm_done{&norm_rows, &norm_hook};
    bool x16_ready = false;  // x16 = rmsnorm(h) for this layer's attention (the down hook)

    for (int il = run.il_begin; il < run.il_end; ++il) {
        const LayerWeights& L = layers_[il];
        if (!x16_ready) {
            OpTimer t(prof, OpKind::kRmsNorm);
            if (bf16) {
                kernels::rms_norm_bf16(ctx, run.h, L.attn_norm.data(), x16, n, E, c.rms_eps);
            } else {
                kernels::rms_norm(ctx, run.h, L.attn_norm.data(), x, n, E, c.rms_eps);
            }
        }
        void* k_cache = kv.k(il);  // [n_ctx, KV] elements of kv.type()
        void* v_cache = kv.v(il);
        bool qkv_hooked = false;  // RoPE and the K/V store done by the qkv GEMM's row hook
        {
            OpTimer t(prof, OpKind::kQkv, 2.0 * n * E * NQKV);
            if (quant) {
                L.qkv_q.forward(x, n, qkv);
            } else if (bf16) {
                qkv_hook.k_cache = k_cache;
                qkv_hook.v_cache = v_cache;
                qkv_hooked = L.qkv.forward_bf16(x16, n, qkv, 0, 0, false, &qkv_done);
            } else {
                L.qkv.forward(x, n, qkv);
            }
        }
        if (!qkv_hooked) {
            {
                OpTimer t(prof, OpKind::kRope);
                kernels::rope(ctx, rope_, c.rope_mode, qkv, run.pos, n, NQKV, c.n_head, c.head_dim);
                kernels::rope(ctx, rope_, c.rope_mode, qkv + Q, run.pos, n, NQKV, c.n_head_kv,
                              c.head_dim);
            }
            OpTimer t(prof, OpKind::kKvWrite);
            kernels::kv_store_rows(ctx, kv.type(), qkv + Q, NQKV, n, KV, run.pos, k_cache, KV);
            kernels::kv_store_rows(ctx, kv.type(), qkv + Q + KV, NQKV, n, KV, run.pos, v_cache, KV);
        }
        kernels::AttentionArgs a;
        a.k = k_cache;
        a.v = v_cache;
        a.kv_type = kv.type();
        a.kv_row = run.key_pos;  // cache row = position; null for the prefix (row j)
        a.kv_pos = key_pos;
        a.n_kv = run.n_keys;
        a.kv_stride = KV;
        a.n_head = c.n_head;
        a.n_head_kv = c.n_head_kv;
        a.head_dim = c.head_dim;
        a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
        a.q = qkv;
        a.q_pos = run.pos;
        a.n_q = n;
        a.q_stride = NQKV;
        a.out = attn;
        a.out16 = attn16;
        a.out_stride = Q;
        if (run.scores != nullptr && il >= score_begin) {
            OpTimer t(prof, OpKind::kScore);
            // The first scored layer writes run.scores, later ones add to it.
            float* dst = il == score_begin ? run.scores : s.score_row.data();
            kernels::attention_scores_head_mean(ctx, a, qkv + (n - 1) * NQKV, run.pos[n - 1], dst);
            if (dst != run.scores) {
                for (int64_t j = 0; j < run.n_keys; ++j) run.scores[j] += dst[j];
            }
        }
        // The rows that go on through attention, Wo and the FFN: all of them; the last one
        // alone in the narrowed last layer; or those the cut picks at the run's last layer
        // (K/V of every row are stored above either way).
        TailRows o{run.h, qkv, NQKV, run.pos, n};
        double o_flops = attn_flops;
        if (run.cut && il == run.il_end - 1) {
            o = run.cut(qkv, NQKV);
            LAZYLLM_CHECK(o.n_rows > 0 && o.h != nullptr && o.q != nullptr && o.pos != nullptr);
            if (o.n_rows > n) prepare(o.n_rows);
            o_flops = attention_flops(o.pos, o.n_rows);
        } else if (run.last_row_out && il == c.n_layer - 1 && n > 1) {
            o = TailRows{run.h + (n - 1) * E, qkv + (n - 1) * NQKV, NQKV, run.pos + n - 1, 1};
            o_flops = attention_flops(o.pos, 1);
        }
        const int64_t n_o = o.n_rows;
        float* h_o = o.h;
        a.q = o.q;
        a.q_pos = o.pos;
        a.n_q = n_o;
        a.q_stride = o.q_stride;
        a.out = attn;  // chosen again if the cut grew the rows
        a.out16 = attn16;
        {
            OpTimer t(prof, OpKind::kAttention, o_flops);
            kernels::attention(ctx, a);
        }
        bool ffn_norm_hooked = false;  // x16 = rmsnorm(h, ffn_norm) done by wo's row hook
        norm_hook.h = h_o;
        norm_hook.x16 = x16;
        {
            OpTimer t(prof, OpKind::kAttnOut, 2.0 * n_o * Q * E);
            if (quant) {
                L.wo_q.forward(attn, n_o, h_o, Q, E, /*accumulate=*/true);
            } else if (bf16) {
                norm_hook.w = L.ffn_norm.data();
                ffn_norm_hooked =
                    L.wo.forward_bf16(attn16, n_o, h_o, Q, E, /*accumulate=*/true, &norm_done);
            } else {
                L.wo.forward(attn, n_o, h_o, Q, E, /*accumulate=*/true);
            }
        }
        if (!ffn_norm_hooked) {
            OpTimer t(prof, OpKind::kRmsNorm);
            if (bf16) {
                kernels::rms_norm_bf16(ctx, h_o, L.ffn_norm.data(), x16, n_o, E, c.rms_eps);
            } else {
                kernels::rms_norm(ctx, h_o, L.ffn_norm.data(), x, n_o, E, c.rms_eps);
            }
        }
        if (bf16) {
            // One GEMM with SwiGLU fused into its output stage on the AMX backend (the fp32
            // gate/up rows are never written); GEMM + swiglu_bf16 inside on the others.
            OpTimer t(prof, OpKind::kGateUp, 2.0 * n_o * E * 2 * F);
            L.gate_up.forward_swiglu_bf16(x16, n_o, act16);
        } else {
            {
                OpTimer t(prof, OpKind::kGateUp, 2.0 * n_o * E * 2 * F);
                if (quant) {
                    L.gate_up_q.forward(x, n_o, gate_up);
                } else {
                    L.gate_up.forward(x, n_o, gate_up);
                }
            }
            OpTimer t(prof, OpKind::kSwiglu);
            kernels::swiglu(ctx, gate_up, act, n_o, F);
        }
        {
            OpTimer t(prof, OpKind::kDown, 2.0 * n_o * F * E);
            if (quant) {
                L.down_q.forward(act, n_o, h_o, F, E, /*accumulate=*/true);
            } else if (bf16) {
                // The next layer's attention norm, if this call runs it.
                const bool next = il + 1 < run.il_end;
                if (next) norm_hook.w = layers_[il + 1].attn_norm.data();
                x16_ready = L.down.forward_bf16(act16, n_o, h_o, F, E, /*accumulate=*/true,
                                                next ? &norm_done : nullptr);
            } else {
                L.down.forward(act, n_o, h_o, F, E, /*accumulate=*/true);
            }
        }
    }
}

void LlamaModel::logits(const float* h_row, int64_t step_rows, float* out, ForwardScratch& s,
                        Profile* prof) const {
    OpTimer t(prof, OpKind::kLmHead, 2.0 * config_.n_embd * config_.n_vocab);
    float* x = grow(s.logits_row, config_.n_embd);
    kernels::rms_norm(opts_.ctx, h_row, output_norm_.data(), x, 1, config_.n_embd, config_.rms_eps);
    if (quantized_decode_ && step_rows <= kQuantMaxRows) {
        lm_head_q_.forward(x, 1, out);
    } else {
        lm_head_.forward(x, 1, out);
    }
}

}  // namespace lazyllm
