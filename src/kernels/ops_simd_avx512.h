// Vec<Isa::kAvx512> (simd.h): 16 fp32 lanes in a __m512, AVX-512 F/BW/VL/DQ, and the AVX-512
// vector math it is built from (namespace simd512, also used by the AMX kernels). Include only
// from files compiled with the AVX-512 flags (*_avx512.cpp, *_vnni.cpp, *_amx.cpp).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/simd.h"

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

// GELU, tanh approximation: x / (1 + e^-z), z = 2 sqrt(2/pi) (x + 0.044715 x^3); the
// division as in silu.
inline __m512 gelu_tanh(__m512 x) {
    const __m512 z = _mm512_mul_ps(
        x, _mm512_fmadd_ps(_mm512_mul_ps(x, x), _mm512_set1_ps(kGeluK1), _mm512_set1_ps(kGeluK0)));
    const __m512 d =
        _mm512_add_ps(_mm512_set1_ps(1.0f), exp(_mm512_sub_ps(_mm512_setzero_ps(), z)));
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

// Two rows of 16 fp32 as 16 bf16 pairs (RNE, AVX-512-BF16): 32-bit lane i holds (a[i], b[i]),
// a[i] in the low half. The B operand layout of VDPBF16PS and of AMX's TDPBF16PS.
inline __m512i interleave_bf16(__m512 a, __m512 b) {
    alignas(64) static constexpr uint16_t kIdx[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                      21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                      11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i idx = _mm512_load_si512(kIdx);
    return _mm512_permutexvar_epi16(idx, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a)));
}

inline __mmask16 tail_mask(int64_t n_left) {
    return n_left >= 16 ? static_cast<__mmask16>(0xffff)
                        : static_cast<__mmask16>((1u << n_left) - 1u);
}

}  // namespace lazyllm::kernels::simd512

namespace lazyllm::kernels {

template <>
struct Vec<Isa::kAvx512> {
    using F = __m512;
    using Mask = __mmask16;
    using Ints = __m512i;  // 16 int32
    static constexpr int kWidth = 16;

    static F zero() { return _mm512_setzero_ps(); }
    static F set1(float x) { return _mm512_set1_ps(x); }
    static F load(const float* p) { return _mm512_loadu_ps(p); }
    static F load(const uint16_t* p) { return simd512::load_f16(p); }  // 16 IEEE halves, exact
    static F load_aligned(const float* p) { return _mm512_load_ps(p); }
    static F broadcast(const float* p) { return _mm512_set1_ps(*p); }
    static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
    static void store_aligned(float* p, F v) { _mm512_store_ps(p, v); }

    // Lanes [0, n_left) set (n_left clamped to 16).
    static Mask tail(int64_t n_left) { return simd512::tail_mask(n_left); }
    static F load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
    static void store(float* p, Mask m, F v) { _mm512_mask_storeu_ps(p, m, v); }
    static F keep(F v, Mask m) { return _mm512_maskz_mov_ps(m, v); }  // 0 outside m
    // Rounded to bf16 (simd512::to_bf16), lanes of m only.
    static void store_bf16(uint16_t* p, Mask m, F v) {
        _mm256_mask_storeu_epi16(p, m, simd512::to_bf16(v));
    }

    static Ints set1_i32(int32_t x) { return _mm512_set1_epi32(x); }
    static Ints load_i32(const int32_t* p) { return _mm512_loadu_si512(p); }
    // p[0, n) and `fill` in the lanes from n on (p[n..] not read).
    static Ints load_i32(const int32_t* p, int64_t n, int32_t fill) {
        return _mm512_mask_loadu_epi32(_mm512_set1_epi32(fill), tail(n), p);
    }
    // s with -inf in the lanes where key_pos > q_pos (keys a query does not see).
    static F hide_after(F s, Ints key_pos, Ints q_pos) {
        const __mmask16 visible = _mm512_cmple_epi32_mask(key_pos, q_pos);
        return _mm512_mask_mov_ps(_mm512_set1_ps(-__builtin_inff()), visible, s);
    }
    static bool any_gt(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ) != 0; }
    // bit j: a[j] > b[j]
    static uint32_t gt_bits(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
    static F abs(F a) { return _mm512_abs_ps(a); }
    // v with lane j set to +0 where bit j of `bits` is set.
    static F zero_lanes(F v, uint32_t bits) {
        return _mm512_maskz_mov_ps(static_cast<__mmask16>(~bits), v);
    }
    // Rounded to nearest even (MXCSR default), as nearbyint.
    static Ints round_i32(F v) { return _mm512_cvtps_epi32(v); }
    static Ints add_i32(Ints a, Ints b) { return _mm512_add_epi32(a, b); }
    static int32_t reduce_add_i32(Ints v) { return _mm512_reduce_add_epi32(v); }
    // 32 int32 in [-127, 127] (q[0] first) as int8 at p.
    static void store_i8x32(int8_t* p, const Ints (&q)[2]) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(q[0]));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 16), _mm512_cvtepi32_epi8(q[1]));
    }

    static F add(F a, F b) { return _mm512_add_ps(a, b); }
    static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
    static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static F max(F a, F b) { return _mm512_max_ps(a, b); }
    static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }    // a * b + c
    static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a * b
    static F fmsub(F a, F b, F c) { return _mm512_fmsub_ps(a, b, c); }    // a * b - c

    // The 16 unsigned / signed bytes of q as floats (exact).
    static F from_u8(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q)); }
    static F from_i8(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)); }
    static F from_i32(Ints v) { return _mm512_cvtepi32_ps(v); }
    // 16 int8 pairs (p[2i], p[2i + 1]) as floats: even[i] = p[2i], odd[i] = p[2i + 1] (exact).
    static void i8_pairs(const int8_t* p, F& even, F& odd) {
        const __m512i pairs =
            _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        even = _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(pairs, 16), 16));
        odd = _mm512_cvtepi32_ps(_mm512_srai_epi32(pairs, 16));
    }
    // 16 bf16 bits -> fp32 (exact).
    static F load_bf16(const uint16_t* p) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }

    // Lane j = the sum of the 16 lanes of acc[j]: pairwise interleaved adds, 30 shuffles (a
    // full 16x16 transpose followed by adds takes 64).
    static F transpose_sum(const F acc[16]) {
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
        return _mm512_add_ps(_mm512_shuffle_f32x4(z0, z1, 0x88),
                             _mm512_shuffle_f32x4(z0, z1, 0xDD));
    }
    static float reduce_add(F v) { return _mm512_reduce_add_ps(v); }
    static float reduce_max(F v) { return _mm512_reduce_max_ps(v); }

    static F exp2(F x) { return simd512::exp2(x); }
    static F exp(F x) { return simd512::exp(x); }
    static F silu(F x) { return simd512::silu(x); }
    static F gelu_tanh(F x) { return simd512::gelu_tanh(x); }

    // RoPE on adjacent pairs: (p[0], p[0], ..., p[7], p[7]); sign flipped on even lanes; the
    // two elements of every pair swapped.
    static F dup_pairs(const float* p) {
        const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
        return _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(p)));
    }
    static F neg_even(F v) {
        return _mm512_xor_ps(v, _mm512_castsi512_ps(_mm512_setr_epi32(
                                    INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0,
                                    INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0)));
    }
    static F swap_pairs(F v) { return _mm512_permute_ps(v, 0xB1); }
};

}  // namespace lazyllm::kernels
