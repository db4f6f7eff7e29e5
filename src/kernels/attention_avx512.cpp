// AVX-512 fp32 attention kernels (attention_isa.h): queries in lanes for full tiles, keys in
// lanes for tiles with few real lanes (decode), the vectorized pieces of the LazyLLM head-mean
// scores, and the f16 cache write.
//
// K/V rows are fp32 or IEEE half (converted with VCVTPH2PS, exact), at row j or kv_row[j].
// Kernels are instantiated per head_dim D (K/V rows at constant offsets) and element type T
// (float, or uint16_t for half bits).
#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/attention_isa.h"
#include "kernels/ops_simd_avx512.h"

namespace lazyllm::kernels::detail {

namespace {

constexpr int kKeyBlock = 16;
// Keys in lanes (decode) prefetches the K/V rows this many keys ahead into L2. Measured on the
// default model at a 4k context, 1 thread: decode attention 15 -> 12 ms per token (a decode
// step streams every layer's cache from beyond L2); rows already in L2 (a microbenchmark
// repeating one layer) lose about 15% to the extra instructions.
constexpr int64_t kPrefetchKeys = 64;
// Keys in lanes: probabilities are taken relative to a running reference max that is raised
// only when a score exceeds it by more than this (log2 domain), so P <= 2^8 and the rescale
// (a horizontal max, an exp2, a pass over O) is rare (as in attention_amx.cpp).
constexpr float kRescaleLog2 = 8.0f;

// 16 fp32 values from 16 elements of type T.
inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t* p) { return simd512::load_f16(p); }
inline __m512 load16_masked(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 load16_masked(const uint16_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

// fp32 rows of keys [j0, j0 + nj) of one KV head (head_base = a.k or a.v plus the head's
// offset): pointers into the cache when T is float, else into `buf` ([16][D], converted once
// for every lane that reads them). Rows jj >= nj repeat row nj - 1.
template <int D, typename T>
inline void block_rows(const AttentionArgs& a, const T* head_base, int64_t j0, int nj, float* buf,
                       const float* rows[kKeyBlock]) {
    for (int jj = 0; jj < nj; ++jj) {
        const T* src = head_base + kv_row_of(a, j0 + jj) * a.kv_stride;
        if constexpr (std::is_same_v<T, float>) {
            rows[jj] = src;
        } else {
            float* dst = buf + jj * D;
#pragma GCC unroll 16
            for (int c = 0; c < D; c += 16) _mm512_store_ps(dst + c, load16(src + c));
            rows[jj] = dst;
        }
    }
    for (int jj = nj; jj < kKeyBlock; ++jj) rows[jj] = rows[nj - 1];
}

// s[j] = sum of the 16 elements of acc[j]: pairwise interleaved adds, 30 shuffles (a full
// 16x16 transpose followed by adds takes 64).
inline __m512 hsum16(const __m512 acc[16]) {
    __m512 t[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
        // Per 128-bit block: [a0+a2, b0+b2, a1+a3, b1+b3] for a = acc[2i], b = acc[2i+1].
        t[i] = _mm512_add_ps(_mm512_unpacklo_ps(acc[2 * i], acc[2 * i + 1]),
                             _mm512_unpackhi_ps(acc[2 * i], acc[2 * i + 1]));
    }
    __m512 u[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
        // Per 128-bit block: the block's sums of acc[4i..4i+3].
        u[i] = _mm512_add_ps(_mm512_shuffle_ps(t[2 * i], t[2 * i + 1], 0x44),
                             _mm512_shuffle_ps(t[2 * i], t[2 * i + 1], 0xEE));
    }
    // Sum the four 128-bit blocks: pairs of blocks, then pairs of pairs.
    const __m512 z0 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], 0x88),
                                    _mm512_shuffle_f32x4(u[0], u[1], 0xDD));
    const __m512 z1 = _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], 0x88),
                                    _mm512_shuffle_f32x4(u[2], u[3], 0xDD));
    return _mm512_add_ps(_mm512_shuffle_f32x4(z0, z1, 0x88), _mm512_shuffle_f32x4(z0, z1, 0xDD));
}

