// AVX2 + FMA fp32 attention kernels (attention_isa.h) for CPUs without AVX-512: queries in
// lanes for full tiles, keys in lanes for tiles with few real lanes (decode), and the tile
// finalize. Same contracts as attention_avx512.cpp; a tile's 16 lanes are two 8-wide halves.
//
// K/V rows are fp32 or IEEE half (converted with F16C VCVTPH2PS, exact), at row j or kv_row[j].
// Kernels are instantiated per head_dim D (K/V rows at constant offsets) and element type T
// (float, or uint16_t for half bits). Register budget: 16 ymm registers, so every inner loop
// keeps at most 8 accumulators (8 independent FMA chains: 2 FMA ports x 4 cycles latency on
// Zen 3) plus its operands.
#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/attention_isa.h"
#include "kernels/gemm_convert.h"
#include "kernels/ops_simd_avx2.h"

namespace lazyllm::kernels::detail {

namespace {

constexpr int kHalf = 8;                     // lanes per __m256
constexpr int kHalves = kAttnLanes / kHalf;  // 2
constexpr int kTileKeys = 16;                // keys per block, queries in lanes
constexpr int kKeyGroup = 4;                 // keys per S^T register block (4 x 2 halves)
constexpr int kDimGroup = 4;                 // head dims per O^T register block (4 x 2 halves)
constexpr int kLaneKeys = 8;                 // keys per block, keys in lanes
// Keys in lanes: prefetch distance into L2 and lazy-rescale threshold, as attention_avx512.cpp
// (a decode step streams every layer's cache from beyond L2; P <= 2^8 keeps fp32 exact enough).
constexpr int64_t kPrefetchKeys = 64;
constexpr float kRescaleLog2 = 8.0f;

inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// fp32 rows of keys [j0, j0 + nj) of one KV head (head_base = a.k or a.v plus the head's
// offset): pointers into the cache when T is float, else into `buf` ([NB][D], converted once
// per block). Rows jj >= nj repeat row nj - 1.
template <int D, int NB, typename T>
inline void block_rows(const AttentionArgs& a, const T* head_base, int64_t j0, int nj, float* buf,
                       const float* rows[NB]) {
    for (int jj = 0; jj < nj; ++jj) {
        const T* src = head_base + kv_row_of(a, j0 + jj) * a.kv_stride;
        if constexpr (std::is_same_v<T, float>) {
            rows[jj] = src;
        } else {
            float* dst = buf + jj * D;
#pragma GCC unroll 16
            for (int c = 0; c < D; c += kHalf) _mm256_store_ps(dst + c, load8(src + c));
            rows[jj] = dst;
        }
    }
    for (int jj = nj; jj < NB; ++jj) rows[jj] = rows[nj - 1];
}

// Queries in lanes. Per block of 16 keys:
//   S^T[16 keys][16 lanes] = K_blk . Q^T, 4 keys x 2 halves in registers (broadcast K element
//     x Q^T row: no horizontal sums), written to `sp` in L1;
//   mask by position, then the online softmax (FlashAttention-2, Dao 2023, Alg. 1) vertically
//     per lane in the log2 domain, P^T overwriting S^T;
//   O^T[D][16] = alpha * O^T + sum_j V[j][d] * P^T[j], 4 dims x 2 halves in registers over
//     the whole block, so O^T (in st.o, L1) is read and written once per block.
template <int D, typename T>
void tile_kernel(const AttentionArgs& a, const AttnTile& t, int64_t j_begin, int64_t j_end,
                 AttnState& st) {
    static_assert(D % kDimGroup == 0 && D % kHalf == 0);
    alignas(32) float qt[D * kAttnLanes];          // [D][16] Q^T, prescaled by scale * log2(e)
    alignas(32) float kbuf[kTileKeys * D];         // [16][D] f16 key rows as fp32
    alignas(32) float vbuf[kTileKeys * D];         // [16][D] f16 value rows as fp32
    alignas(32) float sp[kTileKeys * kAttnLanes];  // [16 keys][16 lanes] S^T, then P^T
    alignas(32) float alpha[kAttnLanes];           // this block's O rescale per lane
    const float q_scale = a.scale * kLog2e;
    for (int lane = 0; lane < kAttnLanes; ++lane) {
        const float* q = a.q + t.row[lane] * a.q_stride + static_cast<int64_t>(t.head[lane]) * D;
        for (int d = 0; d < D; ++d) qt[d * kAttnLanes + lane] = q[d] * q_scale;
    }
    float* ot = st.o;  // [D][16]
    std::memset(ot, 0, sizeof(float) * D * kAttnLanes);
    std::fill(st.m, st.m + kAttnLanes, kAttnMaxInit);
    std::fill(st.l, st.l + kAttnLanes, 0.0f);

    const __m256 neg_inf = _mm256_set1_ps(-__builtin_inff());
    const T* k_head = static_cast<const T*>(a.k) + static_cast<int64_t>(t.kv_head) * D;
    const T* v_head = static_cast<const T*>(a.v) + static_cast<int64_t>(t.kv_head) * D;

    for (int64_t j0 = j_begin; j0 < j_end; j0 += kTileKeys) {
        const int nj = static_cast<int>(std::min<int64_t>(kTileKeys, j_end - j0));
        const float* k_rows[kTileKeys];
        const float* v_rows[kTileKeys];
        block_rows<D, kTileKeys>(a, k_head, j0, nj, kbuf, k_rows);
        block_rows<D, kTileKeys>(a, v_head, j0, nj, vbuf, v_rows);

        // S^T for keys [0, nj) rounded up to the key group (extra rows repeat a row, unused).
        for (int jg = 0; jg < nj; jg += kKeyGroup) {
            __m256 acc[kKeyGroup][kHalves];
#pragma GCC unroll 4
            for (int k = 0; k < kKeyGroup; ++k) {
                acc[k][0] = _mm256_setzero_ps();
                acc[k][1] = _mm256_setzero_ps();
            }
#pragma GCC unroll 4
            for (int d = 0; d < D; ++d) {
                const __m256 q0 = _mm256_load_ps(qt + d * kAttnLanes);
                const __m256 q1 = _mm256_load_ps(qt + d * kAttnLanes + kHalf);
#pragma GCC unroll 4
                for (int k = 0; k < kKeyGroup; ++k) {
                    const __m256 kb = _mm256_broadcast_ss(k_rows[jg + k] + d);
                    acc[k][0] = _mm256_fmadd_ps(kb, q0, acc[k][0]);
                    acc[k][1] = _mm256_fmadd_ps(kb, q1, acc[k][1]);
                }
            }
#pragma GCC unroll 4
            for (int k = 0; k < kKeyGroup; ++k) {
                _mm256_store_ps(sp + (jg + k) * kAttnLanes, acc[k][0]);
                _mm256_store_ps(sp + (jg + k) * kAttnLanes + kHalf, acc[k][1]);
            }
        }
        const bool masked = j0 + nj > t.n_vis_min;  // some key not visible to every lane
        for (int h = 0; h < kHalves; ++h) {
            float* s_h = sp + h * kHalf;
            if (masked) {
                const __m256i q_pos =
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.pos + h * kHalf));
                for (int jj = 0; jj < nj; ++jj) {
                    const __m256i hidden =
                        _mm256_cmpgt_epi32(_mm256_set1_epi32(a.kv_pos[j0 + jj]), q_pos);
                    _mm256_store_ps(s_h + jj * kAttnLanes,
                                    _mm256_blendv_ps(_mm256_load_ps(s_h + jj * kAttnLanes), neg_inf,
                                                     _mm256_castsi256_ps(hidden)));
                }
            }
            __m256 block_max = _mm256_load_ps(s_h);
            for (int jj = 1; jj < nj; ++jj) {
                block_max = _mm256_max_ps(block_max, _mm256_load_ps(s_h + jj * kAttnLanes));
            }
            const __m256 m_old = _mm256_load_ps(st.m + h * kHalf);
            const __m256 m_new = _mm256_max_ps(m_old, block_max);
            _mm256_store_ps(alpha + h * kHalf, simd256::exp2(_mm256_sub_ps(m_old, m_new)));
            _mm256_store_ps(st.m + h * kHalf, m_new);
            __m256 p_sum = _mm256_setzero_ps();
            for (int jj = 0; jj < nj; ++jj) {
                const __m256 p =
                    simd256::exp2(_mm256_sub_ps(_mm256_load_ps(s_h + jj * kAttnLanes), m_new));
                p_sum = _mm256_add_ps(p_sum, p);
                _mm256_store_ps(s_h + jj * kAttnLanes, p);
            }
            _mm256_store_ps(st.l + h * kHalf,
                            _mm256_fmadd_ps(_mm256_load_ps(st.l + h * kHalf),
                                            _mm256_load_ps(alpha + h * kHalf), p_sum));
        }

