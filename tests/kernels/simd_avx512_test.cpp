// The AVX-512 vector math (ops_simd_avx512.h) against std::exp2 and the scalar bf16 rounding. Only
// the functions that run the vector code are compiled for AVX-512 (the target pragma below), not
// the whole file: a file built with the AVX-512 flags may use them anywhere, in the test
// registrations that run at start-up too (the sanitizer build did, on a CPU without AVX-512). Every
// test skips on CPUs without AVX-512.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu.h"
#include "kernels/quant_blocks.h"

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

// simd512::to_bf16 of xs, 16 lanes at a time (xs.size() a multiple of 16).
std::vector<uint16_t> to_bf16_of(const std::vector<float>& xs) {
    std::vector<uint16_t> out(xs.size());
    for (size_t i = 0; i < xs.size(); i += 16) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.data() + i),
                            simd512::to_bf16(_mm512_loadu_ps(xs.data() + i)));
    }
    return out;
}
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

// The vector bf16 rounding equals the scalar one on random bit patterns, biased toward exact
// ties, subnormals and NaN payloads.
TEST(Simd512, Bf16RoundingMatchesScalarOnRandomBits) {
    if (!has_avx512()) GTEST_SKIP() << "no AVX-512";
    std::mt19937 rng(7);
    std::vector<float> x(1 << 16);
    for (float& v : x) v = quant::bits_f32(static_cast<uint32_t>(rng()));
    for (size_t i = 0; i < x.size(); i += 5) {
        const uint32_t u = static_cast<uint32_t>(rng());
        const uint32_t kinds[] = {(u & 0xffff0000u) | 0x8000u, u & 0x807fffffu, u | 0x7f800000u};
        x[i] = quant::bits_f32(kinds[i % 3]);
    }
    const std::vector<uint16_t> got = to_bf16_of(x);
    for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(got[i], quant::fp32_to_bf16_scalar(x[i]))
            << "fp32 bits " << std::hex << quant::f32_bits(x[i]);
    }
}

}  // namespace
}  // namespace lazyllm::kernels
