// What the QuantLinear tests share: the formats, random quantized matrices with their
// dequantized values, activations with the awkward cases, the shapes, and one forward() run.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu.h"
#include "kernels/qgemv.h"
#include "kernels/quant.h"
#include "support/quantize_ref.h"
#include "support/random.h"

namespace lazyllm::kernels::qgemv_test {

// IQ4_NL is held as Q8_0 (its grid values as the quants).
inline constexpr GgmlType kTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                                      GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::IQ4_NL};
// Super-blocks of 256, taken with their own scales: fp16 per super-block, and per 32-element
// block 6-bit multipliers (Q4_K, Q5_K, IQ4_XS's on its non-linear grid) or two int8 half-block
// scales (Q3_K, Q6_K).
inline constexpr GgmlType kKTypes[] = {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                                       GgmlType::Q3_K, GgmlType::IQ4_XS};

// The int8 kernels' context: the best ISA up to AVX-512 (with AMX, prompt rows would take the
// tiles, which qgemv_tiles_test.cpp checks).
inline KernelContext fast_ctx(int n_threads) {
    return {std::min(best_isa(detect_cpu_features()), Isa::kAvx512), n_threads};
}
inline constexpr KernelContext kRefCtx{Isa::kRef, 1};

using test::random_vec;

// A random [n_out, n_in] matrix quantized to `type`, with its dequantized fp32 values.
struct QuantMatrix {
    std::vector<uint8_t> blocks;
    std::vector<float> deq;  // [n_out, n_in]
};

inline QuantMatrix make_matrix(GgmlType type, int64_t n_out, int64_t n_in, uint32_t seed) {
    // Shifted range so that the affine formats' mins are not all near -1.
    const auto w = random_vec(n_out * n_in, seed, -0.7f, 1.0f);
    QuantMatrix q;
    q.blocks = testing::quantize_ref(type, w.data(), n_out * n_in);
    q.deq.resize(w.size());
    const Status s =
        dequantize_row_f32(Isa::kRef, type, q.blocks.data(), q.deq.data(), n_out * n_in);
    EXPECT_TRUE(s.ok()) << s.error().message();
    return q;
}

// Activations with the awkward cases: an all-zero block (d_x = 0) and a row with a large
// dynamic range.
inline std::vector<float> make_x(int64_t m, int64_t ldx, int64_t n_in, uint32_t seed) {
    auto x = random_vec(m * ldx, seed);
    if (n_in >= 64) std::fill(x.begin(), x.begin() + 32, 0.0f);
    if (m >= 2) {
        for (int64_t i = 0; i < n_in; ++i) x[ldx + i] *= (i % 7 == 0) ? 30.0f : 0.01f;
    }
    return x;
}

struct GemvShape {
    int64_t m, n_out, n_in, ldx_pad, ldy_pad;
    bool bias, accumulate;

    int64_t ldx() const { return n_in + ldx_pad; }
    int64_t ldy() const { return n_out + ldy_pad; }
};

inline std::string describe(GgmlType type, const GemvShape& s, int n_threads) {
    return std::string(ggml_type_name(type)) + " m=" + std::to_string(s.m) +
           " n_out=" + std::to_string(s.n_out) + " n_in=" + std::to_string(s.n_in) + " ldx+" +
           std::to_string(s.ldx_pad) + " ldy+" + std::to_string(s.ldy_pad) +
           (s.bias ? " bias" : "") + (s.accumulate ? " acc" : "") +
           " threads=" + std::to_string(n_threads);
}

inline std::vector<GemvShape> shapes() {
    std::vector<GemvShape> out;
    for (int64_t m : {1, 2, 3, 5, 8, 11, 19}) {
        out.push_back({m, 37, 96, 0, 0, false, false});
        out.push_back({m, 16, 32, 3, 5, true, false});
        out.push_back({m, 53, 64, 32, 1, true, true});
        out.push_back({m, 7, 160, 0, 2, false, true});
    }
    out.push_back({4, 1000, 320, 0, 0, true, false});  // large enough to run on 2 threads
    out.push_back({1, 1000, 320, 16, 3, false, true});
    return out;
}

