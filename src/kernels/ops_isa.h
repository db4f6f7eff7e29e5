// Per-ISA entry points of the row-wise operators (internal; ops.cpp dispatches to them).
// Each takes a block of rows; ops.cpp splits rows over threads.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/ops.h"

namespace lazyllm::kernels::detail {

#define LAZYLLM_OPS_DECLARE(suffix)                                                             \
    void rms_norm_##suffix(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, \
                           float eps);                                                          \
    void swiglu_##suffix(const float* gate_up, float* out, int64_t n_rows, int64_t n_ff);       \
    void add_inplace_##suffix(float* x, const float* y, int64_t n);                             \
    void rope_##suffix(const RopeTable& table, RopeMode mode, float* x, const int32_t* pos,     \
                       int64_t n_rows, int64_t row_stride, int n_heads, int head_dim);

LAZYLLM_OPS_DECLARE(avx2)
LAZYLLM_OPS_DECLARE(avx512)

#undef LAZYLLM_OPS_DECLARE

void rms_norm_bf16_avx512(const float* x, const float* w, uint16_t* y, int64_t n_rows, int64_t n,
                          float eps);
void swiglu_bf16_avx512(const float* gate_up, uint16_t* out, int64_t n_rows, int64_t n_ff);

// fp32 -> bf16 bits, round to nearest even; NaN stays a quiet NaN.
inline uint16_t round_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u | 0x400000u) >> 16);
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}

}  // namespace lazyllm::kernels::detail
