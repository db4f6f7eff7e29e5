// Our own AVX2 + FMA fp32 GEMM for the linear layers (used by PackedLinear on Isa::kAvx2).
//
// y[m, n_out] = x[m, n_in] . W^T (+ bias) with x fp32 row-major at any leading dimension (read
// in place, never copied) and W packed once at load into panels of 16 output columns, k-major
// inside a panel, in k blocks of kc (block_k, gemm_avx2.cpp):
//   w_packed[k0 * n_panels * 16 + p * kc_b * 16 + kk * 16 + j] = W[16 p + j][k0 + kk]
// for the block starting at k0 with kc_b = min(kc, n_in - k0) rows; columns past n_out are
// zero. Any n_in and n_out >= 1 fit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lazyllm::kernels::detail {

constexpr int64_t kAvx2GemmPanel = 16;  // packed output columns per panel (two ymm)

size_t avx2_gemm_packed_elems(int64_t n_in, int64_t n_out);

// w: [n_out, n_in] fp32 row-major.
void avx2_gemm_pack(const float* w, int64_t n_in, int64_t n_out, float* w_packed);

struct Avx2GemmArgs {
    const float* x = nullptr;  // [m, n_in], leading dimension ldx >= n_in
    int64_t ldx = 0;
    int64_t m = 0;
    const float* w = nullptr;  // packed by avx2_gemm_pack, 32-byte aligned (aligned loads)
    int64_t n_in = 0, n_out = 0;
    const float* bias = nullptr;  // [n_out] or nullptr
    bool accumulate = false;      // y += x W^T (+ bias) instead of y = ...
    float* y = nullptr;           // [m, n_out], leading dimension ldy >= n_out; columns past
    int64_t ldy = 0;              // n_out are never touched
};

// Runs on up to n_threads OpenMP threads. Requires AVX2 and FMA (the caller checks the CPU).
void avx2_gemm(const Avx2GemmArgs& a, int n_threads);

}  // namespace lazyllm::kernels::detail