        const __m256 alpha0 = _mm256_load_ps(alpha);
        const __m256 alpha1 = _mm256_load_ps(alpha + kHalf);
        for (int c = 0; c < D; c += kDimGroup) {
            __m256 acc[kDimGroup][kHalves];
#pragma GCC unroll 4
            for (int i = 0; i < kDimGroup; ++i) {
                acc[i][0] = _mm256_mul_ps(_mm256_loadu_ps(ot + (c + i) * kAttnLanes), alpha0);
                acc[i][1] =
                    _mm256_mul_ps(_mm256_loadu_ps(ot + (c + i) * kAttnLanes + kHalf), alpha1);
            }
            for (int jj = 0; jj < nj; ++jj) {
                const __m256 p0 = _mm256_load_ps(sp + jj * kAttnLanes);
                const __m256 p1 = _mm256_load_ps(sp + jj * kAttnLanes + kHalf);
#pragma GCC unroll 4
                for (int i = 0; i < kDimGroup; ++i) {
                    const __m256 vb = _mm256_broadcast_ss(v_rows[jj] + c + i);
                    acc[i][0] = _mm256_fmadd_ps(vb, p0, acc[i][0]);
                    acc[i][1] = _mm256_fmadd_ps(vb, p1, acc[i][1]);
                }
            }
#pragma GCC unroll 4
            for (int i = 0; i < kDimGroup; ++i) {
                _mm256_storeu_ps(ot + (c + i) * kAttnLanes, acc[i][0]);
                _mm256_storeu_ps(ot + (c + i) * kAttnLanes + kHalf, acc[i][1]);
            }
        }
    }
}

