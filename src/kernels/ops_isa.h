// Per-ISA entry points of the row-wise operators (internal; ops.cpp enters them through
// isa_dispatch). Written once in ops_inl.h against Vec<I>, instantiated for kAvx2
// (ops_avx2.cpp) and kAvx512 (ops_avx512.cpp). Each takes a block of rows; ops.cpp splits rows
// over threads.
#pragma once

#include <cstdint>

#include "kernels/ops.h"
#include "kernels/quant_blocks.h"
#include "kernels/simd.h"

namespace lazyllm::kernels::detail {

// y, out: fp32 (every target) or bf16 bits (kAvx512 only).
template <Isa I, typename Out>
void rms_norm_rows(const float* x, const float* w, Out* y, int64_t n_rows, int64_t n, float eps);
template <Isa I, typename Out>
void glu_rows(GluAct act, const float* gate_up, Out* out, int64_t n_rows, int64_t n_ff);
template <Isa I>
void add_inplace_span(float* x, const float* y, int64_t n);
template <Isa I>
void rope_rows(const RopeTable& table, RopeMode mode, float* x, const int32_t* pos, int64_t n_rows,
               int64_t row_stride, int n_heads, int head_dim);

// fp32 -> bf16 bits, round to nearest even; NaN stays a quiet NaN.
inline uint16_t round_to_bf16(float f) { return quant::fp32_to_bf16_scalar(f); }

}  // namespace lazyllm::kernels::detail
