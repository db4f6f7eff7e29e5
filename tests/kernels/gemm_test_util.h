// Shared by the PackedLinear tests (gemm_test.cpp, gemm_avx2_test.cpp): the LAZYLLM_GEMM
// switch for one scope, one GEMM problem with strided operands, and its reference output from
// ref::linear on a dense copy of x.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/gemm.h"

namespace lazyllm::test {

// Sets LAZYLLM_GEMM for one scope (PackedLinear::create reads it).
class GemmEnv {
public:
    explicit GemmEnv(const char* value) { setenv("LAZYLLM_GEMM", value, 1); }
    ~GemmEnv() { unsetenv("LAZYLLM_GEMM"); }
    GemmEnv(const GemmEnv&) = delete;
    GemmEnv& operator=(const GemmEnv&) = delete;
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
