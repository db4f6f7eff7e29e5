// AVX-512 fp32 attention tile kernel (queries in lanes, see attention_isa.h) and the vectorized
// pieces of the LazyLLM head-mean scores.
//
// Per block of 16 keys: S^T[16 keys][16 lanes] = K_blk . Q^T (broadcast K element x Q^T row:
// 16 FMAs per head dimension, no horizontal sums), masked by position, then the online softmax
// update (FlashAttention-2, Dao 2023, Alg. 1) vertically per lane, then
// O^T[d][lanes] = alpha * O^T[d] + sum_j V[j][d] * P^T[j].
#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include "kernels/attention_isa.h"
#include "kernels/ops_simd_avx512.h"

namespace lazyllm::kernels::detail {

namespace {

constexpr int kKeyBlock = 16;
// Tiles with at most this many real lanes use the keys-in-lanes kernel.
constexpr int kFewLanes = 6;

// head_dim is a template parameter so that the K/V block rows sit at constant offsets
// (one base register for all 16 rows in the inner loops).
template <int D>
void tile_kernel(const AttentionArgs& a, const AttnTile& t, int64_t j_begin, int64_t j_end,
                 AttnState& st) {
    alignas(64) float qt[D * kAttnLanes];  // [D][16] Q^T, prescaled by scale * log2(e)
    alignas(64) float kb[kKeyBlock * D];   // [16][D] current key block
    alignas(64) float vb[kKeyBlock * D];   // [16][D] current value block
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
    const float* k_head = a.k + static_cast<int64_t>(t.kv_head) * D;
    const float* v_head = a.v + static_cast<int64_t>(t.kv_head) * D;

    for (int64_t j0 = j_begin; j0 < j_end; j0 += kKeyBlock) {
        const int nj = static_cast<int>(std::min<int64_t>(kKeyBlock, j_end - j0));
        // Gather the block; rows past the range repeat the last one and are masked below.
        for (int jj = 0; jj < kKeyBlock; ++jj) {
            const int64_t j = j0 + std::min(jj, nj - 1);
            std::memcpy(kb + jj * D, k_head + j * a.kv_stride, sizeof(float) * D);
            std::memcpy(vb + jj * D, v_head + j * a.kv_stride, sizeof(float) * D);
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

// Few lanes (decode: one query row, a GQA group of 1-4 heads): keys in lanes instead. Per lane
// and block of 16 keys: 16 dot products as per-key partial vectors, transposed and summed
// (one vector of 16 scores), a scalar online-softmax update, then O += P . V with O in
// registers. About 3x less work per key than the 16-lane kernel when few lanes are real.
template <int D>
void few_lanes_kernel(const AttentionArgs& a, const AttnTile& t, int64_t j_begin, int64_t j_end,
                      AttnState& st) {
    constexpr int kVec = D / 16;
    const int n_lanes = t.n_lanes;
    alignas(64) float q[kAttnLanes][D];  // prescaled by scale * log2(e)
    alignas(64) float o[kAttnLanes][D];  // unnormalized outputs
    alignas(64) float p_buf[kKeyBlock];
    float m[kAttnLanes], l[kAttnLanes];
    const float q_scale = a.scale * kLog2e;
    for (int lane = 0; lane < n_lanes; ++lane) {
        const float* src = a.q + t.row[lane] * a.q_stride + static_cast<int64_t>(t.head[lane]) * D;
        for (int d = 0; d < D; ++d) q[lane][d] = src[d] * q_scale;
        std::memset(o[lane], 0, sizeof(o[lane]));
        m[lane] = kAttnMaxInit;
        l[lane] = 0.0f;
    }
    const float* k_head = a.k + static_cast<int64_t>(t.kv_head) * D;
    const float* v_head = a.v + static_cast<int64_t>(t.kv_head) * D;
    const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
    for (int64_t j0 = j_begin; j0 < j_end; j0 += kKeyBlock) {
        const int nj = static_cast<int>(std::min<int64_t>(kKeyBlock, j_end - j0));
        const __mmask16 valid = simd512::tail_mask(nj);
        const __m512i key_pos =
            _mm512_mask_loadu_epi32(_mm512_set1_epi32(INT32_MAX), valid, a.kv_pos + j0);
        for (int lane = 0; lane < n_lanes; ++lane) {
            __m512 acc[kKeyBlock];
            for (int jj = 0; jj < kKeyBlock; ++jj) {
                const float* k = k_head + (j0 + std::min(jj, nj - 1)) * a.kv_stride;
                acc[jj] = _mm512_mul_ps(_mm512_load_ps(q[lane]), _mm512_loadu_ps(k));
                for (int c = 1; c < kVec; ++c) {
                    acc[jj] = _mm512_fmadd_ps(_mm512_load_ps(q[lane] + 16 * c),
                                              _mm512_loadu_ps(k + 16 * c), acc[jj]);
                }
            }
            simd512::transpose16x16(acc);
            __m512 s = acc[0];
            for (int i = 1; i < kKeyBlock; ++i) s = _mm512_add_ps(s, acc[i]);
            const __mmask16 visible =
                _mm512_cmple_epi32_mask(key_pos, _mm512_set1_epi32(t.pos[lane]));
            s = _mm512_mask_mov_ps(neg_inf, visible, s);
            const float m_new = std::max(m[lane], _mm512_reduce_max_ps(s));
            const float alpha = std::exp2(m[lane] - m_new);
            const __m512 p = simd512::exp2(_mm512_sub_ps(s, _mm512_set1_ps(m_new)));
            l[lane] = l[lane] * alpha + _mm512_reduce_add_ps(p);
            m[lane] = m_new;
            _mm512_store_ps(p_buf, p);
            __m512 acc_o[kVec];
            const __m512 alpha_v = _mm512_set1_ps(alpha);
            for (int c = 0; c < kVec; ++c) {
                acc_o[c] = _mm512_mul_ps(_mm512_load_ps(o[lane] + 16 * c), alpha_v);
            }
            for (int jj = 0; jj < nj; ++jj) {
                const __m512 pj = _mm512_set1_ps(p_buf[jj]);
                const float* v = v_head + (j0 + jj) * a.kv_stride;
                for (int c = 0; c < kVec; ++c) {
                    acc_o[c] = _mm512_fmadd_ps(pj, _mm512_loadu_ps(v + 16 * c), acc_o[c]);
                }
            }
            for (int c = 0; c < kVec; ++c) _mm512_store_ps(o[lane] + 16 * c, acc_o[c]);
        }
    }
    for (int lane = 0; lane < kAttnLanes; ++lane) {
        const bool real = lane < n_lanes;
        st.m[lane] = real ? m[lane] : kAttnMaxInit;
        st.l[lane] = real ? l[lane] : 0.0f;
        for (int d = 0; d < D; ++d) st.o[d * kAttnLanes + lane] = real ? o[lane][d] : 0.0f;
    }
}

}  // namespace

bool avx512_attention_head_dim_supported(int head_dim) {
    switch (head_dim) {
        case 32:
        case 64:
        case 80:
        case 96:
        case 128:
        case 256:
            return true;
        default:
            return false;
    }
}

void attention_tile_avx512(const AttentionArgs& a, const AttnTile& t, int64_t j_begin,
                           int64_t j_end, AttnState& st) {
    if (t.n_lanes <= kFewLanes) {
        switch (a.head_dim) {
            case 32:
                few_lanes_kernel<32>(a, t, j_begin, j_end, st);
                return;
            case 64:
                few_lanes_kernel<64>(a, t, j_begin, j_end, st);
                return;
            case 80:
                few_lanes_kernel<80>(a, t, j_begin, j_end, st);
                return;
            case 96:
                few_lanes_kernel<96>(a, t, j_begin, j_end, st);
                return;
            case 128:
                few_lanes_kernel<128>(a, t, j_begin, j_end, st);
                return;
            case 256:
                few_lanes_kernel<256>(a, t, j_begin, j_end, st);
                return;
            default:
                __builtin_trap();  // the driver checks avx512_attention_head_dim_supported
        }
    }
    switch (a.head_dim) {
        case 32:
            tile_kernel<32>(a, t, j_begin, j_end, st);
            break;
        case 64:
            tile_kernel<64>(a, t, j_begin, j_end, st);
            break;
        case 80:
            tile_kernel<80>(a, t, j_begin, j_end, st);
            break;
        case 96:
            tile_kernel<96>(a, t, j_begin, j_end, st);
            break;
        case 128:
            tile_kernel<128>(a, t, j_begin, j_end, st);
            break;
        case 256:
            tile_kernel<256>(a, t, j_begin, j_end, st);
            break;
        default:
            __builtin_trap();  // the driver checks avx512_attention_head_dim_supported
    }
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
            float* out =
                a.out + t.row[lane] * a.out_stride + static_cast<int64_t>(t.head[lane]) * d + c;
            _mm512_storeu_ps(out, _mm512_mul_ps(r[lane], _mm512_set1_ps(inv[lane])));
        }
    }
}

void head_probs_avx512(const AttentionArgs& a, const float* q_head, int kv_head, int64_t n,
                       float* probs) {
    const int d = a.head_dim;
    const float* k_head = a.k + static_cast<int64_t>(kv_head) * d;
    // Logits, 16 keys at a time: 16 per-key partial-sum vectors, transposed and added, give
    // the 16 dot products in one vector.
    for (int64_t j0 = 0; j0 < n; j0 += 16) {
        const int nj = static_cast<int>(std::min<int64_t>(16, n - j0));
        __m512 acc[16];
        for (int jj = 0; jj < 16; ++jj) {
            acc[jj] = _mm512_setzero_ps();
            if (jj >= nj) continue;
            const float* k = k_head + (j0 + jj) * a.kv_stride;
            for (int c = 0; c < d; c += 16) {
                const __mmask16 mask = simd512::tail_mask(d - c);
                acc[jj] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, q_head + c),
                                          _mm512_maskz_loadu_ps(mask, k + c), acc[jj]);
            }
        }
        simd512::transpose16x16(acc);
        __m512 sum = acc[0];
        for (int i = 1; i < 16; ++i) sum = _mm512_add_ps(sum, acc[i]);
        _mm512_mask_storeu_ps(probs + j0, simd512::tail_mask(nj),
                              _mm512_mul_ps(sum, _mm512_set1_ps(a.scale)));
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

}  // namespace lazyllm::kernels::detail
