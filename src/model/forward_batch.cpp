// The decode step of several sessions in one forward (continuous batching, as llama-server
// does): each row is one session's new token. The linear layers run on the quantized decode
// weights for all rows together, so a decode step streams every weight once however many
// sessions it serves; RoPE, the K/V store and attention are per row, each on its own cache.
// The same ops as forward_layers' quantized path on one row (forward.cpp), row for row.
#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "base/scratch.h"
#include "kernels/attention.h"
#include "kernels/quant.h"
#include "model/llama_model.h"

namespace lazyllm {

void LlamaModel::forward_decode_batch(float* h, const int32_t* pos, KvCache* const* kvs, int64_t n,
                                      float* logits, ForwardScratch& s) const {
    const ModelConfig& c = config_;
    const kernels::KernelContext ctx = kernel_ctx(s);
    const int64_t E = c.n_embd, Q = c.n_embd_q(), KV = c.n_embd_kv(), F = c.n_ff;
    const int64_t NQKV = c.n_qkv();
    LAZYLLM_CHECK_MSG(quantized_decode_ && n >= 1 && n <= quant_max_rows_,
                      "a batched decode step needs the quantized decode weights");
    for (int64_t i = 0; i < n; ++i) {
        LAZYLLM_CHECK(kvs[i]->type() == kvs[0]->type() && pos[i] >= 0 && pos[i] < kvs[i]->n_ctx());
    }
    // x and attention's output share one buffer, as in forward_layers (ForwardScratch::x).
    float* x = grow(s.x, n * std::max(E, Q));  // [n, E] / [n, Q]
    float* attn = x;
    float* qkv = grow(s.qkv, n * NQKV);           // [n, Q + 2 KV]
    float* gate_up = grow(s.gate_up, n * 2 * F);  // [n, 2F]
    float* act = grow(s.act, n * F);            // [n, F]
    float* y = c.post_norms ? grow(s.y, n * E) : nullptr;  // [n, E]
    for (int il = 0; il < c.n_layer; ++il) {
        const LayerWeights& L = layers_[il];
        kernels::rms_norm(ctx, h, L.attn_norm.data(), x, n, E, c.rms_eps);
        L.qkv.quant.forward(x, n, qkv, 0, 0, false, &s.kernels);
        if (c.qk_norm) {
            kernels::rms_norm_heads(ctx, qkv, NQKV, n, c.n_head, c.head_dim, L.q_norm.data(), c.rms_eps);
            kernels::rms_norm_heads(ctx, qkv + Q, NQKV, n, c.n_head_kv, c.head_dim, L.k_norm.data(),
                                    c.rms_eps);
        }
        const kernels::RopeTable& rope = rope_table(il);
        kernels::rope(ctx, rope, c.rope_mode, qkv, pos, n, NQKV, c.n_head, c.head_dim);
        kernels::rope(ctx, rope, c.rope_mode, qkv + Q, pos, n, NQKV, c.n_head_kv, c.head_dim);
        for (int64_t i = 0; i < n; ++i) {
            float* row = qkv + i * NQKV;
            kvs[i]->store(ctx, il, row + Q, row + Q + KV, NQKV, 1, pos + i);
            kernels::AttentionArgs a = attention_args(*kvs[i], il);
            a.kv_row = nullptr;  // the prefix [0, pos]: cache row j is position j
            a.kv_pos = kvs[i]->iota();
            a.n_kv = pos[i] + 1;
            a.q = row;
            a.q_pos = pos + i;
            a.n_q = 1;
            a.q_stride = NQKV;
            a.out = attn + i * Q;
            a.out16 = nullptr;
            kernels::attention(ctx, a);
        }
        if (c.post_norms) {
            L.wo.quant.forward(attn, n, y, Q, E, false, &s.kernels);
            post_norm_add(L.post_attn_norm, y, h, n);
        } else {
            L.wo.quant.forward(attn, n, h, Q, E, /*accumulate=*/true, &s.kernels);
        }
        kernels::rms_norm(ctx, h, L.ffn_norm.data(), x, n, E, c.rms_eps);
        L.gate_up.quant.forward(x, n, gate_up, 0, 0, false, &s.kernels);
        kernels::glu(ctx, c.ffn_act, gate_up, act, n, F);
        if (c.post_norms) {
            L.down.quant.forward(act, n, y, F, E, false, &s.kernels);
            post_norm_add(L.post_ffn_norm, y, h, n);
        } else {
            L.down.quant.forward(act, n, h, F, E, /*accumulate=*/true, &s.kernels);
        }
    }
    kernels::rms_norm(ctx, h, output_norm_.data(), x, n, E, c.rms_eps);
    lm_head_.quant.forward(x, n, logits, 0, 0, false, &s.kernels);
    softcap(logits, n);
}

}  // namespace lazyllm
