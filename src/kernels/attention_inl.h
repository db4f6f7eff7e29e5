// The fp32 attention kernels (attention_isa.h) written once against Vec<I> (simd.h): queries in
// lanes for full tiles, keys in lanes for tiles with few real lanes (decode). Included only by
// attention_avx2.cpp and attention_avx512.cpp, which instantiate them with
// LAZYLLM_ATTENTION_INSTANTIATE.
//
// A tile's 16 lanes are kHalves = 16 / kWidth vectors. K/V rows are fp32 or IEEE half
// (converted exactly by Vec::load), at row j or kv_row[j]. Kernels are instantiated per
// head_dim D (K/V rows at constant offsets) and element type T (float, or uint16_t for half
// bits). How a target blocks the work for its register file is AttnPlan<I>; every plan computes
// each output element with the same operations in the same order for its target.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/attention_isa.h"

namespace lazyllm::kernels::detail {

// Register blocking per target.
template <Isa I>
struct AttnPlan;
// 16 ymm registers: every inner loop keeps at most 8 accumulators (8 independent FMA chains:
// 2 FMA ports x 4 cycles latency on Zen 3) plus its operands; S^T of a block goes through L1.
template <>
struct AttnPlan<Isa::kAvx2> {
    static constexpr int kKeyGroup = 4;        // keys per S^T register block (x 2 halves)
    static constexpr int kDimGroup = 4;        // head dims per O^T register block (x 2 halves)
    static constexpr bool kCopyBlock = false;  // fp32 K/V rows read in place
    static constexpr bool kPadKeys = false;    // blocks past the last key stop at nj keys
    static constexpr bool kMulFirst = false;   // keys in lanes: dot products start at 0
    static constexpr bool kLanePairs = false;  // P.V one lane at a time ...
    static constexpr int kChains = 1;          // ... in one FMA chain per vector ...
    static constexpr bool kWholeRow = false;   // ... over at most 8 vectors of the O row
};
// 32 zmm registers: S^T of a whole block of 16 keys stays in registers.
template <>
struct AttnPlan<Isa::kAvx512> {
    static constexpr int kKeyGroup = 16;
    static constexpr int kDimGroup = 1;
    static constexpr bool kCopyBlock = true;  // the block always copied: constant row offsets
    static constexpr bool kPadKeys = true;    // padding keys run masked (p = 0)
    static constexpr bool kMulFirst = true;
    static constexpr bool kLanePairs = true;  // P.V over lane pairs, sharing each V load ...
    static constexpr int kChains = 2;         // ... a single lane in two chains (even/odd keys)
    static constexpr bool kWholeRow = true;   // ... with the whole O row in registers
};

namespace {

constexpr int kTileKeys = 16;  // keys per block, queries in lanes
// Keys in lanes prefetches the K/V rows this many keys ahead into L2. On the default model at a
// 4k context, 1 thread (Sapphire Rapids), decode attention takes 12 ms per token with it and 15
// without (a decode step streams every layer's cache from beyond L2); rows already in L2 (a
// microbenchmark repeating one layer) lose about 15% to the extra instructions.
constexpr int64_t kPrefetchKeys = 64;
// Keys in lanes: probabilities are taken relative to a running reference max that is raised
// only when a score exceeds it by more than this (log2 domain), so P <= 2^8 and the rescale
// (a horizontal max, an exp2, a pass over O) is rare (as in attention_amx.cpp).
constexpr float kRescaleLog2 = 8.0f;

// fp32 rows of keys [j0, j0 + nj) of one KV head (head_base = a.k or a.v plus the head's
// offset): pointers into the cache when T is float and !kCopy, else into `buf` ([NB][D],
// converted once per block). Rows jj >= nj repeat row nj - 1 (copied when kCopy).
template <Isa I, int D, int NB, bool kCopy, typename T>
inline void block_rows(const AttentionArgs& a, const T* head_base, int64_t j0, int nj, float* buf,
                       const float* rows[NB]) {
    using V = Vec<I>;
    constexpr bool kInPlace = std::is_same_v<T, float> && !kCopy;
    for (int jj = 0; jj < (kCopy ? NB : nj); ++jj) {
        const T* src = head_base + kv_row_of(a, j0 + std::min(jj, nj - 1)) * a.kv_stride;
        if constexpr (kInPlace) {
            rows[jj] = src;
        } else {
            float* dst = buf + jj * D;
#pragma GCC unroll 16
            for (int c = 0; c < D; c += V::kWidth) V::store_aligned(dst + c, V::load(src + c));
            rows[jj] = dst;
        }
    }
    if constexpr (!kCopy) {
        for (int jj = nj; jj < NB; ++jj) rows[jj] = rows[nj - 1];
    }
}

// Queries in lanes. Per block of 16 keys:
//   S^T[16 keys][16 lanes] = K_blk . Q^T, kKeyGroup keys x kHalves vectors in registers
//     (broadcast K element x Q^T row: no horizontal sums);
//   mask by position, then the online softmax (FlashAttention-2, Dao 2023, Alg. 1) vertically
//     per lane in the log2 domain, P^T overwriting S^T;
//   O^T[D][16] = alpha * O^T + sum_j V[j][d] * P^T[j], kDimGroup dims x kHalves vectors in
//     registers over the whole block, so O^T (in st.o, L1) is read and written once per block.
template <Isa I, int D, typename T>
void tile_kernel(const AttentionArgs& a, const AttnTile& t, int64_t j_begin, int64_t j_end,
                 AttnState& st) {
    using V = Vec<I>;
    using F = typename V::F;
    using P = AttnPlan<I>;
    constexpr int W = V::kWidth, kHalves = kAttnLanes / W;
    constexpr int KG = P::kKeyGroup, DG = P::kDimGroup;
    static_assert(D % DG == 0 && D % W == 0 && kTileKeys % KG == 0);
    alignas(64) float qt[D * kAttnLanes];   // [D][16] Q^T, prescaled by scale * log2(e)
    alignas(64) float kbuf[kTileKeys * D];  // [16][D] key rows as fp32 (copied or converted)
    alignas(64) float vbuf[kTileKeys * D];  // [16][D] value rows as fp32
    const float q_scale = a.scale * kLog2e;
    for (int lane = 0; lane < kAttnLanes; ++lane) {
        const float* q = a.q + t.row[lane] * a.q_stride + static_cast<int64_t>(t.head[lane]) * D;
        for (int d = 0; d < D; ++d) qt[d * kAttnLanes + lane] = q[d] * q_scale;
    }
    float* ot = st.o;  // [D][16]
    std::memset(ot, 0, sizeof(float) * D * kAttnLanes);
    F m[kHalves], l[kHalves], alpha[kHalves];
    typename V::Ints q_pos[kHalves], q_lo[kHalves];
    alignas(64) int32_t lo_thr[kAttnLanes];  // window_threshold per lane
    for (int lane = 0; lane < kAttnLanes; ++lane) lo_thr[lane] = window_threshold(a, t.pos[lane]);
    for (int h = 0; h < kHalves; ++h) {
        m[h] = V::set1(kAttnMaxInit);
        l[h] = V::zero();
        q_pos[h] = V::load_i32(t.pos + h * W);
        q_lo[h] = V::load_i32(lo_thr + h * W);
    }
    const T* k_head = static_cast<const T*>(a.k) + static_cast<int64_t>(t.kv_head) * D;
    const T* v_head = static_cast<const T*>(a.v) + static_cast<int64_t>(t.kv_head) * D;

    for (int64_t j0 = j_begin; j0 < j_end; j0 += kTileKeys) {
        const int nj = static_cast<int>(std::min<int64_t>(kTileKeys, j_end - j0));
        const int n_keys = P::kPadKeys ? kTileKeys : nj;
        const float* k_rows[kTileKeys];
        const float* v_rows[kTileKeys];
        block_rows<I, D, kTileKeys, P::kCopyBlock>(a, k_head, j0, nj, kbuf, k_rows);
        block_rows<I, D, kTileKeys, P::kCopyBlock>(a, v_head, j0, nj, vbuf, v_rows);
        const auto k_row = [&](int jj) { return P::kCopyBlock ? kbuf + jj * D : k_rows[jj]; };
        const auto v_row = [&](int jj) { return P::kCopyBlock ? vbuf + jj * D : v_rows[jj]; };

        // S^T for keys [0, n_keys) rounded up to the key group (extra rows repeat a row).
        F s[kTileKeys][kHalves];
        for (int jg = 0; jg < n_keys; jg += KG) {
            F acc[KG][kHalves];
#pragma GCC unroll 16
            for (int k = 0; k < KG; ++k) {
                for (int h = 0; h < kHalves; ++h) acc[k][h] = V::zero();
            }
#pragma GCC unroll 4
            for (int d = 0; d < D; ++d) {
                F q[kHalves];
                for (int h = 0; h < kHalves; ++h)
                    q[h] = V::load_aligned(qt + d * kAttnLanes + h * W);
#pragma GCC unroll 16
                for (int k = 0; k < KG; ++k) {
                    const F kb = V::broadcast(k_row(jg + k) + d);
                    for (int h = 0; h < kHalves; ++h) acc[k][h] = V::fmadd(kb, q[h], acc[k][h]);
                }
            }
#pragma GCC unroll 16
            for (int k = 0; k < KG; ++k) {
                for (int h = 0; h < kHalves; ++h) s[jg + k][h] = acc[k][h];
            }
        }
        // Some key not visible to every lane: hide it (padding keys at INT32_MAX).
        if (nj < n_keys || j0 + n_keys > t.n_vis_min) {
#pragma GCC unroll 16
            for (int jj = 0; jj < n_keys; ++jj) {
                const auto kp = V::set1_i32(jj < nj ? a.kv_pos[j0 + jj] : INT32_MAX);
                for (int h = 0; h < kHalves; ++h) s[jj][h] = V::hide_after(s[jj][h], kp, q_pos[h]);
            }
        }
        // Keys before some lane's sliding window (only with AttentionArgs::window).
        if (j0 < t.n_lo_max) {
            for (int jj = 0; jj < nj; ++jj) {
                const auto neg_kp = V::set1_i32(-a.kv_pos[j0 + jj]);
                for (int h = 0; h < kHalves; ++h) s[jj][h] = V::hide_after(s[jj][h], neg_kp, q_lo[h]);
            }
        }
        for (int h = 0; h < kHalves; ++h) {
            F block_max = s[0][h];
#pragma GCC unroll 16
            for (int jj = 1; jj < n_keys; ++jj) block_max = V::max(block_max, s[jj][h]);
            const F m_new = V::max(m[h], block_max);
            alpha[h] = V::exp2(V::sub(m[h], m_new));
            m[h] = m_new;
            F p_sum = V::zero();
#pragma GCC unroll 16
            for (int jj = 0; jj < n_keys; ++jj) {
                s[jj][h] = V::exp2(V::sub(s[jj][h], m_new));
                p_sum = V::add(p_sum, s[jj][h]);
            }
            l[h] = V::fmadd(l[h], alpha[h], p_sum);
        }
        for (int c = 0; c < D; c += DG) {
            F acc[DG][kHalves];
#pragma GCC unroll 4
            for (int i = 0; i < DG; ++i) {
                for (int h = 0; h < kHalves; ++h) {
                    acc[i][h] = V::mul(V::load(ot + (c + i) * kAttnLanes + h * W), alpha[h]);
                }
            }
#pragma GCC unroll 16
            for (int jj = 0; jj < n_keys; ++jj) {
#pragma GCC unroll 4
                for (int i = 0; i < DG; ++i) {
                    const F vb = V::broadcast(v_row(jj) + c + i);
                    for (int h = 0; h < kHalves; ++h) acc[i][h] = V::fmadd(vb, s[jj][h], acc[i][h]);
                }
            }
#pragma GCC unroll 4
            for (int i = 0; i < DG; ++i) {
                for (int h = 0; h < kHalves; ++h)
                    V::store(ot + (c + i) * kAttnLanes + h * W, acc[i][h]);
            }
        }
    }
    for (int h = 0; h < kHalves; ++h) {
        V::store_aligned(st.m + h * W, m[h]);
        V::store_aligned(st.l + h * W, l[h]);
    }
}

// Largest divisor of n that is at most 8: O-row vectors held in registers at once.
constexpr int row_chunk(int n) {
    for (int c = 8; c > 1; --c) {
        if (n % c == 0) return c;
    }
    return 1;
}

// O rows of NL lanes (o + l * D) = alpha[l] * O + sum_jj p[l][jj] * V[jj] over n_keys keys
// (padding keys have p = 0), kChunk vectors of each row in registers at a time: NL * kChunk
// independent FMA chains, each V load shared by the NL lanes; with kChains = 2 (one lane)
// even and odd keys go to two chains so that the FMA latency does not bound it.
template <Isa I, int D, int NL, int kChains, int kChunk>
inline void pv_update(float* o, const float (*p)[Vec<I>::kWidth], const float* alpha,
                      const float* const* v_rows, int n_keys) {
    using V = Vec<I>;
    constexpr int W = V::kWidth, kVec = D / W, kAcc = NL * kChains;
    static_assert(kChains == 1 || NL == 1);
    for (int c0 = 0; c0 < kVec; c0 += kChunk) {
        typename V::F acc[kAcc][kChunk];
#pragma GCC unroll 16
        for (int c = 0; c < kChunk; ++c) {
#pragma GCC unroll 2
            for (int l = 0; l < NL; ++l) {
                acc[l][c] = V::mul(V::load(o + l * D + W * (c0 + c)), V::set1(alpha[l]));
            }
            if constexpr (kChains == 2) acc[1][c] = V::zero();
        }
        for (int jj = 0; jj < n_keys; jj += kChains) {
#pragma GCC unroll 2
            for (int h = 0; h < kChains; ++h) {
#pragma GCC unroll 16
                for (int c = 0; c < kChunk; ++c) {
                    const auto v = V::load(v_rows[jj + h] + W * (c0 + c));
#pragma GCC unroll 2
                    for (int l = 0; l < NL; ++l) {
                        auto& acc_lc = acc[kChains == 2 ? h : l][c];
                        acc_lc = V::fmadd(V::set1(p[kChains == 2 ? 0 : l][jj + h]), v, acc_lc);
                    }
                }
            }
        }
#pragma GCC unroll 16
        for (int c = 0; c < kChunk; ++c) {
            if constexpr (kChains == 2) acc[0][c] = V::add(acc[0][c], acc[1][c]);
#pragma GCC unroll 2
            for (int l = 0; l < NL; ++l) V::store(o + l * D + W * (c0 + c), acc[l][c]);
        }
    }
}

// Keys in lanes (few lanes: decode, a GQA group of 1-4 heads per KV head). Per block of
// kWidth keys and tile: the block's K and V rows of the tile's KV head (converted once), then
// per lane kWidth dot products as per-key partial vectors reduced to one vector of scores
// (Vec::transpose_sum), the online-softmax update against a lazily raised reference max
// (kRescaleLog2), and O += P . V with the lane's O row in registers (pv_update). Blocks visit
// the tiles in order, so with the tiles of every KV head the rows are streamed once, whole,
// front to back.
// While running, states[i].o holds O as [lane][D] and then the P sums as [lane][kWidth]; O is
// transposed to [D][16] and the sums reduced into states[i].l at the end.
template <Isa I, int D, typename T>
void lanes_kernel(const AttentionArgs& a, const AttnTile* tiles, int n_tiles, int64_t j_begin,
                  int64_t j_end, AttnState* states) {
    using V = Vec<I>;
    using F = typename V::F;
    using P = AttnPlan<I>;
    constexpr int kKeys = V::kWidth;  // keys per block
    constexpr int kVec = D / kKeys;
    alignas(64) float kbuf[kKeys * D];  // [kKeys][D] f16 rows converted (T = uint16_t)
    alignas(64) float vbuf[kKeys * D];
    alignas(64) float p_buf[kAttnFewLanes][kKeys];  // scores, then probabilities
    float alpha[kAttnFewLanes];                     // per lane O rescale of this block
    const float q_scale = a.scale * kLog2e;
    const T* k_base = static_cast<const T*>(a.k);
    const T* v_base = static_cast<const T*>(a.v);
    constexpr int kSumOffset = kAttnFewLanes * D;  // P sums after the O rows
    static_assert(kAttnFewLanes * (D + kKeys) <= kAttnLanes * D);
    int head_lo = tiles[0].kv_head, head_hi = tiles[0].kv_head;
    int64_t lo_max = 0;  // keys before this may be outside some lane's sliding window
    for (int i = 0; i < n_tiles; ++i) {
        lo_max = std::max(lo_max, tiles[i].n_lo_max);
        head_lo = std::min(head_lo, tiles[i].kv_head);
        head_hi = std::max(head_hi, tiles[i].kv_head);
        std::fill(states[i].m, states[i].m + kAttnLanes, kAttnMaxInit);
        std::memset(states[i].o, 0, sizeof(float) * kAttnFewLanes * (D + kKeys));
    }
    // The part of each row the tiles read: KV heads [head_lo, head_hi] (the whole row when
    // the tiles are every KV head's).
    const int64_t pf_offset = static_cast<int64_t>(head_lo) * D;
    const int64_t pf_bytes = static_cast<int64_t>(head_hi - head_lo + 1) * D * sizeof(T);

    for (int64_t j0 = j_begin; j0 < j_end; j0 += kKeys) {
        const int nj = static_cast<int>(std::min<int64_t>(kKeys, j_end - j0));
        const int n_keys = P::kPadKeys ? kKeys : nj;
        const auto key_pos = V::load_i32(a.kv_pos + j0, nj, INT32_MAX);
        alignas(64) int32_t neg_kp[kKeys];  // -kv_pos for the window's test
        const bool windowed = j0 < lo_max;
        if (windowed) {
            for (int jj = 0; jj < kKeys; ++jj) neg_kp[jj] = jj < nj ? -a.kv_pos[j0 + jj] : -INT32_MAX;
        }
        const auto neg_key_pos = V::load_i32(neg_kp, windowed ? kKeys : 0, -INT32_MAX);
        const int64_t jp_end = std::min(j_end, j0 + kPrefetchKeys + kKeys);
        for (int64_t jp = j0 + kPrefetchKeys; jp < jp_end; ++jp) {
            const int64_t off = kv_row_of(a, jp) * a.kv_stride + pf_offset;
            const char* k_row = reinterpret_cast<const char*>(k_base + off);
            const char* v_row = reinterpret_cast<const char*>(v_base + off);
            for (int64_t b = 0; b < pf_bytes; b += 64) {
                _mm_prefetch(k_row + b, _MM_HINT_T1);
                _mm_prefetch(v_row + b, _MM_HINT_T1);
            }
        }
        for (int i = 0; i < n_tiles; ++i) {
            const AttnTile& t = tiles[i];
            AttnState& st = states[i];
            const int64_t head_off = static_cast<int64_t>(t.kv_head) * D;
            const float* k_rows[kKeys];
            const float* v_rows[kKeys];
            block_rows<I, D, kKeys, false>(a, k_base + head_off, j0, nj, kbuf, k_rows);
            block_rows<I, D, kKeys, false>(a, v_base + head_off, j0, nj, vbuf, v_rows);
            // Scores of every lane first, then their softmax updates, then P.V: independent
            // chains the core can overlap.
            for (int lane = 0; lane < t.n_lanes; ++lane) {
                const float* q =
                    a.q + t.row[lane] * a.q_stride + static_cast<int64_t>(t.head[lane]) * D;
                F acc[kKeys];
                const F q0 = V::load(q);
#pragma GCC unroll 16
                for (int jj = 0; jj < kKeys; ++jj) {
                    const F k0 = V::load(k_rows[jj]);
                    acc[jj] = P::kMulFirst ? V::mul(q0, k0) : V::fmadd(q0, k0, V::zero());
                }
                for (int c = 1; c < kVec; ++c) {
                    const F qv = V::load(q + kKeys * c);
#pragma GCC unroll 16
                    for (int jj = 0; jj < kKeys; ++jj) {
                        acc[jj] = V::fmadd(qv, V::load(k_rows[jj] + kKeys * c), acc[jj]);
                    }
                }
                F s = V::mul(V::transpose_sum(acc), V::set1(q_scale));
                s = V::hide_after(s, key_pos, V::set1_i32(t.pos[lane]));
                if (windowed) {  // sliding window
                    s = V::hide_after(s, neg_key_pos, V::set1_i32(window_threshold(a, t.pos[lane])));
                }
                V::store_aligned(p_buf[lane], s);
            }
            for (int lane = 0; lane < t.n_lanes; ++lane) {
                const F s = V::load_aligned(p_buf[lane]);
                float* l_acc = st.o + kSumOffset + lane * kKeys;
                float m = st.m[lane];
                alpha[lane] = 1.0f;
                if (V::any_gt(s, V::set1(m + kRescaleLog2))) {
                    const float block_max = V::reduce_max(s);
                    alpha[lane] = std::exp2(m - block_max);
                    m = block_max;
                    st.m[lane] = m;
                    V::store(l_acc, V::mul(V::load(l_acc), V::set1(alpha[lane])));
                }
                const F p = V::exp2(V::sub(s, V::set1(m)));
                V::store(l_acc, V::add(V::load(l_acc), p));
                V::store_aligned(p_buf[lane], p);
            }
            constexpr int kChunk = P::kWholeRow ? kVec : row_chunk(kVec);
            constexpr int kChains = P::kChains == 2 && kVec <= 8 ? 2 : 1;
            int lane = 0;
            if constexpr (P::kLanePairs && kVec <= 8) {
                for (; lane + 1 < t.n_lanes; lane += 2) {
                    pv_update<I, D, 2, 1, kChunk>(st.o + lane * D, p_buf + lane, alpha + lane,
                                                  v_rows, n_keys);
                }
            }
            for (; lane < t.n_lanes; ++lane) {
                pv_update<I, D, 1, kChains, kChunk>(st.o + lane * D, p_buf + lane, alpha + lane,
                                                    v_rows, n_keys);
            }
        }
    }
    // [lane][D] -> [D][16], the AttnState layout; padding lanes are zero.
    alignas(64) float tmp[kAttnFewLanes * D];
    for (int i = 0; i < n_tiles; ++i) {
        const int n_lanes = std::min(tiles[i].n_lanes, kAttnFewLanes);
        for (int lane = 0; lane < kAttnLanes; ++lane) {
            states[i].l[lane] =
                lane < n_lanes ? V::reduce_add(V::load(states[i].o + kSumOffset + lane * kKeys))
                               : 0.0f;
        }
        std::memcpy(tmp, states[i].o, sizeof(float) * n_lanes * D);
        std::memset(states[i].o, 0, sizeof(float) * D * kAttnLanes);
        for (int lane = 0; lane < n_lanes; ++lane) {
            for (int c = 0; c < D; ++c) states[i].o[c * kAttnLanes + lane] = tmp[lane * D + c];
        }
    }
}

}  // namespace

template <Isa I>
void attention_lanes(const AttentionArgs& a, const AttnTile* tiles, int n_tiles, int64_t j_begin,
                     int64_t j_end, AttnState* states) {
    with_kernel_types(a, [&]<int D, typename T>() {
        lanes_kernel<I, D, T>(a, tiles, n_tiles, j_begin, j_end, states);
    });
}

template <Isa I>
void attention_tile(const AttentionArgs& a, const AttnTile& t, int64_t j_begin, int64_t j_end,
                    AttnState& st) {
    if (t.n_lanes <= kAttnFewLanes) {
        attention_lanes<I>(a, &t, 1, j_begin, j_end, &st);
        return;
    }
    with_kernel_types(a,
                      [&]<int D, typename T>() { tile_kernel<I, D, T>(a, t, j_begin, j_end, st); });
}

}  // namespace lazyllm::kernels::detail

#define LAZYLLM_ATTENTION_INSTANTIATE(I)                                                      \
    template void lazyllm::kernels::detail::attention_tile<I>(                                \
        const AttentionArgs&, const detail::AttnTile&, int64_t, int64_t, detail::AttnState&); \
    template void lazyllm::kernels::detail::attention_lanes<I>(                               \
        const AttentionArgs&, const detail::AttnTile*, int, int64_t, int64_t, detail::AttnState*)