// Per block of 16 keys: S^T[16 keys][16 lanes] = K_blk . Q^T (broadcast K element x Q^T row:
// 16 FMAs per head dimension, no horizontal sums), masked by position, then the online softmax
// update (FlashAttention-2, Dao 2023, Alg. 1) vertically per lane, then
// O^T[d][lanes] = alpha * O^T[d] + sum_j V[j][d] * P^T[j].
template <int D, typename T>
void tile_kernel(const AttentionArgs& a, const AttnTile& t, int64_t j_begin, int64_t j_end,
                 AttnState& st) {
    alignas(64) float qt[D * kAttnLanes];  // [D][16] Q^T, prescaled by scale * log2(e)
    alignas(64) float kb[kKeyBlock * D];   // [16][D] current key block (fp32)
    alignas(64) float vb[kKeyBlock * D];   // [16][D] current value block (fp32)
    const float q_scale = a.scale * kLog2e;
    for (int lane = 0; lane < kAttnLanes; ++lane) {
        const float* q = a.q + t.row[lane] * a.q_stride + static_cast<int64_t>(t.head[lane]) * D;
        for (int d = 0; d < D; ++d) qt[d * kAttnLanes + lane] = q[d] * q_scale;
    }
    float* ot = st.o;  // [D][16]
    std::memset(ot, 0, sizeof(float) * D * kAttnLanes);

    const __m512i q_pos = _mm512_loadu_si512(t.pos);
    const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
    __m512 m = _mm512_set1_ps(kAttnMaxInit);
    __m512 l = _mm512_setzero_ps();
    const T* k_head = static_cast<const T*>(a.k) + static_cast<int64_t>(t.kv_head) * D;
    const T* v_head = static_cast<const T*>(a.v) + static_cast<int64_t>(t.kv_head) * D;

    for (int64_t j0 = j_begin; j0 < j_end; j0 += kKeyBlock) {
        const int nj = static_cast<int>(std::min<int64_t>(kKeyBlock, j_end - j0));
        // Gather the block as fp32; rows past the range repeat the last one and are masked.
        for (int jj = 0; jj < kKeyBlock; ++jj) {
            const int64_t off = kv_row_of(a, j0 + std::min(jj, nj - 1)) * a.kv_stride;
            for (int c = 0; c < D; c += 16) {
                _mm512_store_ps(kb + jj * D + c, load16(k_head + off + c));
                _mm512_store_ps(vb + jj * D + c, load16(v_head + off + c));
            }
        }
        __m512 s[kKeyBlock];
#pragma GCC unroll 16
        for (int jj = 0; jj < kKeyBlock; ++jj) s[jj] = _mm512_setzero_ps();
        for (int d = 0; d < D; ++d) {
            const __m512 qv = _mm512_load_ps(qt + d * kAttnLanes);
#pragma GCC unroll 16
            for (int jj = 0; jj < kKeyBlock; ++jj) {
                s[jj] = _mm512_fmadd_ps(_mm512_set1_ps(kb[jj * D + d]), qv, s[jj]);
            }
        }
        if (nj < kKeyBlock || j0 + kKeyBlock > t.n_vis_min) {
#pragma GCC unroll 16
            for (int jj = 0; jj < kKeyBlock; ++jj) {
                const int32_t kp = jj < nj ? a.kv_pos[j0 + jj] : INT32_MAX;
                const __mmask16 visible = _mm512_cmple_epi32_mask(_mm512_set1_epi32(kp), q_pos);
                s[jj] = _mm512_mask_mov_ps(neg_inf, visible, s[jj]);
            }
        }
        __m512 block_max = s[0];
#pragma GCC unroll 16
        for (int jj = 1; jj < kKeyBlock; ++jj) block_max = _mm512_max_ps(block_max, s[jj]);
        const __m512 m_new = _mm512_max_ps(m, block_max);
        const __m512 alpha = simd512::exp2(_mm512_sub_ps(m, m_new));
        m = m_new;
        __m512 p_sum = _mm512_setzero_ps();
#pragma GCC unroll 16
        for (int jj = 0; jj < kKeyBlock; ++jj) {
            s[jj] = simd512::exp2(_mm512_sub_ps(s[jj], m_new));
            p_sum = _mm512_add_ps(p_sum, s[jj]);
        }
        l = _mm512_fmadd_ps(l, alpha, p_sum);
        for (int d = 0; d < D; ++d) {
            __m512 o = _mm512_mul_ps(_mm512_loadu_ps(ot + d * kAttnLanes), alpha);
#pragma GCC unroll 16
            for (int jj = 0; jj < kKeyBlock; ++jj) {
                o = _mm512_fmadd_ps(_mm512_set1_ps(vb[jj * D + d]), s[jj], o);
            }
            _mm512_storeu_ps(ot + d * kAttnLanes, o);
        }
    }
    _mm512_store_ps(st.m, m);
    _mm512_store_ps(st.l, l);
}

