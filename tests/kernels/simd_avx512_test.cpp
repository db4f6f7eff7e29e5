// The AVX-512 vector math (ops_simd_avx512.h) against std::exp2. Only the functions that run
// the vector code are compiled for AVX-512 (the target pragma below), not the whole file: a
// file built with the AVX-512 flags may use them anywhere, in the test registrations that run
// at start-up too (the sanitizer build did, on a CPU without AVX-512). Every test skips on
// CPUs without AVX-512.
#include <immintrin.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")
#include "kernels/ops_simd_avx512.h"

namespace lazyllm::kernels {
namespace {

// simd512::exp2 (or exp2_bf16_finite) of xs, 16 lanes at a time (xs.size() a multiple of 16).
template <bool kBf16Finite>
std::vector<float> map_exp2(const std::vector<float>& xs) {
    std::vector<float> out(xs.size());
    for (size_t i = 0; i < xs.size(); i += 16) {
        const __m512 x = _mm512_loadu_ps(xs.data() + i);
        _mm512_storeu_ps(out.data() + i,
                         kBf16Finite ? simd512::exp2_bf16_finite(x) : simd512::exp2(x));
    }
    return out;
}

std::vector<float> exp2_of(const std::vector<float>& xs) { return map_exp2<false>(xs); }
std::vector<float> exp2_bf16_finite_of(const std::vector<float>& xs) { return map_exp2<true>(xs); }

}  // namespace
}  // namespace lazyllm::kernels
#pragma GCC pop_options

namespace lazyllm::kernels {
namespace {

bool has_avx512() { return isa_supported(Isa::kAvx512, detect_cpu_features()); }

// A dense grid over the softmax range [-150, 8], with integers and values just around them.
std::vector<float> grid() {
    std::vector<float> xs;
    for (float x = -150.0f; x <= 8.0f; x += 1.0f / 64) xs.push_back(x);
    for (int n = -149; n <= 8; ++n) {
        xs.push_back(std::nextafter(static_cast<float>(n), -1e9f));
        xs.push_back(std::nextafter(static_cast<float>(n), 1e9f));
    }
    while (xs.size() % 16 != 0) xs.push_back(0.0f);
    return xs;
}

void expect_relative(const std::vector<float>& xs, const std::vector<float>& got, double tol,
                     const char* what) {
    int bad = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
        const double want = std::exp2(static_cast<double>(xs[i]));
        // Below 2^-126 the result is subnormal or flushed: an absolute bound there.
        const double err = want < 0x1p-126 ? std::fabs(got[i] - want) / 0x1p-126
                                           : std::fabs(got[i] - want) / want;
        if (!(err <= tol) && bad++ < 5) {
            ADD_FAILURE() << what << " x=" << xs[i] << " got " << got[i] << " want " << want;
        }
    }
    EXPECT_EQ(bad, 0) << what;
}

TEST(Simd512, Exp2Bf16RelativeError) {
    if (!has_avx512()) GTEST_SKIP() << "no AVX-512";
    const std::vector<float> xs = grid();
    expect_relative(xs, exp2_bf16_finite_of(xs), 1e-4, "exp2_bf16_finite");
}

TEST(Simd512, Exp2RelativeError) {
    if (!has_avx512()) GTEST_SKIP() << "no AVX-512";
    const std::vector<float> xs = grid();
    expect_relative(xs, exp2_of(xs), 1e-6, "exp2");
}

TEST(Simd512, MaskedInputsGiveZero) {
    if (!has_avx512()) GTEST_SKIP() << "no AVX-512";
    std::vector<float> xs(16, -std::numeric_limits<float>::infinity());
    xs[1] = -1e30f;
    xs[2] = -161.0f;
    for (float v : exp2_of(xs)) EXPECT_EQ(v, 0.0f);
    // The finite variant: the attention kernel's masked score minus any running max.
    std::vector<float> finite(16, -3e30f);
    finite[1] = -2e30f;
    finite[2] = -161.0f;
    finite[3] = -1e6f;
    for (float v : exp2_bf16_finite_of(finite)) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace lazyllm::kernels
