// QuantLinear's outlier channels (qgemv_outliers.h; forward(..., QuantRows::kPromptOutliers) on
// the int8 kernels): each row's
// channels far above its mean magnitude leave its int8 blocks and enter as exact fp32 terms.
// The fast kernels (AVX-512 VNNI, AVX2) stay bit-identical to the reference with them; a row's
// output is that row's alone (the same in any call); the error against fp32 is then bounded by
// the other channels' rounding alone; without them (decode) the outliers are rounded; the
// columns kept per layer and those dequantized per call give the same output;
// QuantLinear::weight() is GGML's value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu.h"
#include "kernels/qgemv.h"
#include "kernels/qgemv_fixture.h"
#include "kernels/quant.h"

namespace lazyllm::kernels {
namespace {

using namespace qgemv_test;  // NOLINT(google-build-using-namespace): the fixture's helpers
using test::random_vec;

// m rows of uniform [-1, 1) with `channels` of magnitude in [scale / 2, scale) in every row (a
// residual stream's outlier channels: far beyond the 12 times the row's mean that counts).
std::vector<float> planted_x(int64_t m, int64_t ldx, std::span<const int64_t> channels, float scale,
                             uint32_t seed) {
    auto x = random_vec(m * ldx, seed);
    for (int64_t r = 0; r < m; ++r) {
        for (int64_t c : channels) {
            float& v = x[r * ldx + c];
            v = std::copysign(scale * (0.5f + 0.5f * std::fabs(v)), v);
        }
    }
    return x;
}

std::vector<Isa> fast_linear_isas() {
    std::vector<Isa> out;
    const CpuFeatures f = detect_cpu_features();
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
        if (isa_supported(isa, f) && QuantLinear::has_fast_path({isa, 1})) out.push_back(isa);
    }
    return out;
}

TEST(QuantLinearOutliers, WeightIsGgmlsDequantizedValue) {
    for (const auto types :
         {std::span<const GgmlType>(kTypes), std::span<const GgmlType>(kKTypes)}) {
        for (GgmlType type : types) {
            const int64_t n_out = 37, n_in = types.data() == kTypes ? 96 : 512;
            const QuantMatrix wq = make_matrix(type, n_out, n_in, 40 + static_cast<int>(type));
            const QuantLinear::Part part{type, wq.blocks.data(), n_out};
            for (const KernelContext& ctx : {kRefCtx, fast_ctx(1)}) {
                auto lin = QuantLinear::create(ctx, {&part, 1}, n_in);
                ASSERT_TRUE(lin.ok()) << lin.error().message();
                for (int64_t n = 0; n < n_out; ++n) {
                    for (int64_t c = 0; c < n_in; ++c) {
                        ASSERT_EQ(lin->weight(n, c), wq.deq[n * n_in + c])
                            << ggml_type_name(type) << " n=" << n << " c=" << c;
                    }
                }
            }
        }
    }
}

// Parts of several types: weight() finds the part that holds row n.
TEST(QuantLinearOutliers, WeightOfMixedTypeParts) {
    const int64_t n_in = 256;
    const std::pair<GgmlType, int64_t> runs[] = {
        {GgmlType::Q4_K, 24}, {GgmlType::Q6_K, 9}, {GgmlType::Q8_0, 16}};
    std::vector<QuantMatrix> mats;
    std::vector<QuantLinear::Part> parts;
    for (const auto& [type, rows] : runs) mats.push_back(make_matrix(type, rows, n_in, 70 + rows));
    for (size_t i = 0; i < mats.size(); ++i) {
        parts.push_back({runs[i].first, mats[i].blocks.data(), runs[i].second});
    }
    auto lin = QuantLinear::create(fast_ctx(1), parts, n_in);
    ASSERT_TRUE(lin.ok()) << lin.error().message();
    int64_t first = 0;
    for (size_t i = 0; i < mats.size(); ++i) {
        for (int64_t n = 0; n < runs[i].second; ++n) {
            for (int64_t c = 0; c < n_in; c += 5) {
                ASSERT_EQ(lin->weight(first + n, c), mats[i].deq[n * n_in + c])
                    << "part " << i << " n=" << n << " c=" << c;
            }
        }
        first += runs[i].second;
    }
}

// Row counts from 1 (decode-sized) up, with padding, bias and accumulation; more planted
// channels than the 8 a row takes in one case (the largest win); whole register tiles of the
// fp32 terms (4 rows x 64 outputs) with rows and outputs left over.
TEST(QuantLinearOutliers, FastKernelsMatchReferenceBitExact) {
    const auto isas = fast_linear_isas();
    if (isas.empty()) GTEST_SKIP() << "no AVX2 or AVX-512 VNNI";
    const std::vector<int64_t> few = {3, 40, 77, 95};
    std::vector<int64_t> many;
    for (int64_t c = 1; c < 256; c += 11) many.push_back(c);  // 24 channels
    uint32_t seed = 3000;
    for (const auto types :
         {std::span<const GgmlType>(kTypes), std::span<const GgmlType>(kKTypes)}) {
        for (GgmlType type : types) {
            const bool k = types.data() == kKTypes;
            for (const GemvShape& s : {GemvShape{1, 37, k ? 256 : 96, 0, 0, false, false},
                                       GemvShape{16, 37, k ? 256 : 96, 0, 0, false, false},
                                       GemvShape{23, 53, 256, 32, 3, true, true},
                                       GemvShape{70, 41, k ? 512 : 160, 0, 2, true, false},
                                       GemvShape{37, 150, 256, 0, 5, true, true}}) {
                const bool crowded = s.n_in >= 256 && s.m == 23;
                const QuantMatrix wq = make_matrix(type, s.n_out, s.n_in, seed += 7);
                const auto x = planted_x(s.m, s.ldx(), crowded ? many : few,
                                         crowded ? 400.0f : 40.0f, seed + 2);
                for (Isa isa : isas) {
                    expect_isa_matches_ref(isa, type, wq.blocks, s, x, seed, /*outliers=*/true);
                }
            }
        }
    }
}

// The bound of qgemv_test.cpp's file comment with the outlier channels' rounding removed:
// sum over blocks of (amax of the block's other channels / 254) * sum |w|, plus the fp32
// accumulation. Were the outlier channels (x 1000) rounded in their blocks, the error would be
// hundreds of times this.
TEST(QuantLinearOutliers, ErrorBoundedByTheOtherChannels) {
    const std::vector<int64_t> channels = {7, 100, 101, 250, 300};
    const GemvShape s{24, 45, 512, 0, 0, false, false};
    const auto x = planted_x(s.m, s.ldx(), channels, 1000.0f, 17);
    std::vector<bool> outlier(s.n_in, false);
    for (int64_t c : channels) outlier[c] = true;
    uint32_t seed = 3500;
    for (const auto types :
         {std::span<const GgmlType>(kTypes), std::span<const GgmlType>(kKTypes)}) {
        for (GgmlType type : types) {
            const QuantMatrix wq = make_matrix(type, s.n_out, s.n_in, seed += 7);
            const QuantLinear::Part part{type, wq.blocks.data(), s.n_out};
            auto lin = QuantLinear::create(fast_ctx(2), {&part, 1}, s.n_in);
            ASSERT_TRUE(lin.ok()) << lin.error().message();
            const auto y = run(*lin, s, x, std::vector<float>(s.m * s.n_out, 0.0f), true);
            for (int64_t r = 0; r < s.m; ++r) {
                for (int64_t o = 0; o < s.n_out; ++o) {
                    double want = 0.0, mag = 0.0, bound = 0.0;
                    for (int64_t b = 0; b < s.n_in / 32; ++b) {
                        double amax = 0.0, sum_w = 0.0;
                        for (int64_t j = b * 32; j < b * 32 + 32; ++j) {
                            const double xj = x[r * s.n_in + j], wj = wq.deq[o * s.n_in + j];
                            want += xj * wj;
                            mag += std::fabs(xj * wj);
                            if (!outlier[j]) amax = std::max(amax, std::fabs(xj));
                            sum_w += std::fabs(wj);
                        }
                        bound += amax / 254.0 * sum_w;
                    }
                    ASSERT_NEAR(y[r * s.n_out + o], want, 1.01 * bound + 1e-5 * mag)
                        << ggml_type_name(type) << " r=" << r << " o=" << o;
                }
            }
        }
    }
}

// Without them (decode steps) the planted channels keep their int8 rounding, so the error is
// far above the one with them, at every row count.
TEST(QuantLinearOutliers, WithoutThemTheOutliersAreRounded) {
    const std::vector<int64_t> channels = {9, 130};
    const auto x = planted_x(16, 256, channels, 1000.0f, 23);
    const QuantMatrix wq = make_matrix(GgmlType::Q8_0, 32, 256, 24);
    const QuantLinear::Part part{GgmlType::Q8_0, wq.blocks.data(), 32};
    auto lin = QuantLinear::create(fast_ctx(1), {&part, 1}, 256);
    ASSERT_TRUE(lin.ok()) << lin.error().message();
    for (int64_t m : {1, 16}) {
        const GemvShape s{m, 32, 256, 0, 0, false, false};
        const std::vector<float> y0(m * 32, 0.0f);
        const auto with = run(*lin, s, x, y0, true), without = run(*lin, s, x, y0, false);
        double err_with = 0.0, err_without = 0.0;
        for (int64_t r = 0; r < m; ++r) {
            for (int64_t o = 0; o < 32; ++o) {
                double want = 0.0;
                for (int64_t j = 0; j < 256; ++j) {
                    want += double{x[r * 256 + j]} * wq.deq[o * 256 + j];
                }
                err_with = std::max(err_with, std::fabs(with[r * 32 + o] - want));
                err_without = std::max(err_without, std::fabs(without[r * 32 + o] - want));
            }
        }
        EXPECT_GT(err_without, 20.0 * err_with)
            << "m " << m << " with " << err_with << " without " << err_without;
    }
}

// A row's output is the same whatever rows share its call: rows with different planted
// channels, one with none, and one with more than 8, computed in one call of 40 rows, alone,
// and in calls of 3 and 17 rows, on every kernel set and 1 or 2 threads.
TEST(QuantLinearOutliers, ARowsOutputIsItsOwn) {
    const int64_t m = 40, n_in = 512, n_out = 70;
    auto x = random_vec(m * n_in, 51);
    for (int64_t r = 0; r < m; ++r) {
        if (r % 7 == 3) continue;  // no outlier channel
        const int n_planted = r % 5 == 0 ? 11 : 1 + r % 4;
        for (int i = 0; i < n_planted; ++i) {
            float& v = x[r * n_in + (r * 37 + i * 101) % n_in];
            v = std::copysign(30.0f + 40.0f * std::fabs(v) + static_cast<float>(i), v);
        }
    }
    std::vector<KernelContext> ctxs = {kRefCtx};
    for (Isa isa : fast_linear_isas()) {
        for (int n_threads : {1, 2}) ctxs.push_back({isa, n_threads});
    }
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q6_K, GgmlType::Q8_0}) {
        const QuantMatrix wq = make_matrix(type, n_out, n_in, 52 + static_cast<int>(type));
        const QuantLinear::Part part{type, wq.blocks.data(), n_out};
        for (const KernelContext& ctx : ctxs) {
            auto lin = QuantLinear::create(ctx, {&part, 1}, n_in);
            ASSERT_TRUE(lin.ok()) << lin.error().message();
            std::vector<float> whole(m * n_out);
            lin->forward(x.data(), m, whole.data(), 0, 0, false, nullptr,
                         QuantRows::kPromptOutliers);
            for (int64_t step : {1, 3, 17}) {
                std::vector<float> parts(m * n_out);
                for (int64_t r0 = 0; r0 < m; r0 += step) {
                    lin->forward(x.data() + r0 * n_in, std::min(step, m - r0),
                                 parts.data() + r0 * n_out, 0, 0, false, nullptr,
                                 QuantRows::kPromptOutliers);
                }
                for (size_t i = 0; i < whole.size(); ++i) {
                    ASSERT_EQ(parts[i], whole[i])
                        << ggml_type_name(type) << " isa " << static_cast<int>(ctx.isa)
                        << " threads " << ctx.n_threads << " step " << step << " row " << i / n_out;
                }
            }
        }
    }
}

