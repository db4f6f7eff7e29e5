// Shared by the reference quantizers (quantize_ref.cpp, quantize_ref_k.cpp), test-side only:
// ggml's rounding helpers and the super-block formats' quantizers.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"

namespace lazyllm::testing::detail {

inline uint16_t to_half(float x) { return kernels::fp32_to_fp16(x); }
inline float from_half(uint16_t h) { return kernels::fp16_to_fp32(h); }

// ggml's nearest_int: round half to even via the 1.5 * 2^23 trick (|x| <= 2^22).
inline int nearest_int(float fval) {
    const float val = fval + 12582912.f;
    int i;
    std::memcpy(&i, &val, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}

void quantize_q4_k(const float* x, kernels::quant::BlockQ4K* y, int64_t nb);
void quantize_q5_k(const float* x, kernels::quant::BlockQ5K* y, int64_t nb);
void quantize_q6_k(const float* x, kernels::quant::BlockQ6K* y, int64_t nb);
void quantize_q3_k(const float* x, kernels::quant::BlockQ3K* y, int64_t nb);
void quantize_iq4_xs(const float* x, kernels::quant::BlockIQ4XS* y, int64_t nb);
void quantize_iq4_nl(const float* x, kernels::quant::BlockIQ4NL* y, int64_t nb);

}  // namespace lazyllm::testing::detail
