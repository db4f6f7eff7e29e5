// Per-ISA dequantization entry points behind the checked API of quant.h. Callers (quant.cpp)
// have already validated the type and that n is a whole number of blocks; the AVX2 / AVX-512
// functions may only be entered after a run-time CPU check (isa_supported).
#pragma once

#include <cstdint>

#include "kernels/quant.h"

namespace lazyllm::kernels {

// The types quant.h dequantizes (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K,
// Q6_K); false for every other one.
bool quant_type_supported(GgmlType type);

namespace ref {
// Scalar reference, one block at a time, the same float operations in the same order as
// ggml-quants.c's dequantize_row_* (results bit-identical to ggml's).
void dequantize_unchecked(GgmlType type, const void* src, float* dst, int64_t n);
void fp32_to_bf16_row(const float* src, bf16_t* dst, int64_t n);
}  // namespace ref

namespace avx2 {
void dequantize_unchecked(GgmlType type, const void* src, float* dst, int64_t n);
void dequantize_bf16_unchecked(GgmlType type, const void* src, bf16_t* dst, int64_t n);
void fp32_to_bf16_row(const float* src, bf16_t* dst, int64_t n);
}  // namespace avx2

namespace avx512 {
void dequantize_unchecked(GgmlType type, const void* src, float* dst, int64_t n);
void dequantize_bf16_unchecked(GgmlType type, const void* src, bf16_t* dst, int64_t n);
void fp32_to_bf16_row(const float* src, bf16_t* dst, int64_t n);
}  // namespace avx512

}  // namespace lazyllm::kernels
