// AVX2 vector math shared by the AVX2 kernels. Include only from *_avx2.cpp files.
#pragma once

#include <immintrin.h>

namespace lazyllm::kernels::simd256 {

// 2^x; same polynomial as simd512::exp2. Inputs below -126 flush to +0 (2^n built in the
// exponent field, so no denormal results).
inline __m256 exp2(__m256 x) {
    const __m256 too_small = _mm256_cmp_ps(x, _mm256_set1_ps(-126.0f), _CMP_LT_OQ);
    x = _mm256_max_ps(x, _mm256_set1_ps(-126.0f));
    x = _mm256_min_ps(x, _mm256_set1_ps(127.0f));
    const __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 t = _mm256_mul_ps(_mm256_sub_ps(x, n), _mm256_set1_ps(0.6931471805599453f));
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.0f));
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const __m256 r = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(too_small, r);
}

inline __m256 exp(__m256 x) { return exp2(_mm256_mul_ps(x, _mm256_set1_ps(1.4426950408889634f))); }

inline __m256 silu(__m256 x) {
    const __m256 e = exp(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

// Lanes [0, n_left) set (n_left clamped to 8), for maskload/maskstore.
inline __m256i tail_mask(int64_t n_left) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int n = n_left >= 8 ? 8 : static_cast<int>(n_left);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}

}  // namespace lazyllm::kernels::simd256
