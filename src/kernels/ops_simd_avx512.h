// AVX-512 vector math shared by the AVX-512 kernels (ops_avx512.cpp, attention_avx512.cpp).
// Include only from files compiled with the AVX-512 flags (*_avx512.cpp, *_amx.cpp).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace lazyllm::kernels::simd512 {

// 2^x for x in [-inf, 128): x = n + r, n = round(x), |r| <= 0.5, 2^r by a degree-7 Taylor
// polynomial of e^(r ln2) (relative error < 2e-8 before rounding), scaled with VSCALEFPS.
// Inputs below -160 (including -inf) give exactly +0, which masked softmax entries rely on.
inline __m512 exp2(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-160.0f));
    x = _mm512_min_ps(x, _mm512_set1_ps(127.99f));
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 t = _mm512_mul_ps(_mm512_sub_ps(x, n), _mm512_set1_ps(0.6931471805599453f));
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

// 2^x for finite x <= 127, relative error < 8e-5: for probabilities that are rounded to bf16
// next (2^-9). Degree-3 polynomial for 2^r, r in [-0.5, 0.5], fitted for minimax relative
// error (Lawson iteration). No clamp: a very negative x (the attention kernel masks scores
// with -3e30) gives 0, as roundscale keeps it and scalef underflows; -inf would give NaN.
inline __m512 exp2_bf16_finite(__m512 x) {
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 r = _mm512_sub_ps(x, n);
    __m512 p = _mm512_set1_ps(0.0551377745f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.2426083f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.693267222f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.999928425f));
    return _mm512_scalef_ps(p, n);
}

// Transposes a 16x16 block of 32-bit elements held in 16 registers (row i -> register i).
// GCC 12 warns about the intrinsics' internal _mm512_undefined_ps() here (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
inline void transpose16x16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    // r[4i + k], 128-bit lane L, now holds rows 4i..4i+3 of column 4L + k.
    for (int k = 0; k < 4; ++k) {
        const __m512 x0 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x88);
        const __m512 x1 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xDD);
        const __m512 y0 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x88);
        const __m512 y1 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xDD);
        t[k] = _mm512_shuffle_f32x4(x0, y0, 0x88);
        t[8 + k] = _mm512_shuffle_f32x4(x0, y0, 0xDD);
        t[4 + k] = _mm512_shuffle_f32x4(x1, y1, 0x88);
        t[12 + k] = _mm512_shuffle_f32x4(x1, y1, 0xDD);
    }
    for (int i = 0; i < 16; ++i) r[i] = t[i];
}
#pragma GCC diagnostic pop

// e^x = 2^(x log2 e).
inline __m512 exp(__m512 x) { return exp2(_mm512_mul_ps(x, _mm512_set1_ps(1.4426950408889634f))); }

// x / (1 + e^-x). The division is a reciprocal estimate (VRCP14PS, 2^-14) refined by one
// Newton step (~2^-23 relative), several times cheaper than VDIVPS. For x << 0, e^-x is clamped
// at ~2^128 (finite), so the result is a tiny -0-ish value, never NaN.
inline __m512 silu(__m512 x) {
    const __m512 d =
        _mm512_add_ps(_mm512_set1_ps(1.0f), exp(_mm512_sub_ps(_mm512_setzero_ps(), x)));
    __m512 r = _mm512_rcp14_ps(d);
    r = _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0f)));
    return _mm512_mul_ps(x, r);
}

// 16 IEEE halves -> 16 fp32 (exact).
inline __m512 load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// 16 fp32 -> 16 bf16 bits, round to nearest even with integer ops (AVX-512F only: no
// AVX-512-BF16 needed); NaN stays a quiet NaN. Bit-identical to detail::round_to_bf16.
inline __m256i to_bf16(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(u, _mm512_set1_epi32(0x400000)));
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
}

inline __mmask16 tail_mask(int64_t n_left) {
    return n_left >= 16 ? static_cast<__mmask16>(0xffff)
                        : static_cast<__mmask16>((1u << n_left) - 1u);
}

}  // namespace lazyllm::kernels::simd512
