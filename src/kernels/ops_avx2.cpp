// AVX2 variants of the row-wise operators (same formulas and operation order as ops_ref.cpp,
// up to fused multiply-adds and the order of the RMSNorm sum).
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "kernels/ops_isa.h"
#include "kernels/ops_simd_avx2.h"

namespace lazyllm::kernels::detail {

using simd256::tail_mask;

namespace {

float hsum(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

void rope_pair_scalar(float* a, float* b, float c, float s) {
    const float x0 = *a, x1 = *b;
    *a = x0 * c - x1 * s;
    *b = x0 * s + x1 * c;
}

}  // namespace

void rms_norm_avx2(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) {
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i + 16 <= n; i += 16) {
            const __m256 a = _mm256_loadu_ps(xr + i), b = _mm256_loadu_ps(xr + i + 8);
            acc0 = _mm256_fmadd_ps(a, a, acc0);
            acc1 = _mm256_fmadd_ps(b, b, acc1);
        }
        for (; i < n; i += 8) {
            const __m256 a = _mm256_maskload_ps(xr + i, tail_mask(n - i));
            acc0 = _mm256_fmadd_ps(a, a, acc0);
        }
        const float sum_sq = hsum(_mm256_add_ps(acc0, acc1));
        const __m256 inv = _mm256_set1_ps(1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps));
        for (i = 0; i < n; i += 8) {
            const __m256i m = tail_mask(n - i);
            const __m256 v = _mm256_maskload_ps(xr + i, m);
            const __m256 g = _mm256_maskload_ps(w + i, m);
            _mm256_maskstore_ps(yr + i, m, _mm256_mul_ps(_mm256_mul_ps(v, inv), g));
        }
    }
}

void swiglu_avx2(const float* gate_up, float* out, int64_t n_rows, int64_t n_ff) {
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* g = gate_up + r * 2 * n_ff;
        const float* u = g + n_ff;
        float* o = out + r * n_ff;
        for (int64_t i = 0; i < n_ff; i += 8) {
            const __m256i m = tail_mask(n_ff - i);
            const __m256 gv = _mm256_maskload_ps(g + i, m);
            const __m256 uv = _mm256_maskload_ps(u + i, m);
            _mm256_maskstore_ps(o + i, m, _mm256_mul_ps(simd256::silu(gv), uv));
        }
    }
}

void add_inplace_avx2(float* x, const float* y, int64_t n) {
    for (int64_t i = 0; i < n; i += 8) {
        const __m256i m = tail_mask(n - i);
        const __m256 a = _mm256_maskload_ps(x + i, m);
        const __m256 b = _mm256_maskload_ps(y + i, m);
        _mm256_maskstore_ps(x + i, m, _mm256_add_ps(a, b));
    }
}

void rope_avx2(const RopeTable& table, RopeMode mode, float* x, const int32_t* pos, int64_t n_rows,
               int64_t row_stride, int n_heads, int head_dim) {
    const int half = table.n_rot() / 2;
    const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
    const __m256 even_neg = _mm256_castsi256_ps(
        _mm256_setr_epi32(INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0));
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* c = table.cos_row(pos[r]);
        const float* s = table.sin_row(pos[r]);
        float* xr = x + r * row_stride;
        if (mode == RopeMode::kNorm) {
            int i = 0;
            for (; i + 4 <= half; i += 4) {
                const __m256 cd =
                    _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(c + i)), dup);
                const __m256 sd = _mm256_xor_ps(
                    _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(s + i)), dup),
                    even_neg);
                for (int h = 0; h < n_heads; ++h) {
                    float* p = xr + static_cast<int64_t>(h) * head_dim + 2 * i;
                    const __m256 v = _mm256_loadu_ps(p);
                    const __m256 swapped = _mm256_permute_ps(v, 0xB1);
                    _mm256_storeu_ps(p, _mm256_fmadd_ps(swapped, sd, _mm256_mul_ps(v, cd)));
                }
            }
            for (; i < half; ++i) {
                for (int h = 0; h < n_heads; ++h) {
                    float* p = xr + static_cast<int64_t>(h) * head_dim + 2 * i;
                    rope_pair_scalar(p, p + 1, c[i], s[i]);
                }
            }
        } else {
            int i = 0;
            for (; i + 8 <= half; i += 8) {
                const __m256 cv = _mm256_loadu_ps(c + i);
                const __m256 sv = _mm256_loadu_ps(s + i);
                for (int h = 0; h < n_heads; ++h) {
                    float* p = xr + static_cast<int64_t>(h) * head_dim + i;
                    const __m256 x0 = _mm256_loadu_ps(p);
                    const __m256 x1 = _mm256_loadu_ps(p + half);
                    _mm256_storeu_ps(p, _mm256_fnmadd_ps(x1, sv, _mm256_mul_ps(x0, cv)));
                    _mm256_storeu_ps(p + half, _mm256_fmadd_ps(x0, sv, _mm256_mul_ps(x1, cv)));
                }
            }
            for (; i < half; ++i) {
                for (int h = 0; h < n_heads; ++h) {
                    float* p = xr + static_cast<int64_t>(h) * head_dim + i;
                    rope_pair_scalar(p, p + half, c[i], s[i]);
                }
            }
        }
    }
}

}  // namespace lazyllm::kernels::detail
