// AVX-512 variants of the row-wise operators (same formulas and operation order as ops_ref.cpp,
// up to fused multiply-adds and the order of the RMSNorm sum).
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "kernels/ops_isa.h"
#include "kernels/ops_simd_avx512.h"

namespace lazyllm::kernels::detail {

using simd512::tail_mask;

namespace {

// 1 / sqrt(mean(x^2) + eps) of one row.
float rms_inv(const float* xr, int64_t n, float eps) {
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512 a = _mm512_loadu_ps(xr + i), b = _mm512_loadu_ps(xr + i + 16);
        acc0 = _mm512_fmadd_ps(a, a, acc0);
        acc1 = _mm512_fmadd_ps(b, b, acc1);
    }
    for (; i < n; i += 16) {
        const __m512 a = _mm512_maskz_loadu_ps(tail_mask(n - i), xr + i);
        acc0 = _mm512_fmadd_ps(a, a, acc0);
    }
    const float sum_sq = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    return 1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps);
}

}  // namespace

void rms_norm_avx512(const float* x, const float* w, float* y, int64_t n_rows, int64_t n,
                     float eps) {
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        const __m512 inv = _mm512_set1_ps(rms_inv(xr, n, eps));
        for (int64_t i = 0; i < n; i += 16) {
            const __mmask16 m = tail_mask(n - i);
            const __m512 v = _mm512_maskz_loadu_ps(m, xr + i);
            const __m512 g = _mm512_maskz_loadu_ps(m, w + i);
            _mm512_mask_storeu_ps(yr + i, m, _mm512_mul_ps(_mm512_mul_ps(v, inv), g));
        }
    }
}

void rms_norm_bf16_avx512(const float* x, const float* w, uint16_t* y, int64_t n_rows, int64_t n,
                          float eps) {
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* xr = x + r * n;
        uint16_t* yr = y + r * n;
        const __m512 inv = _mm512_set1_ps(rms_inv(xr, n, eps));
        for (int64_t i = 0; i < n; i += 16) {
            const __mmask16 m = tail_mask(n - i);
            const __m512 v = _mm512_maskz_loadu_ps(m, xr + i);
            const __m512 g = _mm512_maskz_loadu_ps(m, w + i);
            _mm256_mask_storeu_epi16(yr + i, m,
                                     simd512::to_bf16(_mm512_mul_ps(_mm512_mul_ps(v, inv), g)));
        }
    }
}

void swiglu_avx512(const float* gate_up, float* out, int64_t n_rows, int64_t n_ff) {
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* g = gate_up + r * 2 * n_ff;
        const float* u = g + n_ff;
        float* o = out + r * n_ff;
        for (int64_t i = 0; i < n_ff; i += 16) {
            const __mmask16 m = tail_mask(n_ff - i);
            const __m512 gv = _mm512_maskz_loadu_ps(m, g + i);
            const __m512 uv = _mm512_maskz_loadu_ps(m, u + i);
            _mm512_mask_storeu_ps(o + i, m, _mm512_mul_ps(simd512::silu(gv), uv));
        }
    }
}

void swiglu_bf16_avx512(const float* gate_up, uint16_t* out, int64_t n_rows, int64_t n_ff) {
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* g = gate_up + r * 2 * n_ff;
        const float* u = g + n_ff;
        uint16_t* o = out + r * n_ff;
        for (int64_t i = 0; i < n_ff; i += 16) {
            const __mmask16 m = tail_mask(n_ff - i);
            const __m512 gv = _mm512_maskz_loadu_ps(m, g + i);
            const __m512 uv = _mm512_maskz_loadu_ps(m, u + i);
            _mm256_mask_storeu_epi16(o + i, m,
                                     simd512::to_bf16(_mm512_mul_ps(simd512::silu(gv), uv)));
        }
    }
}

void add_inplace_avx512(float* x, const float* y, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m512 a = _mm512_maskz_loadu_ps(m, x + i);
        const __m512 b = _mm512_maskz_loadu_ps(m, y + i);
        _mm512_mask_storeu_ps(x + i, m, _mm512_add_ps(a, b));
    }
}

namespace {

void rope_pair_scalar(float* a, float* b, float c, float s) {
    const float x0 = *a, x1 = *b;
    *a = x0 * c - x1 * s;
    *b = x0 * s + x1 * c;
}

}  // namespace

void rope_avx512(const RopeTable& table, RopeMode mode, float* x, const int32_t* pos,
                 int64_t n_rows, int64_t row_stride, int n_heads, int head_dim) {
    const int half = table.n_rot() / 2;
    // kNorm: 8 adjacent pairs per vector; cos duplicated per pair, sin negated on even lanes.
    const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m512 even_neg = _mm512_castsi512_ps(
        _mm512_setr_epi32(INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0,
                          INT32_MIN, 0, INT32_MIN, 0, INT32_MIN, 0));
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* c = table.cos_row(pos[r]);
        const float* s = table.sin_row(pos[r]);
        float* xr = x + r * row_stride;
        if (mode == RopeMode::kNorm) {
            int i = 0;
            for (; i + 8 <= half; i += 8) {
                const __m512 cd =
                    _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(c + i)));
                const __m512 sd = _mm512_xor_ps(
                    _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(s + i))),
                    even_neg);
                for (int h = 0; h < n_heads; ++h) {
                    float* p = xr + static_cast<int64_t>(h) * head_dim + 2 * i;
                    const __m512 v = _mm512_loadu_ps(p);
                    const __m512 swapped = _mm512_permute_ps(v, 0xB1);  // (x1, x0) per pair
                    _mm512_storeu_ps(p, _mm512_fmadd_ps(swapped, sd, _mm512_mul_ps(v, cd)));
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
            for (; i + 16 <= half; i += 16) {
                const __m512 cv = _mm512_loadu_ps(c + i);
                const __m512 sv = _mm512_loadu_ps(s + i);
                for (int h = 0; h < n_heads; ++h) {
                    float* p = xr + static_cast<int64_t>(h) * head_dim + i;
                    const __m512 x0 = _mm512_loadu_ps(p);
                    const __m512 x1 = _mm512_loadu_ps(p + half);
                    _mm512_storeu_ps(p, _mm512_fnmadd_ps(x1, sv, _mm512_mul_ps(x0, cv)));
                    _mm512_storeu_ps(p + half, _mm512_fmadd_ps(x0, sv, _mm512_mul_ps(x1, cv)));
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
