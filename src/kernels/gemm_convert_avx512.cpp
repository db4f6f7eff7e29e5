// AVX-512-BF16 fp32 -> bf16 row conversion (VCVTNE2PS2BF16: round to nearest even).
#include <immintrin.h>

#include "kernels/gemm_convert.h"

namespace lazyllm::kernels::detail {

void convert_rows_to_bf16_avx512(const float* src, int64_t n_rows, int64_t n_cols, int64_t ld_src,
                                 uint16_t* dst, int64_t ld_dst) {
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* s = src + r * ld_src;
        uint16_t* d = dst + r * ld_dst;
        int64_t c = 0;
        for (; c + 32 <= n_cols; c += 32) {
            const __m512 lo = _mm512_loadu_ps(s + c);
            const __m512 hi = _mm512_loadu_ps(s + c + 16);
            // cvtne2ps puts its second operand in the low half.
            const __m512bh packed = _mm512_cvtne2ps_pbh(hi, lo);
            _mm512_storeu_si512(d + c, reinterpret_cast<__m512i>(packed));
        }
        for (; c < n_cols; c += 16) {
            const int64_t left = n_cols - c;
            const __mmask16 mask = left >= 16 ? static_cast<__mmask16>(0xffff)
                                              : static_cast<__mmask16>((1u << left) - 1u);
            const __m512 v = _mm512_maskz_loadu_ps(mask, s + c);
            const __m256bh h = _mm512_cvtneps_pbh(v);
            _mm256_mask_storeu_epi16(d + c, mask, reinterpret_cast<__m256i>(h));
        }
    }
}

}  // namespace lazyllm::kernels::detail