// O rows of NL lanes (o + l * D) = alpha[l] * O + sum_jj p[l][jj] * V[jj] (p: [NL][16], 16
// keys; padding keys have p = 0), with O in registers: NL * D/16 independent FMA chains, each
// V load shared by the NL lanes; a single lane splits even and odd keys into two chains so
// that the FMA latency does not bound it.
template <int D, int NL>
inline void pv_update(float* o, const float (*p)[kKeyBlock], const float* alpha,
                      const float* const v_rows[kKeyBlock]) {
    constexpr int kVec = D / 16;
    constexpr int kChains = NL == 1 && kVec <= 8 ? 2 : 1;
    constexpr int kAcc = NL * kChains;
    __m512 acc[kAcc][kVec];
#pragma GCC unroll 16
    for (int c = 0; c < kVec; ++c) {
#pragma GCC unroll 2
        for (int l = 0; l < NL; ++l) {
            acc[l][c] =
                _mm512_mul_ps(_mm512_loadu_ps(o + l * D + 16 * c), _mm512_set1_ps(alpha[l]));
        }
        if constexpr (kChains == 2) acc[1][c] = _mm512_setzero_ps();
    }
    for (int jj = 0; jj < kKeyBlock; jj += kChains) {
#pragma GCC unroll 2
        for (int h = 0; h < kChains; ++h) {
#pragma GCC unroll 16
            for (int c = 0; c < kVec; ++c) {
                const __m512 v = _mm512_loadu_ps(v_rows[jj + h] + 16 * c);
#pragma GCC unroll 2
                for (int l = 0; l < NL; ++l) {
                    __m512& a = acc[kChains == 2 ? h : l][c];
                    a = _mm512_fmadd_ps(_mm512_set1_ps(p[kChains == 2 ? 0 : l][jj + h]), v, a);
                }
            }
        }
    }
#pragma GCC unroll 16
    for (int c = 0; c < kVec; ++c) {
        if constexpr (kChains == 2) acc[0][c] = _mm512_add_ps(acc[0][c], acc[1][c]);
#pragma GCC unroll 2
        for (int l = 0; l < NL; ++l) _mm512_storeu_ps(o + l * D + 16 * c, acc[l][c]);
    }
}

