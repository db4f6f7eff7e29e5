// QuantLinear's prompt rows on AMX tiles (a context allowing AMX, QuantRows::kPrompt): the bf16
// GEMM of x and of the weights as weight() gives them, both rounded to bf16, with fp32 sums.
// Run on CPUs with AMX only (elsewhere the same calls take the VNNI or AVX2 kernels, which
// qgemv_test.cpp and qgemv_isa_test.cpp check).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/amx_tiles.h"
#include "kernels/ops_isa.h"
#include "kernels/workspace.h"
#include "qgemv_fixture.h"

namespace lazyllm::kernels::qgemv_test {
namespace {

float bf16_value(float f) {
    const uint32_t u = static_cast<uint32_t>(detail::round_to_bf16(f)) << 16;
    float out;
    std::memcpy(&out, &u, sizeof(out));
    return out;
}

bool have_tiles() {
    const CpuFeatures f = detect_cpu_features();
    return f.avx512vnni && isa_supported(Isa::kAvx512, f) && detail::amx_permission();
}

// forward() on an AMX context against the double-precision sum of the bf16-rounded operands,
// within fp32 summation error; the padding of y untouched.
void expect_tiles_match(GgmlType type, const GemvShape& s, uint32_t seed, int n_threads,
                        QuantRows rows = QuantRows::kPrompt) {
    const CaseData d = make_case(type, s, seed);
    auto lin = QuantLinear::create({Isa::kAmx, n_threads}, {&d.part, 1}, s.n_in, d.bias_if(s));
    ASSERT_TRUE(lin.ok()) << lin.error().message();
    Workspace ws;
    std::vector<float> y = d.y0;
    lin->forward(d.x.data(), s.m, y.data(), s.ldx(), s.ldy(), s.accumulate, &ws, rows);

    std::vector<float> wb(s.n_out * s.n_in);
    for (int64_t n = 0; n < s.n_out; ++n) {
        for (int64_t c = 0; c < s.n_in; ++c) wb[n * s.n_in + c] = bf16_value(lin->weight(n, c));
    }
    std::vector<float> xb(s.n_in);
    int bad = 0;
    for (int64_t r = 0; r < s.m; ++r) {
        for (int64_t c = 0; c < s.n_in; ++c) xb[c] = bf16_value(d.x[r * s.ldx() + c]);
        for (int64_t n = 0; n < s.ldy(); ++n) {
            const float got = y[r * s.ldy() + n];
            if (n >= s.n_out) {  // row padding
                EXPECT_EQ(got, d.y0[r * s.ldy() + n]) << describe(type, s, n_threads);
                continue;
            }
            double want = 0.0, mag = 0.0;
            for (int64_t c = 0; c < s.n_in; ++c) {
                const double p = static_cast<double>(xb[c]) * wb[n * s.n_in + c];
                want += p;
                mag += std::fabs(p);
            }
            if (s.bias) want += d.bias[n];
            if (s.accumulate) want += d.y0[r * s.ldy() + n];
            const double tol = 2e-6 * (mag + std::fabs(want)) + 1e-6;
            if (std::fabs(got - want) > tol && ++bad <= 5) {
                ADD_FAILURE() << describe(type, s, n_threads) << " row " << r << " col " << n
                              << ": " << got << " vs " << want << " (tolerance " << tol << ")";
            }
        }
    }
    EXPECT_EQ(bad, 0) << describe(type, s, n_threads);
}

TEST(QuantLinearTiles, EveryTypeMatchesTheBf16Product) {
    if (!have_tiles()) GTEST_SKIP() << "no AMX";
    uint32_t seed = 4100;
    // kPromptTiles at any m: one row; 32 rows exactly; a short last micro-tile, an odd number
    // of groups (a half-empty last panel), padded ldx / ldy, bias and accumulate. kPrompt from
    // kTileMinRows rows: two micro-tiles exactly, a last one of one row, a short one.
    static_assert(kTileMinRows == 64, "the kPrompt shapes straddle the threshold's micro-tiles");
    const std::pair<GemvShape, QuantRows> cases[] = {
        {{1, 37, 256, 0, 0, false, false}, QuantRows::kPromptTiles},
        {{32, 37, 256, 0, 0, false, false}, QuantRows::kPromptTiles},
        {{45, 71, 512, 32, 3, true, true}, QuantRows::kPromptTiles},
        {{64, 37, 256, 0, 0, false, false}, QuantRows::kPrompt},
        {{65, 37, 256, 0, 0, false, false}, QuantRows::kPrompt},
        {{100, 600, 768, 0, 0, true, false}, QuantRows::kPromptOutliers}};
    for (const auto& [s, rows] : cases) {
        for (GgmlType type : kTypes) expect_tiles_match(type, s, seed += 3, 2, rows);
        for (GgmlType type : kKTypes) expect_tiles_match(type, s, seed += 3, 2, rows);
    }
}

// Several chunks of panels per thread, several reduction blocks (n_in 4096: 128 chunks of 32),
// several row blocks, on one and two threads.
TEST(QuantLinearTiles, ManyChunksAndRowBlocks) {
    if (!have_tiles()) GTEST_SKIP() << "no AMX";
    const GemvShape s{161, 1000, 4096, 0, 5, true, true};
    expect_tiles_match(GgmlType::Q4_K, s, 77, 2);
    expect_tiles_match(GgmlType::Q8_0, s, 78, 1, QuantRows::kPromptOutliers);
}

// A row's output is the same whichever tile call computes it (a prompt split into steps by a
// server's cache; a step's calls of few rows): 200 rows at once against the same rows in pieces
// (kPrompt, each of kTileMinRows rows or more; kPromptTiles, pieces of 1, 5 and 37 rows),
// accumulating without a bias (where a full micro-tile could start from y), over several
// reduction blocks (n_in 2048), bit for bit.
TEST(QuantLinearTiles, ARowsOutputIsItsOwn) {
    if (!have_tiles()) GTEST_SKIP() << "no AMX";
    const GemvShape s{200, 96, 2048, 0, 0, false, true};
    const CaseData d = make_case(GgmlType::Q6_K, s, 55);
    auto lin = QuantLinear::create({Isa::kAmx, 2}, {&d.part, 1}, s.n_in, d.bias_if(s));
    ASSERT_TRUE(lin.ok()) << lin.error().message();
    Workspace ws;
    std::vector<float> whole = d.y0;
    lin->forward(d.x.data(), s.m, whole.data(), 0, 0, true, &ws, QuantRows::kPrompt);
    const auto pieces = [&](const std::vector<int64_t>& cuts, QuantRows rows) {
        std::vector<float> y = d.y0;
        for (size_t i = 0; i + 1 < cuts.size(); ++i) {
            lin->forward(d.x.data() + cuts[i] * s.n_in, cuts[i + 1] - cuts[i],
                         y.data() + cuts[i] * s.n_out, 0, 0, true, &ws, rows);
        }
        return y;
    };
    EXPECT_EQ(pieces({0, 64, 200}, QuantRows::kPrompt), whole);
    EXPECT_EQ(pieces({0, 100, 200}, QuantRows::kPrompt), whole);
    EXPECT_EQ(pieces({0, 67, 134, 200}, QuantRows::kPromptOutliers), whole);
    for (int64_t step : {1, 5, 37}) {
        std::vector<int64_t> cuts;
        for (int64_t r = 0; r < s.m; r += step) cuts.push_back(r);
        cuts.push_back(s.m);
        EXPECT_EQ(pieces(cuts, QuantRows::kPromptTiles), whole) << "pieces of " << step;
    }
}

// Prompt calls of fewer than kTileMinRows rows keep the int8 kernels, outlier channels
// included, bit for bit as on a context without AMX.
TEST(QuantLinearTiles, FewPromptRowsKeepTheInt8Kernels) {
    if (!have_tiles()) GTEST_SKIP() << "no AMX";
    const GemvShape s{kTileMinRows - 1, 53, 512, 0, 0, true, false};
    const CaseData d = make_case(GgmlType::Q4_K, s, 92);
    auto amx = QuantLinear::create({Isa::kAmx, 2}, {&d.part, 1}, s.n_in, d.bias_if(s));
    auto vnni = QuantLinear::create({Isa::kAvx512, 2}, {&d.part, 1}, s.n_in, d.bias_if(s));
    ASSERT_TRUE(amx.ok() && vnni.ok());
    for (QuantRows rows : {QuantRows::kPrompt, QuantRows::kPromptOutliers}) {
        std::vector<float> got = d.y0, want = d.y0;
        amx->forward(d.x.data(), s.m, got.data(), 0, 0, false, nullptr, rows);
        vnni->forward(d.x.data(), s.m, want.data(), 0, 0, false, nullptr, rows);
        EXPECT_EQ(got, want) << (rows == QuantRows::kPrompt ? "kPrompt" : "kPromptOutliers");
    }
}

// Decode rows keep the int8 kernels, bit for bit as on a context without AMX, at any m.
TEST(QuantLinearTiles, DecodeRowsKeepTheInt8Kernels) {
    if (!have_tiles()) GTEST_SKIP() << "no AMX";
    const GemvShape s{40, 53, 512, 0, 0, true, false};
    const CaseData d = make_case(GgmlType::Q4_K, s, 91);
    auto amx = QuantLinear::create({Isa::kAmx, 2}, {&d.part, 1}, s.n_in, d.bias_if(s));
    auto vnni = QuantLinear::create({Isa::kAvx512, 2}, {&d.part, 1}, s.n_in, d.bias_if(s));
    ASSERT_TRUE(amx.ok() && vnni.ok());
    EXPECT_EQ(run(*amx, s, d.x, d.y0), run(*vnni, s, d.x, d.y0));
}

}  // namespace
}  // namespace lazyllm::kernels::qgemv_test