// Shapes whose n_in is a whole number of 256-element super-blocks (K-quants).
inline std::vector<GemvShape> k_shapes() {
    std::vector<GemvShape> out;
    for (int64_t m : {1, 3, 8, 11, 19}) {
        out.push_back({m, 37, 256, 0, 0, false, false});
        out.push_back({m, 21, 512, 32, 3, true, true});
    }
    out.push_back({5, 600, 768, 0, 0, true, false});
    return out;
}

// Every (type, shape) pair: the 32-element formats on shapes(), the K-quants on k_shapes().
inline std::vector<std::pair<GgmlType, GemvShape>> cases() {
    std::vector<std::pair<GgmlType, GemvShape>> out;
    for (GgmlType type : kTypes) {
        for (const GemvShape& s : shapes()) out.emplace_back(type, s);
    }
    for (GgmlType type : kKTypes) {
        for (const GemvShape& s : k_shapes()) out.emplace_back(type, s);
    }
    return out;
}

// One case's random data: the weights (and the part over them), bias, input rows and initial
// output.
struct CaseData {
    QuantMatrix wq;
    std::vector<float> bias, x, y0;
    QuantLinear::Part part;

    const float* bias_if(const GemvShape& s) const { return s.bias ? bias.data() : nullptr; }
};

inline CaseData make_case(GgmlType type, const GemvShape& s, uint32_t seed) {
    CaseData d{make_matrix(type, s.n_out, s.n_in, seed),
               random_vec(s.n_out, seed + 1),
               make_x(s.m, s.ldx(), s.n_in, seed + 2),
               random_vec(s.m * s.ldy(), seed + 3),
               {}};
    d.part = {type, d.wq.blocks.data(), s.n_out};
    return d;
}

// Runs forward() on a copy of y0 (random, so the row padding can be checked untouched).
// outliers: forward()'s, each row's outlier channels exact.
inline std::vector<float> run(const QuantLinear& lin, const GemvShape& s,
                              const std::vector<float>& x, const std::vector<float>& y0,
                              bool outliers = false) {
    std::vector<float> y = y0;
    lin.forward(x.data(), s.m, y.data(), s.ldx(), s.ldy(), s.accumulate, nullptr,
                outliers ? QuantRows::kPromptOutliers : QuantRows::kDecode);
    return y;
}

// Builds the reference and the `isa` QuantLinear over `blocks` and checks forward() bit-exact
// for 1 and 2 threads (with the outlier channels where `outliers`).
inline void expect_isa_matches_ref(Isa isa, GgmlType type, const std::vector<uint8_t>& blocks,
                                   const GemvShape& s, const std::vector<float>& x, uint32_t seed,
                                   bool outliers = false) {
    const auto bias = test::random_vec(s.n_out, seed + 1);
    const auto y0 = test::random_vec(s.m * s.ldy(), seed + 3);
    const QuantLinear::Part part{type, blocks.data(), s.n_out};
    const float* b = s.bias ? bias.data() : nullptr;
    auto ref = QuantLinear::create(kRefCtx, {&part, 1}, s.n_in, b);
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    const auto want = run(*ref, s, x, y0, outliers);
    for (int n_threads : {1, 2}) {
        auto fast = QuantLinear::create({isa, n_threads}, {&part, 1}, s.n_in, b);
        ASSERT_TRUE(fast.ok()) << fast.error().message();
        ASSERT_TRUE(fast->uses_fast_path());
        const auto got = run(*fast, s, x, y0, outliers);
        for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(got[i], want[i])
                << describe(type, s, n_threads) << " isa " << static_cast<int>(isa) << " at " << i;
        }
    }
}

}  // namespace lazyllm::kernels::qgemv_test
