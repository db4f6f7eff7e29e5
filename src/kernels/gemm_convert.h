// fp32 -> bf16 conversion of activation rows for the bf16 GEMM (internal to gemm.cpp).
// Round to nearest even, like VCVTNE2PS2BF16 and oneDNN's reorder.
#pragma once

#include <cstdint>

namespace lazyllm::kernels::detail {

// dst[r, c] = bf16(src[r, c]) for r < n_rows, c < n_cols; src leading dimension ld_src,
// dst leading dimension ld_dst (both in elements). bf16 values as raw bits.
void convert_rows_to_bf16_ref(const float* src, int64_t n_rows, int64_t n_cols, int64_t ld_src,
                              uint16_t* dst, int64_t ld_dst);
// Needs AVX-512F + AVX-512-BF16 (checked by the caller).
void convert_rows_to_bf16_avx512(const float* src, int64_t n_rows, int64_t n_cols, int64_t ld_src,
                                 uint16_t* dst, int64_t ld_dst);

}  // namespace lazyllm::kernels::detail
