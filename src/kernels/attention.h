// Causal grouped-query attention by absolute position, over an arbitrary (sorted) key set, so
// that pruned steps can attend to any subset of the context. Tiled (flash-style online
// softmax): no [n_q, n_kv] buffer, so an 8k prompt needs O(tile) scratch per thread.
//
// K and V are read where they live: fp32 or IEEE half rows, either the first n_kv rows or the
// rows named by kv_row (a pruned key set read straight from the position-addressed KV cache,
// no gather). Arithmetic is fp32 unless AttentionArgs::bf16 allows bf16 products; half values
// are converted exactly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu.h"

namespace lazyllm::kernels {

// Element type of K and V. kF16 (IEEE binary16, llama.cpp's default cache type) halves the
// bytes a decode step streams; kF32 keeps the reference path exact.
enum class KvType : uint8_t { kF32, kF16 };

inline size_t kv_type_size(KvType t) { return t == KvType::kF16 ? 2 : 4; }

struct AttentionArgs {
    const float* q = nullptr;        // [n_q, q_stride], head h at h*head_dim (RoPE applied)
    const int32_t* q_pos = nullptr;  // [n_q] absolute positions
    int64_t n_q = 0;
    int64_t q_stride = 0;
    // Elements of kv_type (RoPE applied): kv head g of cache row r at r * kv_stride + g *
    // kv_head_stride, head_dim contiguous elements. Key j is row kv_row[j], or row j when kv_row
    // is null. Heads side by side in a row (kv_head_stride 0 or head_dim), or each head's rows
    // in a block of their own (kv_stride == head_dim: the model's cache, which a decode step
    // then reads head by head in address order).
    const void* k = nullptr;
    const void* v = nullptr;
    KvType kv_type = KvType::kF32;
    const int32_t* kv_row = nullptr;  // [n_kv] or null
    const int32_t* kv_pos = nullptr;  // [n_kv] absolute positions, strictly increasing
    int64_t n_kv = 0;
    int64_t kv_stride = 0;       // in elements
    int64_t kv_head_stride = 0;  // in elements; 0: head_dim
    int n_head = 0;
    int n_head_kv = 0;  // n_head % n_head_kv == 0; query head h uses kv head h / (n_head/n_head_kv)
    int head_dim = 0;
    float scale = 0.0f;    // usually 1/sqrt(head_dim)
    // Sliding-window layers (Gemma 3's local layers): > 0 also hides keys at or more than
    // `window` positions before the query (visible iff q_pos - window < kv_pos <= q_pos).
    int32_t window = 0;
    // bf16 products allowed: Q, K, the probabilities and V may be rounded to bf16 (softmax and
    // sums stay fp32) where a kernel has them: AMX, or AVX-512-BF16 (prefill-sized calls).
    // The model sets it where its linear layers run bf16; false keeps every path fp32.
    bool bf16 = false;
    // The rows of a prompt step: the bf16 tiles where bf16 is allowed, else fp32 tiles with
    // queries in lanes, however few the queries, and keys never split across threads, so that
    // a row's output depends on its own query and keys only, not on the other rows of the call
    // (a prompt continued over a cached prefix gives the values of the same prompt run whole).
    bool row_invariant = false;
    // If set, the call also writes LazyLLM's score of its last query row here ([n_kv]), the
    // values attention_scores_head_mean gives, bit for bit. A decode call (a step's row and the
    // rows revived into it, on the keys-in-lanes kernel: attention_scores_from_pass) takes the
    // logits from its own pass over K; any other call runs attention_scores_head_mean first.
    float* scores = nullptr;
    float* out = nullptr;  // [n_q, out_stride], head h at h*head_dim
    int64_t out_stride = 0;
    // If set, the output goes here instead, as bf16 bits rounded to nearest even (the values
    // the bf16 GEMMs would round `out` to), same layout and stride; `out` is not written.
    uint16_t* out16 = nullptr;
};

// Whether key position kp is visible to a query at position qp.
inline bool key_visible(const AttentionArgs& a, int32_t kp, int32_t qp) {
    return kp <= qp && (a.window <= 0 || qp - kp < a.window);
}

// Elements from a cache row's start to its kv head g (see AttentionArgs::kv_head_stride).
inline int64_t kv_head_offset(const AttentionArgs& a, int g) {
    return static_cast<int64_t>(g) * (a.kv_head_stride != 0 ? a.kv_head_stride : a.head_dim);
}

// Whether a cache row holds its kv heads side by side (else each head's rows are a block).
inline bool kv_heads_in_rows(const AttentionArgs& a) {
    return a.kv_head_stride == 0 || a.kv_head_stride == a.head_dim;
}

// The cache row of key j (see AttentionArgs::kv_row).
inline int64_t kv_row_of(const AttentionArgs& a, int64_t j) {
    return a.kv_row != nullptr ? a.kv_row[j] : j;
}

// Key j is visible to query i iff kv_pos[j] <= q_pos[i] (and, with a window, q_pos[i] -
// kv_pos[j] < window). A query with no visible key gets zeros (cannot happen when a token
// attends to itself).
void attention(const KernelContext& ctx, const AttentionArgs& args);

// Whether attention(ctx, args) with args.scores set takes the score from its own pass over the
// keys (args.scores itself aside): a few rows on the keys-in-lanes kernel, no window, the last
// row the latest. Otherwise the call computes the score apart first.
bool attention_scores_from_pass(const KernelContext& ctx, const AttentionArgs& args);

// LazyLLM's importance score (paper Eq. 1): for the query row `q_row` ([q_stride], one
// position q_pos), s_j = mean over the n_head heads of softmax_j(q . k_j * scale) over the
// visible keys j (as attention(): kv_pos[j] <= q_pos, within the window; invisible keys get
// 0). fp32. scores: [n_kv].
void attention_scores_head_mean(const KernelContext& ctx, const AttentionArgs& args,
                                const float* q_row, int32_t q_pos, float* scores);

// KV cache write: row i of src ([n_rows, width] fp32 at src_stride) goes to row rows[i] of dst
// ([*, dst_stride] elements of `type`). f16 rounds to nearest even, with the same bits on
// every path (F16C's VCVTPS2PH and the scalar conversion agree).
void kv_store_rows(const KernelContext& ctx, KvType type, const float* src, int64_t src_stride,
                   int64_t n_rows, int64_t width, const int32_t* rows, void* dst,
                   int64_t dst_stride);

namespace ref {
void attention(const AttentionArgs& args);
// The same over chunks of 8 query rows on the context's threads (a bf16 output rounded from fp32
// rows as the GEMMs round their input): the fallback of attention() without SIMD kernels.
void attention_parallel(const KernelContext& ctx, const AttentionArgs& args);
void attention_scores_head_mean(const AttentionArgs& args, const float* q_row, int32_t q_pos,
                                float* scores);
void kv_store_rows(KvType type, const float* src, int64_t src_stride, int64_t n_rows, int64_t width,
                   const int32_t* rows, void* dst, int64_t dst_stride);
// Key j's head_dim elements of kv head `kv_head` in `base` (a.k or a.v) as fp32: out [head_dim].
void load_kv_row(const AttentionArgs& a, const void* base, int64_t j, int kv_head, float* out);
}  // namespace ref

}  // namespace lazyllm::kernels
