// AVX-512-BF16 code shared by the two bf16 attention tile kernels (attention_bf16_avx512.cpp,
// attention_amx.cpp). Include only from files compiled with the AVX-512 flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/attention_isa.h"
#include "kernels/ops_simd_avx512.h"

namespace lazyllm::kernels::detail {
namespace {

// Masked scores: finite, so that exp2_bf16_finite needs no clamp, and far enough below
// kAttnMaxInit that 2^(masked - m) is 0 even before a lane has seen a visible key.
constexpr float kMaskedScore = -3e30f;
static_assert(kMaskedScore < 2.0f * kAttnMaxInit);

// Q^T of a tile's 16 queries, prescaled into the log2 domain (scale * log2 e), as bf16 pairs:
// qb[p * 16 + lane] holds dims 2p and 2p + 1 of the lane's query (head_dim / 2 x 16 words,
// 64-byte aligned). Per 32 dims: 16 lanes x 16 pairs, transposed.
inline void pack_q_bf16(const AttentionArgs& a, const AttnTile& t, uint32_t* qb) {
    const __m512 q_scale = _mm512_set1_ps(a.scale * kLog2e);
    for (int c = 0; c < a.head_dim / 32; ++c) {
        __m512 r[16];
        for (int lane = 0; lane < kAttnLanes; ++lane) {
            const float* q = a.q + t.row[lane] * a.q_stride +
                             static_cast<int64_t>(t.head[lane]) * a.head_dim + 32 * c;
            r[lane] = _mm512_castsi512_ps(reinterpret_cast<__m512i>(
                _mm512_cvtne2ps_pbh(_mm512_mul_ps(_mm512_loadu_ps(q + 16), q_scale),
                                    _mm512_mul_ps(_mm512_loadu_ps(q), q_scale))));
        }
        simd512::transpose16x16(r);
        for (int kk = 0; kk < 16; ++kk) _mm512_store_ps(qb + (16 * c + kk) * kAttnLanes, r[kk]);
    }
}

}  // namespace
}  // namespace lazyllm::kernels::detail
