// Dequantization of GGML block formats to fp32 (internal kernel API).
// Block layouts follow ggml-common.h. Reference (scalar) and vectorized variants; the
// vectorized one is chosen at run time by the dispatcher and tested against the reference.
#pragma once

#include <cstdint>

#include "lazyllm/ggml_type.h"
#include "kernels/cpu.h"
#include "lazyllm/result.h"

namespace lazyllm::kernels {

// bf16 stored as raw bits (round-to-nearest-even from fp32).
using bf16_t = uint16_t;

// n must be a multiple of the type's block size. `src` points at n/block_size blocks.
// Returns an error for types without a dequantizer.
// `isa` picks the variant (Isa::kRef is the scalar reference).
Status dequantize_row_f32(Isa isa, GgmlType type, const void* src, float* dst, int64_t n);

// fp32 <-> bf16 helpers (round to nearest even; NaN stays NaN).
bf16_t fp32_to_bf16(float x);
float bf16_to_fp32(bf16_t x);
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float x);

namespace ref {
Status dequantize_row_f32(GgmlType type, const void* src, float* dst, int64_t n);
}

}  // namespace lazyllm::kernels
