// Per-ISA dequantization entry points behind the checked API of quant.h. Callers (quant.cpp)
// have already validated the type and that n is a whole number of blocks. The SIMD ones are
// written once in quant_inl.h and instantiated for kAvx2 (quant_avx2.cpp) and kAvx512
// (quant_avx512.cpp); quant.cpp enters them through isa_dispatch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/simd.h"

namespace lazyllm::kernels {

// The types quant.h dequantizes (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q3_K, Q4_K,
// Q5_K, Q6_K, IQ4_XS); false for every other one.
bool quant_type_supported(GgmlType type);

namespace ref {
// Scalar reference, one block at a time, the same float operations in the same order as
// ggml-quants.c's dequantize_row_* (results bit-identical to ggml's).
void dequantize_unchecked(GgmlType type, const void* src, float* dst, int64_t n);
void fp32_to_bf16_row(const float* src, bf16_t* dst, int64_t n);
}  // namespace ref

namespace detail {
template <Isa I>
void dequantize_unchecked(GgmlType type, const void* src, float* dst, int64_t n);
template <Isa I>
void dequantize_bf16_unchecked(GgmlType type, const void* src, bf16_t* dst, int64_t n);
template <Isa I>
void fp32_to_bf16_row(const float* src, bf16_t* dst, int64_t n);
}  // namespace detail

namespace quant {

template <typename B, typename... Ts>
concept OneOf = (std::is_same_v<B, Ts> || ...);
// The 4- and 5-bit formats of 32-element blocks.
template <typename B>
concept NibbleBlock = OneOf<B, BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1>;

// For a block format (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS): calls
// f(blocks, n_blocks) with `src` as that format's block array and returns true. False for every
// other type (F32, F16, BF16 are handled by the callers).
template <typename F>
inline bool with_blocks(GgmlType type, const void* src, int64_t n, F&& f) {
    return with_block_type(
        type, [&]<typename B, int kElems>() { f(static_cast<const B*>(src), n / kElems); });
}

// dst = bf16(dequantize(src)) through an L1-resident fp32 chunk: dequantize(src, buf, len)
// then to_bf16(buf, dst, len) per chunk of kBf16Chunk elements.
template <typename Deq, typename ToBf16>
inline void dequantize_bf16_staged(GgmlType type, const void* src, bf16_t* dst, int64_t n,
                                   Deq&& dequantize, ToBf16&& to_bf16) {
    const BlockShape shape = block_shape(type);
    const auto* bytes = static_cast<const uint8_t*>(src);
    alignas(64) float buf[kBf16Chunk];  // [kBf16Chunk] fp32 staging of one chunk
    for (int64_t i = 0; i < n; i += kBf16Chunk) {
        const int64_t len = std::min(kBf16Chunk, n - i);
        dequantize(bytes + (i / shape.elems) * shape.bytes, buf, len);
        to_bf16(buf, dst + i, len);
    }
}

}  // namespace quant

}  // namespace lazyllm::kernels
