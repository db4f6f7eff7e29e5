// QuantLinear's outlier channels (qgemv.cpp, find_outliers): from 16 rows on, the channels of
// x far above the median channel leave the int8 blocks and enter as exact fp32 terms. The fast
// kernels (AVX-512 VNNI, AVX2) stay bit-identical to the reference with them; the error against
// fp32 is then bounded by the other channels' rounding alone; the columns kept per layer and
// those dequantized per call give the same output; QuantLinear::weight() is GGML's value.
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

// m rows of uniform [-1, 1) with `channels` scaled by `scale` in every row (a residual
// stream's outlier channels: ratio `scale` to the median channel, far beyond the 6 that
// counts as an outlier).
std::vector<float> planted_x(int64_t m, int64_t ldx, std::span<const int64_t> channels, float scale,
                             uint32_t seed) {
    auto x = random_vec(m * ldx, seed);
    for (int64_t r = 0; r < m; ++r) {
        for (int64_t c : channels) x[r * ldx + c] *= scale;
    }
    return x;
}

std::vector<Isa> fast_isas() {
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

// Row counts at and above the 16 where outlier channels start, above the 64 rows sampled,
// with padding, bias and accumulation; more planted channels than the 16 taken in one case;
// whole register tiles of the fp32 terms (4 rows x 64 outputs) with rows and outputs left over.
TEST(QuantLinearOutliers, FastKernelsMatchReferenceBitExact) {
    const auto isas = fast_isas();
    if (isas.empty()) GTEST_SKIP() << "no AVX2 or AVX-512 VNNI";
    const std::vector<int64_t> few = {3, 40, 77, 95};
    std::vector<int64_t> many;
    for (int64_t c = 1; c < 256; c += 11) many.push_back(c);  // 24 channels
    uint32_t seed = 3000;
    for (const auto types :
         {std::span<const GgmlType>(kTypes), std::span<const GgmlType>(kKTypes)}) {
        for (GgmlType type : types) {
            const bool k = types.data() == kKTypes;
            for (const Shape& s : {Shape{16, 37, k ? 256 : 96, 0, 0, false, false},
                                   Shape{23, 53, 256, 32, 3, true, true},
                                   Shape{70, 41, k ? 512 : 160, 0, 2, true, false},
                                   Shape{37, 150, 256, 0, 5, true, true}}) {
                const auto& channels = s.n_in >= 256 && s.m == 23 ? many : few;
                const QuantMatrix wq = make_matrix(type, s.n_out, s.n_in, seed += 7);
                const auto x = planted_x(s.m, s.ldx(), channels, 40.0f, seed + 2);
                for (Isa isa : isas) expect_isa_matches_ref(isa, type, wq.blocks, s, x, seed);
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
    const Shape s{24, 45, 512, 0, 0, false, false};
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
            const auto y = run(*lin, s, x, std::vector<float>(s.m * s.n_out, 0.0f));
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

// Below 16 rows (decode) there are no outlier channels: the same planted rows, taken 15 at a
// time, keep the int8 rounding of the outliers, so their error is far above the 16-row one's.
TEST(QuantLinearOutliers, NotBelowSixteenRows) {
    const Shape s16{16, 32, 256, 0, 0, false, false}, s15{15, 32, 256, 0, 0, false, false};
    const std::vector<int64_t> channels = {9, 130};
    const auto x = planted_x(16, 256, channels, 1000.0f, 23);
    const QuantMatrix wq = make_matrix(GgmlType::Q8_0, 32, 256, 24);
    const QuantLinear::Part part{GgmlType::Q8_0, wq.blocks.data(), 32};
    auto lin = QuantLinear::create(fast_ctx(1), {&part, 1}, 256);
    ASSERT_TRUE(lin.ok()) << lin.error().message();
    const auto y16 = run(*lin, s16, x, std::vector<float>(16 * 32, 0.0f));
    const auto y15 = run(*lin, s15, x, std::vector<float>(15 * 32, 0.0f));
    double err16 = 0.0, err15 = 0.0;
    for (int64_t r = 0; r < 15; ++r) {
        for (int64_t o = 0; o < 32; ++o) {
            double want = 0.0;
            for (int64_t j = 0; j < 256; ++j) want += double{x[r * 256 + j]} * wq.deq[o * 256 + j];
            err16 = std::max(err16, std::fabs(y16[r * 32 + o] - want));
            err15 = std::max(err15, std::fabs(y15[r * 32 + o] - want));
        }
    }
    EXPECT_GT(err15, 20.0 * err16) << "err15 " << err15 << " err16 " << err16;
}

// One layer called with ever new outlier channels: past the 64 columns it keeps, the rest are
// dequantized per call, and every call equals a fresh layer's output.
TEST(QuantLinearOutliers, ColumnsBeyondTheCacheGiveTheSameOutput) {
    const Shape s{16, 48, 1024, 0, 0, true, false};
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
        EXPECT_EQ(run(*lin, s, x, y0), run(*fresh, s, x, y0)) << "call " << call;
    }
}

}  // namespace
}  // namespace lazyllm::kernels