// s[j] = sum of the 8 elements of acc[j].
inline __m256 hsum8(const __m256 acc[8]) {
    const __m256 t0 = _mm256_hadd_ps(acc[0], acc[1]);
    const __m256 t1 = _mm256_hadd_ps(acc[2], acc[3]);
    const __m256 t2 = _mm256_hadd_ps(acc[4], acc[5]);
    const __m256 t3 = _mm256_hadd_ps(acc[6], acc[7]);
    // Per 128-bit half: the half-row sums of acc[0..3] (u0) and acc[4..7] (u1).
    const __m256 u0 = _mm256_hadd_ps(t0, t1);
    const __m256 u1 = _mm256_hadd_ps(t2, t3);
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
                         _mm256_permute2f128_ps(u0, u1, 0x31));
}

inline float reduce_max8(__m256 v) {
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    x = _mm_max_ss(x, _mm_shuffle_ps(x, x, 1));
    return _mm_cvtss_f32(x);
}

inline float reduce_add8(__m256 v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_shuffle_ps(x, x, 1));
    return _mm_cvtss_f32(x);
}

// Largest divisor of n that is at most 8: O-row vectors held in registers at once.
constexpr int row_chunk(int n) {
    for (int c = 8; c > 1; --c) {
        if (n % c == 0) return c;
    }
    return 1;
}