// One layer called with ever new outlier channels: past the 64 columns it keeps, the rest are
// dequantized per call, and every call equals a fresh layer's output.
TEST(QuantLinearOutliers, ColumnsBeyondTheCacheGiveTheSameOutput) {
    const GemvShape s{16, 48, 1024, 0, 0, true, false};
    const QuantMatrix wq = make_matrix(GgmlType::Q4_K, s.n_out, s.n_in, 31);
    const QuantLinear::Part part{GgmlType::Q4_K, wq.blocks.data(), s.n_out};
    const auto bias = random_vec(s.n_out, 32);
    auto lin = QuantLinear::create(fast_ctx(2), {&part, 1}, s.n_in, bias.data());
    ASSERT_TRUE(lin.ok()) << lin.error().message();
    for (int call = 0; call < 7; ++call) {  // 7 x 12 = 84 distinct channels
        std::vector<int64_t> channels;
        for (int i = 0; i < 12; ++i) channels.push_back(call * 12 + i * 83 % 1000);
        const auto x = planted_x(s.m, s.ldx(), channels, 50.0f, 33 + call);
        auto fresh = QuantLinear::create(fast_ctx(2), {&part, 1}, s.n_in, bias.data());
        ASSERT_TRUE(fresh.ok()) << fresh.error().message();
        const std::vector<float> y0(s.m * s.n_out, 0.0f);
        EXPECT_EQ(run(*lin, s, x, y0, true), run(*fresh, s, x, y0, true)) << "call " << call;
    }
}

}  // namespace
}  // namespace lazyllm::kernels
