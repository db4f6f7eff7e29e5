// Shared by the PackedLinear tests (gemm_test.cpp, gemm_avx2_test.cpp): the GEMM kernels the
// tests' contexts ask for, for one scope, one GEMM problem with strided operands, and its reference
// output from ref::linear on a dense copy of x.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/gemm.h"

namespace lazyllm::test {

// KernelContext::gemm of the contexts these tests make (gemm_ctx()).
inline kernels::GemmKernels& test_gemm_kernels() {
    static kernels::GemmKernels kernels = kernels::GemmKernels::kOwn;
    return kernels;
}

// A context of `isa` and 2 threads asking for the scope's GEMM kernels.
inline kernels::KernelContext gemm_ctx(kernels::Isa isa) {
    return {isa, 2, nullptr, test_gemm_kernels()};
}

// Sets the GEMM kernels of gemm_ctx() for one scope.
class GemmScope {
public:
    explicit GemmScope(kernels::GemmKernels k) : prev_(test_gemm_kernels()) {
        test_gemm_kernels() = k;
    }
    ~GemmScope() { test_gemm_kernels() = prev_; }
    GemmScope(const GemmScope&) = delete;
    GemmScope& operator=(const GemmScope&) = delete;

private:
    kernels::GemmKernels prev_;
};

struct LinearCase {
    int64_t m, n_in, n_out;
    bool bias, accumulate;
    int64_t ldx_pad, ldy_pad;  // x's and y's row strides are n_in + ldx_pad, n_out + ldy_pad
};

// Dense x ([m, n_in], from rows of stride ldx) and ref::linear's y = x W^T (+ b), [m, n_out].
struct LinearReference {
    std::vector<float> x_dense, y;
};

inline LinearReference linear_reference(const LinearCase& c, const float* x, const float* w,
                                        const float* b) {
    const int64_t ldx = c.n_in + c.ldx_pad;
    LinearReference r;
    r.x_dense.resize(static_cast<size_t>(c.m * c.n_in));
    r.y.resize(static_cast<size_t>(c.m * c.n_out));
    for (int64_t row = 0; row < c.m; ++row) {
        std::memcpy(r.x_dense.data() + row * c.n_in, x + row * ldx, c.n_in * sizeof(float));
    }
    kernels::ref::linear(r.x_dense.data(), w, c.bias ? b : nullptr, r.y.data(), c.m, c.n_out, c.n_in);
    return r;
}

}  // namespace lazyllm::test
