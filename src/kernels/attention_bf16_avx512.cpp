// bf16 attention without AMX: queries in lanes (attention_isa.h) on AVX-512-BF16's VDPBF16PS,
// which multiplies bf16 pairs into fp32 lanes at twice the rate of an fp32 FMA. Also the bf16
// packing of K and V^T that this kernel and the AMX one read.
//
// Both products take a 32-bit broadcast (a bf16 pair) from the packed K or V^T and a register
// of 16 lanes:
//   S^T[key][lane] += K[key][2p] Q[lane][2p] + K[key][2p+1] Q[lane][2p+1]  (Q^T as pairs qb[p])
//   O^T[d][lane]   += V[2k][d] P[2k][lane] + V[2k+1][d] P[2k+1][lane]      (P^T as pairs pb[k])
// per block of 32 keys: S^T into L1 sixteen keys at a time (16 accumulators), the online
// softmax per row of 16 lanes (fp32, FlashAttention-2's per-block rescale), P^T as 16 pair
// registers, then O^T (in st.o, L1) eight dims at a time. Q, K, V and P are rounded to bf16
// (RNE); sums and the softmax are fp32, as in the AMX kernel.
#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <utility>

#include "kernels/attention_bf16_inl.h"
#include "kernels/attention_isa.h"
#include "kernels/ops_simd_avx512.h"