// Keys in lanes (few lanes: decode, a GQA group of 1-4 heads per KV head). Per block of 16
// keys and tile: the block's K and V rows of the tile's KV head (converted once), then per
// lane 16 dot products as per-key partial vectors reduced to one vector of 16 scores, the
// online-softmax update against a lazily raised reference max (kRescaleLog2), and
// O += P . V with the lane's O row in registers. Blocks visit the tiles in order, so with the
// tiles of every KV head the rows are streamed once, whole, front to back.
// While running, states[i].o holds O as [lane][D] and then the P sums as [lane][16]; O is
// transposed to [D][16] and the sums reduced into states[i].l at the end.
template <int D, typename T>
void lanes_kernel(const AttentionArgs& a, const AttnTile* tiles, int n_tiles, int64_t j_begin,
                  int64_t j_end, AttnState* states) {
    constexpr int kVec = D / 16;
    alignas(64) float kbuf[kKeyBlock * D];  // [16][D] f16 rows converted (T = uint16_t)
    alignas(64) float vbuf[kKeyBlock * D];
    alignas(64) float p_buf[kAttnFewLanes][kKeyBlock];  // scores, then probabilities
    float alpha[kAttnFewLanes];                         // per lane O rescale of this block
    const float q_scale = a.scale * kLog2e;
    const T* k_base = static_cast<const T*>(a.k);
    const T* v_base = static_cast<const T*>(a.v);
    // Per-lane O rows and P sums live in states[i].o while running (fits: 6 (D + 16) <= 16 D).
    static_assert(kAttnFewLanes * (D + 16) <= kAttnLanes * D);
    int head_lo = tiles[0].kv_head, head_hi = tiles[0].kv_head;
    for (int i = 0; i < n_tiles; ++i) {
        head_lo = std::min(head_lo, tiles[i].kv_head);
        head_hi = std::max(head_hi, tiles[i].kv_head);
        for (int lane = 0; lane < kAttnLanes; ++lane) states[i].m[lane] = kAttnMaxInit;
        std::memset(states[i].o, 0, sizeof(float) * kAttnFewLanes * (D + 16));
    }
    // The part of each row the tiles read: KV heads [head_lo, head_hi] (the whole row when
    // the tiles are every KV head's).
    const int64_t pf_offset = static_cast<int64_t>(head_lo) * D;
    const int64_t pf_bytes = static_cast<int64_t>(head_hi - head_lo + 1) * D * sizeof(T);
    const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());

    for (int64_t j0 = j_begin; j0 < j_end; j0 += kKeyBlock) {
        const int nj = static_cast<int>(std::min<int64_t>(kKeyBlock, j_end - j0));
        const __mmask16 valid = simd512::tail_mask(nj);
        const __m512i key_pos =
            _mm512_mask_loadu_epi32(_mm512_set1_epi32(INT32_MAX), valid, a.kv_pos + j0);
        const int64_t jp_end = std::min(j_end, j0 + kPrefetchKeys + kKeyBlock);
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
            const float* k_rows[kKeyBlock];
            const float* v_rows[kKeyBlock];
            block_rows<D>(a, k_base + head_off, j0, nj, kbuf, k_rows);
            block_rows<D>(a, v_base + head_off, j0, nj, vbuf, v_rows);
            // Scores of every lane first, then their softmax updates, then P.V: independent
            // chains the core can overlap, and P.V over lane pairs shares each V load.
            for (int lane = 0; lane < t.n_lanes; ++lane) {
                const float* q =
                    a.q + t.row[lane] * a.q_stride + static_cast<int64_t>(t.head[lane]) * D;
                __m512 acc[kKeyBlock];
#pragma GCC unroll 16
                for (int jj = 0; jj < kKeyBlock; ++jj) {
                    acc[jj] = _mm512_mul_ps(_mm512_loadu_ps(q), _mm512_loadu_ps(k_rows[jj]));
#pragma GCC unroll 16
                    for (int c = 1; c < kVec; ++c) {
                        acc[jj] = _mm512_fmadd_ps(_mm512_loadu_ps(q + 16 * c),
                                                  _mm512_loadu_ps(k_rows[jj] + 16 * c), acc[jj]);
                    }
                }
                const __m512 s = _mm512_mul_ps(hsum16(acc), _mm512_set1_ps(q_scale));
                const __mmask16 visible =
                    _mm512_cmple_epi32_mask(key_pos, _mm512_set1_epi32(t.pos[lane]));
                _mm512_store_ps(p_buf[lane], _mm512_mask_mov_ps(neg_inf, visible, s));
            }
            for (int lane = 0; lane < t.n_lanes; ++lane) {
                const __m512 s = _mm512_load_ps(p_buf[lane]);
                float* l_acc = st.o + kAttnFewLanes * D + lane * 16;
                float m = st.m[lane];
                alpha[lane] = 1.0f;
                if (_mm512_cmp_ps_mask(s, _mm512_set1_ps(m + kRescaleLog2), _CMP_GT_OQ) != 0) {
                    const float block_max = _mm512_reduce_max_ps(s);
                    alpha[lane] = std::exp2(m - block_max);
                    m = block_max;
                    st.m[lane] = m;
                    _mm512_storeu_ps(
                        l_acc, _mm512_mul_ps(_mm512_loadu_ps(l_acc), _mm512_set1_ps(alpha[lane])));
                }
                const __m512 p = simd512::exp2(_mm512_sub_ps(s, _mm512_set1_ps(m)));
                _mm512_storeu_ps(l_acc, _mm512_add_ps(_mm512_loadu_ps(l_acc), p));
                _mm512_store_ps(p_buf[lane], p);
            }
            int lane = 0;
            if constexpr (kVec <= 8) {
                for (; lane + 1 < t.n_lanes; lane += 2) {
                    pv_update<D, 2>(st.o + lane * D, p_buf + lane, alpha + lane, v_rows);
                }
            }
            for (; lane < t.n_lanes; ++lane) {
                pv_update<D, 1>(st.o + lane * D, p_buf + lane, alpha + lane, v_rows);
            }
        }
    }
    // [lane][D] -> [D][16], the AttnState layout; padding lanes are zero.
    alignas(64) float tmp[kAttnLanes * D];
    for (int i = 0; i < n_tiles; ++i) {
        const int n_lanes = tiles[i].n_lanes;
        for (int lane = 0; lane < kAttnLanes; ++lane) {
            states[i].l[lane] = lane < n_lanes ? _mm512_reduce_add_ps(_mm512_loadu_ps(
                                                     states[i].o + kAttnFewLanes * D + lane * 16))
                                               : 0.0f;
        }
        std::memcpy(tmp, states[i].o, sizeof(float) * n_lanes * D);
        for (int c = 0; c < D; c += 16) {
            __m512 r[16];
            for (int lane = 0; lane < 16; ++lane) {
                r[lane] = lane < n_lanes ? _mm512_load_ps(tmp + lane * D + c) : _mm512_setzero_ps();
            }
            simd512::transpose16x16(r);
            for (int k = 0; k < 16; ++k) _mm512_storeu_ps(states[i].o + (c + k) * kAttnLanes, r[k]);
        }
    }
}

