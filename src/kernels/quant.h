// Dequantization of GGML block formats to fp32 (internal kernel API).
// Block layouts follow ggml-common.h. Reference (scalar) and vectorized variants; the
// vectorized one is chosen at run time by the dispatcher and tested against the reference.
#pragma once

#include <cstdint>

#include "lazyllm/ggml_type.h"
#include "kernels/cpu.h"
#include "lazyllm/result.h"

namespace lazyllm::kernels {

class Workspace;  // workspace.h

// bf16 stored as raw bits (round-to-nearest-even from fp32).
using bf16_t = uint16_t;

// n must be a multiple of the type's block size. `src` points at n/block_size blocks.
// Returns an error for types without a dequantizer.
// `isa` picks the variant (Isa::kRef is the scalar reference).
Status dequantize_row_f32(Isa isa, GgmlType type, const void* src, float* dst, int64_t n);

// A matrix [n_out, n_in] as a GGUF tensor stores it: n_out rows of `type` blocks, in place.
struct BlockRows {
    GgmlType type = GgmlType::F32;
    const void* data = nullptr;
    int64_t n_out = 0, n_in = 0;
};

// y[r] = sum_i W[r, i] x[i] for every row r of w, in fp32, each row dequantized (the values of
// dequantize_row_f32) into cache just before its dot product: one activation row against a
// matrix held only as its blocks (the LM head of an exact fp32 prefill) with no fp32 copy. The
// sum of a row runs in 16 lanes (lane j takes the products i = j mod 16, one fused
// multiply-add each, past n_in zeros) added by a fixed pairwise tree, so y is the same bit for
// bit on every ISA and thread count. Rows are spread over ctx.n_threads; the scratch comes
// from ctx.ws (null: allocated per call). Types: those dequantize_row_f32 takes.
Status gemv_rows_f32(const KernelContext& ctx, const BlockRows& w, const float* x, float* y);

// fp32 <-> bf16 helpers (round to nearest even; NaN stays NaN).
bf16_t fp32_to_bf16(float x);
float bf16_to_fp32(bf16_t x);
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float x);

namespace ref {
Status dequantize_row_f32(GgmlType type, const void* src, float* dst, int64_t n);
}

}  // namespace lazyllm::kernels
