// Per-ISA dequantization entry points behind the checked API of quant.h. Callers (quant.cpp)
// have already validated the type and that n is a whole number of blocks. The SIMD ones are
// written once in quant_inl.h and instantiated for kAvx2 (quant_avx2.cpp) and kAvx512
// (quant_avx512.cpp); quant.cpp enters them through isa_dispatch.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/simd.h"

namespace lazyllm::kernels {

// The types quant.h dequantizes (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q3_K, Q4_K,
// Q5_K, Q6_K, IQ4_XS, IQ4_NL); false for every other one.
bool quant_type_supported(GgmlType type);

// gemv_rows_f32's dot products: y[k] = w[k] . x for the n_rows rows (at most kGemvRows) of w,
// row k at w + k * n, n floats each (a multiple of kGemvLanes, zero-padded past the matrix's
// n_in): lane j sums the products i = j mod kGemvLanes by fused multiply-adds in order of i,
// and gemv_lane_sum adds the lanes (every variant the same bits).
inline constexpr int kGemvRows = 4;
inline constexpr int kGemvLanes = 16;

// The lanes' total: lane j + 8 added into lane j, then j + 4, j + 2 and j + 1 (a vector
// reduction's halving order). Internal linkage: the copy a file built for a wider ISA emits
// must not be the one the linker picks for the reference.
static inline float gemv_lane_sum(float (&lanes)[kGemvLanes]) {
    for (int half = kGemvLanes / 2; half >= 1; half /= 2) {
        for (int j = 0; j < half; ++j) lanes[j] += lanes[j + half];
    }
    return lanes[0];
}

namespace ref {
// Scalar reference, one block at a time, the same float operations in the same order as
// ggml-quants.c's dequantize_row_* (results bit-identical to ggml's).
void dequantize_unchecked(GgmlType type, const void* src, float* dst, int64_t n);
void dot_rows_f32(const float* w, int n_rows, const float* x, int64_t n, float* y);
}  // namespace ref

namespace detail {
template <Isa I>
void dequantize_unchecked(GgmlType type, const void* src, float* dst, int64_t n);
template <Isa I>
void dot_rows_f32(const float* w, int n_rows, const float* x, int64_t n, float* y);
}  // namespace detail

namespace quant {

template <typename B, typename... Ts>
concept OneOf = (std::is_same_v<B, Ts> || ...);
// The 4- and 5-bit formats of 32-element blocks.
template <typename B>
concept NibbleBlock = OneOf<B, BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1>;

// For a block format (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, IQ4_NL): calls
// f(blocks, n_blocks) with `src` as that format's block array and returns true. False for every
// other type (F32, F16, BF16 are handled by the callers).
template <typename F>
inline bool with_blocks(GgmlType type, const void* src, int64_t n, F&& f) {
    return with_block_type(
        type, [&]<typename B, int kElems>() { f(static_cast<const B*>(src), n / kElems); });
}

}  // namespace quant

}  // namespace lazyllm::kernels