template <typename T>
void head_probs(const AttentionArgs& a, const float* q_head, int kv_head, int64_t n, float* probs) {
    const int d = a.head_dim;
    const T* k_head = static_cast<const T*>(a.k) + static_cast<int64_t>(kv_head) * d;
    // Logits, 16 keys at a time: 16 per-key partial-sum vectors reduced to one vector.
    for (int64_t j0 = 0; j0 < n; j0 += 16) {
        const int nj = static_cast<int>(std::min<int64_t>(16, n - j0));
        __m512 acc[16];
        for (int jj = 0; jj < 16; ++jj) {
            acc[jj] = _mm512_setzero_ps();
            if (jj >= nj) continue;
            const T* k = k_head + kv_row_of(a, j0 + jj) * a.kv_stride;
            for (int c = 0; c < d; c += 16) {
                const __mmask16 mask = simd512::tail_mask(d - c);
                acc[jj] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, q_head + c),
                                          load16_masked(k + c, mask), acc[jj]);
            }
        }
        _mm512_mask_storeu_ps(probs + j0, simd512::tail_mask(nj),
                              _mm512_mul_ps(hsum16(acc), _mm512_set1_ps(a.scale)));
    }
    // Softmax in place.
    __m512 mv = _mm512_set1_ps(-__builtin_inff());
    for (int64_t j = 0; j < n; j += 16) {
        mv = _mm512_max_ps(mv, _mm512_mask_loadu_ps(mv, simd512::tail_mask(n - j), probs + j));
    }
    const __m512 max_v = _mm512_set1_ps(_mm512_reduce_max_ps(mv));
    __m512 sum_v = _mm512_setzero_ps();
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 mask = simd512::tail_mask(n - j);
        const __m512 e = simd512::exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, probs + j), max_v));
        sum_v = _mm512_add_ps(sum_v, _mm512_maskz_mov_ps(mask, e));
        _mm512_mask_storeu_ps(probs + j, mask, e);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum_v));
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 mask = simd512::tail_mask(n - j);
        _mm512_mask_storeu_ps(probs + j, mask,
                              _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, probs + j), inv));
    }
}

}  // namespace

