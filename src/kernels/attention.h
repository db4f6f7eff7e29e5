// Causal grouped-query attention by absolute position, over an arbitrary (sorted) key set, so
// that pruned steps can attend to any subset of the context. Tiled (flash-style online
// softmax): no [n_q, n_kv] buffer, so an 8k prompt needs O(tile) scratch per thread.
#pragma once

#include <cstdint>

#include "kernels/cpu.h"

namespace lazyllm::kernels {

struct AttentionArgs {
    const float* q = nullptr;        // [n_q, q_stride], head h at h*head_dim (RoPE applied)
    const int32_t* q_pos = nullptr;  // [n_q] absolute positions
    int64_t n_q = 0;
    int64_t q_stride = 0;
    const float* k = nullptr;         // [n_kv, kv_stride], kv head g at g*head_dim (RoPE applied)
    const float* v = nullptr;         // [n_kv, kv_stride]
    const int32_t* kv_pos = nullptr;  // [n_kv] absolute positions, strictly increasing
    int64_t n_kv = 0;
    int64_t kv_stride = 0;
    int n_head = 0;
    int n_head_kv = 0;  // n_head % n_head_kv == 0; query head h uses kv head h / (n_head/n_head_kv)
    int head_dim = 0;
    float scale = 0.0f;    // usually 1/sqrt(head_dim)
    float* out = nullptr;  // [n_q, out_stride], head h at h*head_dim
    int64_t out_stride = 0;
};

// Key j is visible to query i iff kv_pos[j] <= q_pos[i]. A query with no visible key gets
// zeros (cannot happen when a token attends to itself).
void attention(const KernelContext& ctx, const AttentionArgs& args);

// LazyLLM's importance score (paper Eq. 1): for the query row `q_row` ([q_stride], one
// position q_pos), s_j = mean over the n_head heads of softmax_j(q . k_j * scale) over the
// visible keys j (kv_pos[j] <= q_pos; invisible keys get 0). fp32. scores: [n_kv].
void attention_scores_head_mean(const KernelContext& ctx, const AttentionArgs& args,
                                const float* q_row, int32_t q_pos, float* scores);

namespace ref {
void attention(const AttentionArgs& args);
void attention_scores_head_mean(const AttentionArgs& args, const float* q_row, int32_t q_pos,
                                float* scores);
}  // namespace ref

}  // namespace lazyllm::kernels