// Keys in lanes (few lanes: decode, a GQA group of 1-4 heads per KV head). Per block of 8
// keys and tile: the block's K and V rows of the tile's KV head (converted once), then per
// lane 8 dot products as per-key partial vectors reduced to one vector of 8 scores, the
// online-softmax update against a lazily raised reference max (kRescaleLog2), and
// O += P . V with the lane's O row in registers (in chunks of at most 8 vectors). Blocks
// visit the tiles in order, so with the tiles of every KV head the rows are streamed once,
// whole, front to back.
// While running, states[i].o holds O as [lane][D] and then the P sums as [lane][8]; O is
// transposed to [D][16] and the sums reduced into states[i].l at the end.
template <int D, typename T>
void lanes_kernel(const AttentionArgs& a, const AttnTile* tiles, int n_tiles, int64_t j_begin,
                  int64_t j_end, AttnState* states) {
    constexpr int kVec = D / kHalf;
    constexpr int kChunk = row_chunk(kVec);
    alignas(32) float kbuf[kLaneKeys * D];  // [8][D] f16 rows converted (T = uint16_t)
    alignas(32) float vbuf[kLaneKeys * D];
    alignas(32) float p_buf[kAttnFewLanes][kLaneKeys];  // scores, then probabilities
    const float q_scale = a.scale * kLog2e;
    const T* k_base = static_cast<const T*>(a.k);
    const T* v_base = static_cast<const T*>(a.v);
    constexpr int kSumOffset = kAttnFewLanes * D;  // P sums after the O rows
    static_assert(kAttnFewLanes * (D + kLaneKeys) <= kAttnLanes * D);
    int head_lo = tiles[0].kv_head, head_hi = tiles[0].kv_head;
    for (int i = 0; i < n_tiles; ++i) {
        head_lo = std::min(head_lo, tiles[i].kv_head);
        head_hi = std::max(head_hi, tiles[i].kv_head);
        std::fill(states[i].m, states[i].m + kAttnLanes, kAttnMaxInit);
        std::memset(states[i].o, 0, sizeof(float) * kAttnFewLanes * (D + kLaneKeys));
    }
    const int64_t pf_offset = static_cast<int64_t>(head_lo) * D;
    const int64_t pf_bytes = static_cast<int64_t>(head_hi - head_lo + 1) * D * sizeof(T);
    const __m256 neg_inf = _mm256_set1_ps(-__builtin_inff());
    const __m256i lane_idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

    for (int64_t j0 = j_begin; j0 < j_end; j0 += kLaneKeys) {
        const int nj = static_cast<int>(std::min<int64_t>(kLaneKeys, j_end - j0));
        const __m256i valid = _mm256_cmpgt_epi32(_mm256_set1_epi32(nj), lane_idx);
        const __m256i key_pos = _mm256_blendv_epi8(
            _mm256_set1_epi32(INT32_MAX), _mm256_maskload_epi32(a.kv_pos + j0, valid), valid);
        const int64_t jp_end = std::min(j_end, j0 + kPrefetchKeys + kLaneKeys);
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
            const float* k_rows[kLaneKeys];
            const float* v_rows[kLaneKeys];
            block_rows<D, kLaneKeys>(a, k_base + head_off, j0, nj, kbuf, k_rows);
            block_rows<D, kLaneKeys>(a, v_base + head_off, j0, nj, vbuf, v_rows);
            for (int lane = 0; lane < t.n_lanes; ++lane) {
                const float* q =
                    a.q + t.row[lane] * a.q_stride + static_cast<int64_t>(t.head[lane]) * D;
                __m256 acc[kLaneKeys];
#pragma GCC unroll 8
                for (int jj = 0; jj < kLaneKeys; ++jj) acc[jj] = _mm256_setzero_ps();
                for (int c = 0; c < kVec; ++c) {
                    const __m256 qv = _mm256_loadu_ps(q + kHalf * c);
#pragma GCC unroll 8
                    for (int jj = 0; jj < kLaneKeys; ++jj) {
                        acc[jj] =
                            _mm256_fmadd_ps(qv, _mm256_loadu_ps(k_rows[jj] + kHalf * c), acc[jj]);
                    }
                }
                const __m256 s = _mm256_mul_ps(hsum8(acc), _mm256_set1_ps(q_scale));
                const __m256i hidden = _mm256_cmpgt_epi32(key_pos, _mm256_set1_epi32(t.pos[lane]));
                const __m256 s_vis = _mm256_blendv_ps(s, neg_inf, _mm256_castsi256_ps(hidden));

                // Online softmax against the lazily raised reference max.
                float* l_acc = st.o + kSumOffset + lane * kLaneKeys;
                float m = st.m[lane];
                float alpha = 1.0f;
                const __m256 over =
                    _mm256_cmp_ps(s_vis, _mm256_set1_ps(m + kRescaleLog2), _CMP_GT_OQ);
                if (_mm256_movemask_ps(over) != 0) {
                    const float block_max = reduce_max8(s_vis);
                    alpha = std::exp2(m - block_max);
                    m = block_max;
                    st.m[lane] = m;
                    _mm256_storeu_ps(l_acc,
                                     _mm256_mul_ps(_mm256_loadu_ps(l_acc), _mm256_set1_ps(alpha)));
                }
                const __m256 p = simd256::exp2(_mm256_sub_ps(s_vis, _mm256_set1_ps(m)));
                _mm256_storeu_ps(l_acc, _mm256_add_ps(_mm256_loadu_ps(l_acc), p));
                _mm256_store_ps(p_buf[lane], p);

                // O row += P . V (keys past nj have p = 0 and are skipped).
                float* o = st.o + lane * D;
                const __m256 alpha_v = _mm256_set1_ps(alpha);
                for (int c0 = 0; c0 < kVec; c0 += kChunk) {
                    __m256 o_acc[kChunk];
#pragma GCC unroll 8
                    for (int c = 0; c < kChunk; ++c) {
                        o_acc[c] = _mm256_mul_ps(_mm256_loadu_ps(o + kHalf * (c0 + c)), alpha_v);
                    }
                    for (int jj = 0; jj < nj; ++jj) {
                        const __m256 pb = _mm256_broadcast_ss(p_buf[lane] + jj);
#pragma GCC unroll 8
                        for (int c = 0; c < kChunk; ++c) {
                            o_acc[c] = _mm256_fmadd_ps(
                                pb, _mm256_loadu_ps(v_rows[jj] + kHalf * (c0 + c)), o_acc[c]);
                        }
                    }
#pragma GCC unroll 8
                    for (int c = 0; c < kChunk; ++c) {
                        _mm256_storeu_ps(o + kHalf * (c0 + c), o_acc[c]);
                    }
                }
            }
        }
    }
    // [lane][D] -> [D][16], the AttnState layout; padding lanes are zero.
    alignas(32) float tmp[kAttnFewLanes * D];
    for (int i = 0; i < n_tiles; ++i) {
        const int n_lanes = std::min(tiles[i].n_lanes, kAttnFewLanes);
        for (int lane = 0; lane < kAttnLanes; ++lane) {
            states[i].l[lane] =
                lane < n_lanes
                    ? reduce_add8(_mm256_loadu_ps(states[i].o + kSumOffset + lane * kLaneKeys))
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

void attention_tile_avx2(const AttentionArgs& a, const AttnTile& t, int64_t j_begin, int64_t j_end,
                         AttnState& st) {
    if (t.n_lanes <= kAttnFewLanes) {
        attention_lanes_avx2(a, &t, 1, j_begin, j_end, &st);
        return;
    }
    with_kernel_types(a, [&]<int D, typename T>() { tile_kernel<D, T>(a, t, j_begin, j_end, st); });
}

void attention_lanes_avx2(const AttentionArgs& a, const AttnTile* tiles, int n_tiles,
                          int64_t j_begin, int64_t j_end, AttnState* states) {
    with_kernel_types(a, [&]<int D, typename T>() {
        lanes_kernel<D, T>(a, tiles, n_tiles, j_begin, j_end, states);
    });
}

// O(head_dim * 16) per tile against O(head_dim * 16 * keys) for the kernels: a plain strided
// loop, bf16 rounding by the reference conversion.
void attention_finalize_avx2(const AttentionArgs& a, const AttnTile& t, const AttnState& st) {
    const int d = a.head_dim;
    alignas(32) float row[kAttnLanes * 16];  // one output head row; head_dim <= 256
    for (int lane = 0; lane < t.n_lanes; ++lane) {
        const float inv = st.l[lane] > 0.0f ? 1.0f / st.l[lane] : 0.0f;
        const int64_t off = t.row[lane] * a.out_stride + static_cast<int64_t>(t.head[lane]) * d;
        float* dst = a.out16 != nullptr ? row : a.out + off;
        for (int c = 0; c < d; ++c) dst[c] = st.o[c * kAttnLanes + lane] * inv;
        if (a.out16 != nullptr) convert_rows_to_bf16_ref(row, 1, d, d, a.out16 + off, d);
    }
}

}  // namespace lazyllm::kernels::detail