void attention_tile_avx512(const AttentionArgs& a, const AttnTile& t, int64_t j_begin,
                           int64_t j_end, AttnState& st) {
    if (t.n_lanes <= kAttnFewLanes) {
        attention_lanes_avx512(a, &t, 1, j_begin, j_end, &st);
        return;
    }
    with_kernel_types(a, [&]<int D, typename T>() { tile_kernel<D, T>(a, t, j_begin, j_end, st); });
}

void attention_lanes_avx512(const AttentionArgs& a, const AttnTile* tiles, int n_tiles,
                            int64_t j_begin, int64_t j_end, AttnState* states) {
    with_kernel_types(a, [&]<int D, typename T>() {
        lanes_kernel<D, T>(a, tiles, n_tiles, j_begin, j_end, states);
    });
}

void attention_finalize_avx512(const AttentionArgs& a, const AttnTile& t, const AttnState& st) {
    const int d = a.head_dim;  // a multiple of 16 (checked by the driver)
    alignas(64) float inv[kAttnLanes];
    for (int lane = 0; lane < kAttnLanes; ++lane) {
        inv[lane] = st.l[lane] > 0.0f ? 1.0f / st.l[lane] : 0.0f;
    }
    for (int c = 0; c < d; c += 16) {
        __m512 r[16];  // rows c..c+15 of O^T, transposed to one vector of 16 dims per lane
        for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(st.o + (c + i) * kAttnLanes);
        simd512::transpose16x16(r);
        for (int lane = 0; lane < t.n_lanes; ++lane) {
            const int64_t off =
                t.row[lane] * a.out_stride + static_cast<int64_t>(t.head[lane]) * d + c;
            const __m512 o = _mm512_mul_ps(r[lane], _mm512_set1_ps(inv[lane]));
            if (a.out16 != nullptr) {
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.out16 + off),
                                    simd512::to_bf16(o));
            } else {
                _mm512_storeu_ps(a.out + off, o);
            }
        }
    }
}

void head_probs_avx512(const AttentionArgs& a, const float* q_head, int kv_head, int64_t n,
                       float* probs) {
    if (a.kv_type == KvType::kF16) {
        head_probs<uint16_t>(a, q_head, kv_head, n, probs);
    } else {
        head_probs<float>(a, q_head, kv_head, n, probs);
    }
}

void kv_store_rows_avx512(KvType type, const float* src, int64_t src_stride, int64_t n_rows,
                          int64_t width, const int32_t* rows, void* dst, int64_t dst_stride) {
    for (int64_t i = 0; i < n_rows; ++i) {
        const float* s = src + i * src_stride;
        const int64_t off = static_cast<int64_t>(rows[i]) * dst_stride;
        if (type == KvType::kF32) {
            std::memcpy(static_cast<float*>(dst) + off, s, sizeof(float) * width);
            continue;
        }
        uint16_t* d = static_cast<uint16_t*>(dst) + off;
        for (int64_t c = 0; c < width; c += 16) {
            const __mmask16 mask = simd512::tail_mask(width - c);
            const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(mask, s + c),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            _mm256_mask_storeu_epi16(d + c, mask, h);
        }
    }
}

}  // namespace lazyllm::kernels::detail