namespace lazyllm::kernels::detail {

namespace {

constexpr int kKeyBlock = kBf16KeyBlock;
constexpr int kDimGroup = 8;  // O^T rows per register block of the P.V product
using HeadDims = std::integer_sequence<int, 32, 64, 96, 128, 256>;  // instantiated

inline __m512bh as_bh(__m512i v) { return reinterpret_cast<__m512bh>(v); }

// The bf16 pair at p (two adjacent elements) in every 32-bit lane: an embedded broadcast.
inline __m512bh pair_bcast(const uint16_t* p) {
    uint32_t bits;
    std::memcpy(&bits, p, sizeof(bits));
    return as_bh(_mm512_set1_epi32(static_cast<int32_t>(bits)));
}

template <int D>
void tile_kernel(const AttentionArgs& a, const PackedKvBf16& packed, const AttnTile& t,
                 int64_t j_begin, int64_t j_end, AttnState& st, bool resume) {
    static_assert(D % 32 == 0 && D % kDimGroup == 0);
    constexpr int kPairs = D / 2;
    alignas(64) uint32_t qb[kPairs][kAttnLanes];  // Q^T as bf16 pairs: [dim pair][lane]
    alignas(64) float s[kKeyBlock][kAttnLanes];   // S^T of a block

    pack_q_bf16(a, t, qb[0]);

    float* ot = st.o;  // [D][16], not always 64-byte aligned (key-split parts)
    __m512 m, l;
    if (resume) {
        m = _mm512_load_ps(st.m);
        l = _mm512_load_ps(st.l);
    } else {
        m = _mm512_set1_ps(kAttnMaxInit);
        l = _mm512_setzero_ps();
        std::memset(ot, 0, sizeof(float) * D * kAttnLanes);
    }
    const __m512i q_pos = _mm512_loadu_si512(t.pos);
    alignas(64) int32_t lo_thr[kAttnLanes];  // window_threshold per lane
    for (int lane = 0; lane < kAttnLanes; ++lane) lo_thr[lane] = window_threshold(a, t.pos[lane]);
    const __m512i q_lo = _mm512_load_si512(lo_thr);
    const __m512 masked = _mm512_set1_ps(kMaskedScore);
    const uint16_t* k_head = packed.k.data() + t.kv_head * packed.n_kv_pad * D;
    const uint16_t* vt_head =
        packed.vt.data() + static_cast<int64_t>(t.kv_head) * D * packed.n_kv_pad;

    for (int64_t j0 = j_begin / kKeyBlock * kKeyBlock; j0 < j_end; j0 += kKeyBlock) {
        // S^T, 16 keys at a time.
        const uint16_t* k_blk = k_head + j0 * D;
        for (int half = 0; half < 2; ++half) {
            const uint16_t* k_half = k_blk + 16 * half * D;
            __m512 acc[16];
#pragma GCC unroll 16
            for (int k = 0; k < 16; ++k) acc[k] = _mm512_setzero_ps();
#pragma GCC unroll 2
            for (int p = 0; p < kPairs; ++p) {
                const __m512bh q = as_bh(_mm512_load_si512(qb[p]));
#pragma GCC unroll 16
                for (int k = 0; k < 16; ++k) {
                    acc[k] = _mm512_dpbf16_ps(acc[k], q, pair_bcast(k_half + k * D + 2 * p));
                }
            }
#pragma GCC unroll 16
            for (int k = 0; k < 16; ++k) _mm512_store_ps(s[16 * half + k], acc[k]);
        }
        // Keys outside [j_begin, j_end) (block padding, another call's keys), after a lane's
        // position, or before its sliding window.
        const bool out_of_range = j0 < j_begin || j0 + kKeyBlock > j_end;
        if (out_of_range || j0 + kKeyBlock > t.n_vis_min) {
            for (int jj = 0; jj < kKeyBlock; ++jj) {
                const int64_t j = j0 + jj;
                const int32_t kp = j >= j_begin && j < j_end ? a.kv_pos[j] : INT32_MAX;
                const __mmask16 vis = _mm512_cmple_epi32_mask(_mm512_set1_epi32(kp), q_pos);
                _mm512_store_ps(s[jj], _mm512_mask_mov_ps(masked, vis, _mm512_load_ps(s[jj])));
            }
        }
        if (j0 < t.n_lo_max) {
            const int64_t jj_end = std::min<int64_t>(kKeyBlock, j_end - j0);
            for (int jj = std::max<int64_t>(0, j_begin - j0); jj < jj_end; ++jj) {
                // Hidden iff -kp > threshold (window_threshold).
                const __mmask16 in_window =
                    _mm512_cmple_epi32_mask(_mm512_set1_epi32(-a.kv_pos[j0 + jj]), q_lo);
                _mm512_store_ps(s[jj],
                                _mm512_mask_mov_ps(masked, in_window, _mm512_load_ps(s[jj])));
            }
        }
        // Online softmax: new max, alpha = 2^(m_old - m_new), P = 2^(S - m_new) as pairs.
        __m512 block_max = _mm512_load_ps(s[0]);
#pragma GCC unroll 16
        for (int jj = 1; jj < kKeyBlock; ++jj)
            block_max = _mm512_max_ps(block_max, _mm512_load_ps(s[jj]));
        const __m512 m_new = _mm512_max_ps(m, block_max);
        const __m512 alpha = simd512::exp2(_mm512_sub_ps(m, m_new));
        m = m_new;
        __m512i pb[kKeyBlock / 2];
        __m512 p_sum = _mm512_setzero_ps();
#pragma GCC unroll 16
        for (int kk = 0; kk < kKeyBlock / 2; ++kk) {
            const __m512 p0 =
                simd512::exp2_bf16_finite(_mm512_sub_ps(_mm512_load_ps(s[2 * kk]), m));
            const __m512 p1 =
                simd512::exp2_bf16_finite(_mm512_sub_ps(_mm512_load_ps(s[2 * kk + 1]), m));
            p_sum = _mm512_add_ps(p_sum, _mm512_add_ps(p0, p1));
            pb[kk] = simd512::interleave_bf16(p0, p1);
        }
        l = _mm512_fmadd_ps(l, alpha, p_sum);
        // O^T = alpha * O^T + V^T . P^T, kDimGroup dims at a time.
        const uint16_t* vt_blk = vt_head + j0 * D;  // [D][32]
        for (int d = 0; d < D; d += kDimGroup) {
            __m512 acc[kDimGroup];
#pragma GCC unroll 8
            for (int i = 0; i < kDimGroup; ++i) {
                acc[i] = _mm512_mul_ps(_mm512_loadu_ps(ot + (d + i) * kAttnLanes), alpha);
            }
#pragma GCC unroll 16
            for (int kk = 0; kk < kKeyBlock / 2; ++kk) {
#pragma GCC unroll 8
                for (int i = 0; i < kDimGroup; ++i) {
                    acc[i] = _mm512_dpbf16_ps(acc[i], as_bh(pb[kk]),
                                              pair_bcast(vt_blk + (d + i) * kKeyBlock + 2 * kk));
                }
            }
#pragma GCC unroll 8
            for (int i = 0; i < kDimGroup; ++i) _mm512_storeu_ps(ot + (d + i) * kAttnLanes, acc[i]);
        }
    }
    _mm512_store_ps(st.m, m);
    _mm512_store_ps(st.l, l);
}

}  // namespace

bool bf16_attention_usable(const AttentionArgs& a) { return head_dim_in(HeadDims{}, a.head_dim); }

void pack_kv_bf16(const KernelContext& ctx, const AttentionArgs& a, PackedKvBf16& packed) {
    const int d = a.head_dim;
    const int64_t n_pad = (a.n_kv + kKeyBlock - 1) / kKeyBlock * kKeyBlock;
    packed.n_kv_pad = n_pad;
    // Grow only (every element used below is written below).
    const size_t size = static_cast<size_t>(a.n_head_kv) * n_pad * d;
    if (packed.k.size() < size) packed.k.resize(size);
    if (packed.vt.size() < size) packed.vt.resize(size);
    const int64_t blocks = n_pad / 16;
    const bool f16 = a.kv_type == KvType::kF16;
    // Each item: 16 keys of one KV head, all head dims.
#pragma omp parallel for num_threads(std::max(1, ctx.n_threads)) schedule(static)
    for (int64_t item = 0; item < a.n_head_kv * blocks; ++item) {
        const int g = static_cast<int>(item / blocks);
        const int64_t j0 = (item % blocks) * 16;
        const int n_rows = static_cast<int>(std::min<int64_t>(16, a.n_kv - j0));
        uint16_t* k_dst = packed.k.data() + (g * n_pad + j0) * d;
        // Block of 32 keys containing j0, then the 16-key half.
        uint16_t* vt_dst = packed.vt.data() + static_cast<int64_t>(g) * d * n_pad +
                           (j0 / kKeyBlock) * kKeyBlock * d + j0 % kKeyBlock;
        int64_t row_off[16];  // element offset of each key's head-g segment (K and V alike)
        for (int jj = 0; jj < n_rows; ++jj) {
            const int64_t row = kv_row_of(a, j0 + jj);
            row_off[jj] = row * a.kv_stride + kv_head_offset(a, g);
        }
        for (int c = 0; c < d; c += 16) {
            __m512 kr[16], vr[16];
            for (int jj = 0; jj < 16; ++jj) {
                if (jj >= n_rows) {
                    kr[jj] = vr[jj] = _mm512_setzero_ps();
                } else if (f16) {
                    kr[jj] = simd512::load_f16(static_cast<const uint16_t*>(a.k) + row_off[jj] + c);
                    vr[jj] = simd512::load_f16(static_cast<const uint16_t*>(a.v) + row_off[jj] + c);
                } else {
                    kr[jj] = _mm512_loadu_ps(static_cast<const float*>(a.k) + row_off[jj] + c);
                    vr[jj] = _mm512_loadu_ps(static_cast<const float*>(a.v) + row_off[jj] + c);
                }
            }
            for (int jj = 0; jj < 16; ++jj) {
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(k_dst + jj * d + c),
                                    reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(kr[jj])));
            }
            simd512::transpose16x16(vr);
            for (int dd = 0; dd < 16; ++dd) {
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(vt_dst + (c + dd) * kKeyBlock),
                                    reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(vr[dd])));
            }
        }
    }
}

void attention_tile_bf16(const AttentionArgs& a, const PackedKvBf16& packed, const AttnTile& t,
                         int64_t j_begin, int64_t j_end, AttnState& st, bool resume) {
    const bool ran = with_value(a.head_dim, HeadDims{}, [&]<int D>() {
        tile_kernel<D>(a, packed, t, j_begin, j_end, st, resume);
    });
    if (!ran) __builtin_trap();  // bf16_attention_usable() admits only these
}

}  // namespace lazyllm::kernels::detail
