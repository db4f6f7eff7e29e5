// Internal pieces of the tiled attention shared by the driver (attention.cpp) and the ISA
// kernels (attention_inl.h compiled as attention_avx2.cpp and attention_avx512.cpp;
// attention_amx.cpp).
//
// Layout: "queries in lanes". A tile is up to 16 query vectors that share one KV head: the
// flattened (query row, head within the GQA group) pairs of that KV head, 16 at a time, so
// one K/V load serves up to 16 queries even at n_q = 1 (GQA group of 3 -> 3 lanes). Scores
// are computed transposed, S^T[key][lane], which makes the online softmax purely vertical
// (per-lane max and sum, no horizontal reductions).
//
// Tiles with few real lanes (decode) use "keys in lanes" instead (attention_lanes): each K/V
// row of the tile's KV head is read once, for all its query heads, and over the model's cache
// (each KV head's rows in a block) in address order.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/scratch.h"
#include "kernels/attention.h"
#include "kernels/simd.h"

namespace lazyllm::kernels::detail {

constexpr int kAttnLanes = 16;
// Scores are kept in the log2 domain: queries are prescaled by scale * log2(e), so that
// softmax uses exp2. Running maxima start here instead of -inf so that a lane that has seen
// only masked keys never computes -inf - -inf.
constexpr float kAttnMaxInit = -1e30f;
constexpr float kLog2e = 1.4426950408889634f;

struct AttnTile {
    int n_lanes = 0;  // real lanes; padding lanes repeat lane 0 and are never written
    int kv_head = 0;
    int64_t row[kAttnLanes] = {};  // query row of each lane
    int head[kAttnLanes] = {};     // query head of each lane
    int32_t pos[kAttnLanes] = {};  // query position of each lane
    int64_t n_vis_min = 0;         // no key before n_vis_min is hidden from any lane by causality
    int64_t n_vis_max = 0;         // no lane sees a key at or after n_vis_max
    // Sliding window (AttentionArgs::window; both 0 without one): no lane sees a key before
    // n_lo_min, and the window hides no key at or after n_lo_max from any lane. Kernels scan
    // keys [n_lo_min, n_vis_max) and mask those outside [n_lo_max, n_vis_min).
    int64_t n_lo_min = 0;
    int64_t n_lo_max = 0;
};

// Whether the window hides key position kp from a lane at q_pos, as a comparison the kernels
// vectorize: -kp > window_threshold(a, q_pos), i.e. kp <= q_pos - window.
inline int32_t window_threshold(const AttentionArgs& a, int32_t q_pos) {
    return a.window - q_pos - 1;
}

// Online-softmax state of one tile over a key range: o = sum_j exp2(s_j - m) v_j (transposed,
// unnormalized), l = sum_j exp2(s_j - m), m = running max (log2 domain), all per lane.
struct AttnState {
    float* o = nullptr;  // [head_dim][kAttnLanes]
    alignas(64) float m[kAttnLanes];
    alignas(64) float l[kAttnLanes];
};

// head_dim values the fp32 kernels are instantiated for; others use the reference.
using Fp32HeadDims = std::integer_sequence<int, 32, 64, 80, 96, 128, 256>;

// Whether head_dim is one of the Ds (a kernel's instantiated head_dims).
template <int... Ds>
constexpr bool head_dim_in(std::integer_sequence<int, Ds...>, int head_dim) {
    return ((head_dim == Ds) || ...);
}

constexpr bool fp32_attention_head_dim_supported(int head_dim) {
    return head_dim_in(Fp32HeadDims{}, head_dim);
}
// Calls f.template operator()<D, T>() with D == a.head_dim, one of Fp32HeadDims (the driver
// checks; anything else traps), and T the K/V element type (float, or uint16_t for half
// bits): the ISA files' per-shape instantiations.
template <typename F>
inline void with_kernel_types(const AttentionArgs& a, F&& f) {
    const auto with_t = [&]<int D>() {
        if (a.kv_type == KvType::kF16) {
            f.template operator()<D, uint16_t>();
        } else {
            f.template operator()<D, float>();
        }
    };
    if (!with_value(a.head_dim, Fp32HeadDims{}, with_t)) __builtin_trap();
}
// Tiles with at most this many real lanes run keys in lanes.
constexpr int kAttnFewLanes = 6;

// The fp32 kernels, written once in attention_inl.h and instantiated for kAvx2
// (attention_avx2.cpp) and kAvx512 (attention_avx512.cpp); attention.cpp enters them through
// isa_dispatch.
// fp32 copies of K and V for one call with full tiles (prefill), head-major
// [n_head_kv][n_kv_pad][head_dim], in key order (kv_row resolved), zero rows past n_kv: the
// tiles read a block's rows at constant offsets, converted once per call instead of once per
// tile. A Workspace part, grow-only.
struct PackedKvF32 {
    int64_t n_kv_pad = 0;
    AlignedVector<float> k, v;
};
template <Isa I>
void pack_kv_f32(const KernelContext& ctx, const AttentionArgs& a, PackedKvF32& packed);
// Queries in lanes: keys [j_begin, j_end) of `a` for the tile, from `packed` (pack_kv_f32 of
// `a`); j_end <= t.n_vis_max. Initializes `st`, or with `resume` continues it (st holds this
// tile's state over keys before j_begin, from an earlier call). The driver gives tiles of
// at most kAttnFewLanes lanes to attention_lanes instead.
template <Isa I>
void attention_tile(const AttentionArgs& a, const PackedKvF32& packed, const AttnTile& t,
                    int64_t j_begin, int64_t j_end, AttnState& st, bool resume = false);
// Where attention_lanes also writes its lanes' score logits (the decode call that computes
// LazyLLM's score, AttentionArgs::scores): key j of query head h at base[h * ld + j - j_first],
// scale * q_h . k_j with group_logits' products in its order, so the same bits.
struct LaneLogits {
    float* base = nullptr;
    int64_t ld = 0;
    int64_t j_first = 0;
    int64_t row = 0;  // the scored query row: only its lanes store
};
// Keys in lanes for a tile of at most kAttnFewLanes lanes over keys [j_begin, j_end): each K/V
// row of its KV head is read (and converted from f16) once for all its lanes. Initializes st.
template <Isa I>
void attention_lanes(const AttentionArgs& a, const AttnTile& t, int64_t j_begin, int64_t j_end,
                     AttnState& st, const LaneLogits* logits = nullptr);

// out = o / l for the tile's real lanes (zeros where no key was visible): AVX-512
// (attention_avx512.cpp, also after the AMX kernel) and plain C++ (attention.cpp), with the
// same products and bf16 rounding.
void attention_finalize_avx512(const AttentionArgs& a, const AttnTile& t, const AttnState& st);
void attention_finalize_scalar(const AttentionArgs& a, const AttnTile& t, const AttnState& st);

// bf16 copies of K and V^T for one attention call, in blocks of kBf16KeyBlock keys, read by
// the AMX and the AVX-512-BF16 kernels (tile loads, pair broadcasts).
constexpr int kBf16KeyBlock = 32;
struct PackedKvBf16 {
    int64_t n_kv_pad = 0;        // n_kv rounded up to a multiple of 32 (zero padded)
    AlignedVector<uint16_t> k;   // [n_head_kv][n_kv_pad][head_dim] bf16
    AlignedVector<uint16_t> vt;  // [n_head_kv][n_kv_pad / 32][head_dim][32] bf16 (V^T blocks)
};
// attention_bf16_avx512.cpp; needs AVX-512-BF16.
void pack_kv_bf16(const KernelContext& ctx, const AttentionArgs& a, PackedKvBf16& packed);

// The bf16 tile kernels (AttentionArgs::bf16). Keys [j_begin, j_end) of the tile. They
// initialize `st`, or with `resume` continue it: st then holds this tile's state over keys
// before j_begin (an earlier call).
// AMX (attention_amx.cpp): sliding windows included; true for head_dim 64, 128 and 256 when
// the OS granted AMX tile state.
bool amx_attention_usable(const AttentionArgs& a);
void attention_tile_amx(const AttentionArgs& a, const PackedKvBf16& packed, const AttnTile& t,
                        int64_t j_begin, int64_t j_end, AttnState& st, bool resume = false);
// AVX-512-BF16 (attention_bf16_avx512.cpp): any j_begin, sliding windows included; head_dim
// 32, 64, 96, 128 or 256.
bool bf16_attention_usable(const AttentionArgs& a);
void attention_tile_bf16(const AttentionArgs& a, const PackedKvBf16& packed, const AttnTile& t,
                         int64_t j_begin, int64_t j_end, AttnState& st, bool resume = false);

// Checks the arguments of attention() and attention_scores_head_mean() (attention.cpp).
void validate_attention(const AttentionArgs& a);

// The LazyLLM score of one query row (attention_inl.h): logits[g * ld + j] = scale * q_g . k_j
// for the `group` query heads q_group (head after head) of KV head `kv_head` over keys
// [j_begin, j_end), j_begin a multiple of Vec<I>::kWidth, head_dim a multiple of it; then each
// head's softmax over its keys in place (n >= 1).
template <Isa I>
void group_logits(const AttentionArgs& a, const float* q_group, int group, int kv_head,
                  int64_t j_begin, int64_t j_end, float* logits, int64_t ld);
template <Isa I>
void softmax_in_place(float* probs, int64_t n);
// The score from its logits (attention_score.cpp): each head's softmax over probs[h * n_vis,
// + n_vis) in place, then scores[j] = mean over heads, scores[n_vis, n_kv) = 0. Its loops are
// OpenMP worksharing: inside a parallel region every thread of it must call this.
void head_mean_from_logits(const KernelContext& ctx, int n_head, int64_t n_vis, int64_t n_kv,
                           float* probs, float* scores);

// kv_store_rows (attention.h) with F16C conversions.
void kv_store_rows_avx512(KvType type, const float* src, int64_t src_stride, int64_t n_rows,
                          int64_t width, const int32_t* rows, void* dst, int64_t dst_stride);

}  // namespace lazyllm::kernels::detail
