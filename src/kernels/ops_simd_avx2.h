// Vec<Isa::kAvx2> (simd.h): 8 fp32 lanes in a __m256, AVX2 + FMA + F16C. Include only from
// files compiled with the AVX2 flags (*_avx2.cpp): the inline functions here must never be
// emitted by a file built for a wider target, whose copy the linker could pick.
#pragma once

#if defined(__AVX512F__)
#error "ops_simd_avx2.h is for files built with the AVX2 flags only"
#endif

#include <immintrin.h>

#include <cstdint>

#include "kernels/simd.h"

namespace lazyllm::kernels {

template <>
struct Vec<Isa::kAvx2> {
    using F = __m256;
    using Mask = __m256i;  // all-ones int32 lanes for maskload/maskstore
    using Ints = __m256i;  // 8 int32
    static constexpr int kWidth = 8;

    static F zero() { return _mm256_setzero_ps(); }
    static F set1(float x) { return _mm256_set1_ps(x); }
    static F load(const float* p) { return _mm256_loadu_ps(p); }
    static F load(const uint16_t* p) {  // 8 IEEE halves, exact
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static F load_aligned(const float* p) { return _mm256_load_ps(p); }
    static F broadcast(const float* p) { return _mm256_broadcast_ss(p); }
    static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
    static void store_aligned(float* p, F v) { _mm256_store_ps(p, v); }

    // Lanes [0, n_left) set (n_left clamped to 8).
    static Mask tail(int64_t n_left) {
        const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const int n = n_left >= 8 ? 8 : static_cast<int>(n_left);
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
    }
    static F load(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
    static void store(float* p, Mask m, F v) { _mm256_maskstore_ps(p, m, v); }
    static F keep(F v, Mask m) { return _mm256_and_ps(v, _mm256_castsi256_ps(m)); }  // 0 outside m

    static Ints set1_i32(int32_t x) { return _mm256_set1_epi32(x); }
    static Ints load_i32(const int32_t* p) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    }
    // p[0, n) and `fill` in the lanes from n on (p[n..] not read).
    static Ints load_i32(const int32_t* p, int64_t n, int32_t fill) {
        const Mask m = tail(n);
        return _mm256_blendv_epi8(_mm256_set1_epi32(fill), _mm256_maskload_epi32(p, m), m);
    }
    // s with -inf in the lanes where key_pos > q_pos (keys a query does not see).
    static F hide_after(F s, Ints key_pos, Ints q_pos) {
        const __m256i hidden = _mm256_cmpgt_epi32(key_pos, q_pos);
        return _mm256_blendv_ps(s, _mm256_set1_ps(-__builtin_inff()), _mm256_castsi256_ps(hidden));
    }
    static bool any_gt(F a, F b) {
        return _mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_GT_OQ)) != 0;
    }
    // bit j: a[j] > b[j]
    static uint32_t gt_bits(F a, F b) {
        return static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_GT_OQ)));
    }
    static F abs(F a) {
        return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
    }
    // v with lane j set to +0 where bit j of `bits` is set.
    static F zero_lanes(F v, uint32_t bits) {
        const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        const __m256i set =
            _mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits & 0xFF)), lane_bit);
        return _mm256_andnot_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(set, lane_bit)), v);
    }
    // Rounded to nearest even (MXCSR default), as nearbyint.
    static Ints round_i32(F v) { return _mm256_cvtps_epi32(v); }
    static Ints add_i32(Ints a, Ints b) { return _mm256_add_epi32(a, b); }
    static int32_t reduce_add_i32(Ints v) {
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
        return _mm_cvtsi128_si32(s);
    }
    // 32 int32 in [-127, 127] (q[0] first) as int8 at p. packs_epi32 / packs_epi16 interleave
    // the 128-bit lanes (dword k of the packed result holds elements 4 perm[k] .. + 3); the
    // permute puts them back in order. The saturating packs are exact in that range.
    static void store_i8x32(int8_t* p, const Ints (&q)[4]) {
        const __m256i v =
            _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        _mm256_storeu_si256(
            reinterpret_cast<__m256i*>(p),
            _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    }

    static F add(F a, F b) { return _mm256_add_ps(a, b); }
    static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
    static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
    static F max(F a, F b) { return _mm256_max_ps(a, b); }
    static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }    // a * b + c
    static F fnmadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a * b
    static F fmsub(F a, F b, F c) { return _mm256_fmsub_ps(a, b, c); }    // a * b - c

    // The low 8 unsigned / signed bytes of q as floats (exact).
    static F from_u8(__m128i q) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q)); }
    static F from_i8(__m128i q) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)); }
    static F from_i32(Ints v) { return _mm256_cvtepi32_ps(v); }
    // 8 int8 pairs (p[2i], p[2i + 1]) as floats: even[i] = p[2i], odd[i] = p[2i + 1] (exact).
    static void i8_pairs(const int8_t* p, F& even, F& odd) {
        const __m256i pairs =
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        even = _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(pairs, 16), 16));
        odd = _mm256_cvtepi32_ps(_mm256_srai_epi32(pairs, 16));
    }
    // 8 bf16 bits -> fp32 (exact).
    static F load_bf16(const uint16_t* p) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    static float reduce_add(F v) {
        __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        x = _mm_add_ps(x, _mm_movehl_ps(x, x));
        x = _mm_add_ss(x, _mm_shuffle_ps(x, x, 1));
        return _mm_cvtss_f32(x);
    }
    // Lane j = the sum of the 8 lanes of acc[j].
    static F transpose_sum(const F acc[8]) {
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
    static float reduce_max(F v) {
        __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        x = _mm_max_ps(x, _mm_movehl_ps(x, x));
        x = _mm_max_ss(x, _mm_shuffle_ps(x, x, 1));
        return _mm_cvtss_f32(x);
    }

    // 2^x; the polynomial of Vec<kAvx512>::exp2. Inputs below -126 flush to +0 (2^n built in
    // the exponent field, so no denormal results).
    static F exp2(F x) {
        const __m256 too_small = _mm256_cmp_ps(x, _mm256_set1_ps(-126.0f), _CMP_LT_OQ);
        x = _mm256_max_ps(x, _mm256_set1_ps(-126.0f));
        x = _mm256_min_ps(x, _mm256_set1_ps(127.0f));
        const __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m256 t = _mm256_mul_ps(_mm256_sub_ps(x, n), _mm256_set1_ps(0.6931471805599453f));
        const __m256i e =
            _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
        const __m256 r = _mm256_mul_ps(exp_poly(t), _mm256_castsi256_ps(e));
        return _mm256_andnot_ps(too_small, r);
    }
    static F exp(F x) { return exp2(_mm256_mul_ps(x, _mm256_set1_ps(1.4426950408889634f))); }
    // x / (1 + e^-x), with a true division.
    static F silu(F x) {
        const __m256 e = exp(_mm256_sub_ps(_mm256_setzero_ps(), x));
        return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    }
    // GELU, tanh approximation: 0.5 x (1 + tanh(z / 2)) = x / (1 + e^-z) with
    // z = 2 sqrt(2/pi) (x + 0.044715 x^3); a true division.
    static F gelu_tanh(F x) {
        const __m256 x2 = _mm256_mul_ps(x, x);
        const __m256 z = _mm256_mul_ps(
            x, _mm256_fmadd_ps(x2, _mm256_set1_ps(kGeluK1), _mm256_set1_ps(kGeluK0)));
        const __m256 e = exp(_mm256_sub_ps(_mm256_setzero_ps(), z));
        return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    }

    // RoPE on adjacent pairs: (p[0], p[0], ..., p[3], p[3]); sign flipped on even lanes; the
    // two elements of every pair swapped.
    static F dup_pairs(const float* p) {
        const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
        return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(p)), dup);
    }
    static F neg_even(F v) {
        return _mm256_xor_ps(v, _mm256_castsi256_ps(_mm256_setr_epi32(INT32_MIN, 0, INT32_MIN, 0,
                                                                      INT32_MIN, 0, INT32_MIN, 0)));
    }
    static F swap_pairs(F v) { return _mm256_permute_ps(v, 0xB1); }

private:
    // e^t for |t| <= ln2 / 2: degree-7 Taylor polynomial, Horner form.
    static F exp_poly(F t) {
        __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.0f / 720.0f));
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.0f / 120.0f));
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.0f / 24.0f));
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.0f / 6.0f));
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.5f));
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.0f));
        return _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.0f));
    }
};

}  // namespace lazyllm::kernels
