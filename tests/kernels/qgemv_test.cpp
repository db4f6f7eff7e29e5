// QuantLinear (quantized GEMV): the AVX-512 VNNI and the AVX2 kernels bit-identical to the
// scalar reference on ragged shapes, strides, bias, accumulation and threads, and on extreme
// quants and activations (where an AVX2 int16 saturation would show); the reference within
// the bound of 8-bit activation quantization of an fp32 GEMV on the dequantized weights; error
// reporting.
//
// Error bound of the 8-bit activations. Each block of 32 activations is rounded to
// q = round(x / d_x), d_x = amax_b / 127, so |x - d_x q| <= d_x / 2 = amax_b / 254 per element.
// The int32 block dot products are exact and the fp32 scaling and accumulation add a relative
// error of a few ulps, so with w the dequantized weights
//   |y - sum_j w_j x_j| <= sum_b (amax_b / 254) * sum_{j in b} |w_j|  +  1e-5 * sum_j |w_j x_j|.
// For uniform random x that is about 2 / 254 ~ 8e-3 of sum_j |w_j x_j| in the worst case (the
// typical error is far smaller); a missing offset or min term is off by O(1).
#include "kernels/qgemv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu.h"
#include "kernels/qgemv_fixture.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "support/quantize_ref.h"
#include "support/random.h"

namespace lazyllm::kernels {
namespace {

using namespace qgemv_test;  // NOLINT(google-build-using-namespace): the fixture's helpers
using test::random_vec;

TEST(QuantLinear, FastPathMatchesReferenceBitExact) {
    if (!QuantLinear::has_fast_path(fast_ctx(1))) GTEST_SKIP() << "no AVX2 or AVX-512 VNNI";
    uint32_t seed = 100;
    for (const auto& [type, s] : cases()) {
        seed += 7;
        const CaseData d = make_case(type, s, seed);
        auto ref = QuantLinear::create(kRefCtx, {&d.part, 1}, s.n_in, d.bias_if(s));
        ASSERT_TRUE(ref.ok()) << ref.error().message();
        ASSERT_FALSE(ref->uses_fast_path());
        const auto want = run(*ref, s, d.x, d.y0);
        for (int n_threads : {1, 2}) {
            auto fast =
                QuantLinear::create(fast_ctx(n_threads), {&d.part, 1}, s.n_in, d.bias_if(s));
            ASSERT_TRUE(fast.ok()) << fast.error().message();
            ASSERT_TRUE(fast->uses_fast_path());
            const auto got = run(*fast, s, d.x, d.y0);
            for (size_t i = 0; i < got.size(); ++i) {
                // Same integer sums and the same fp32 operations in the same order.
                ASSERT_EQ(got[i], want[i]) << describe(type, s, n_threads) << " at " << i;
            }
        }
    }
}

// Checks y (from any QuantLinear over `w_deq`) against fp32 on the dequantized weights within
// the activation-quantization bound of the file comment, plus `w_err` per element of weight
// error (create_from_f32).
void expect_near_fp32(const std::vector<float>& y, const std::vector<float>& y0,
                      const std::vector<float>& x, const std::vector<float>& w,
                      const std::vector<float>& bias, const GemvShape& s, float w_err_scale,
                      const std::string& what) {
    const int64_t ldx = s.ldx(), ldy = s.ldy();
    for (int64_t r = 0; r < s.m; ++r) {
        for (int64_t o = 0; o < ldy; ++o) {
            const size_t iy = static_cast<size_t>(r * ldy + o);
            if (o >= s.n_out) {
                ASSERT_EQ(y[iy], y0[iy]) << what << ": wrote into the row padding";
                continue;
            }
            double want = 0.0, mag = 0.0, bound = 0.0;
            for (int64_t b = 0; b < s.n_in / 32; ++b) {
                double amax_x = 0.0, amax_w = 0.0, sum_w = 0.0, sum_x = 0.0;
                for (int64_t j = b * 32; j < b * 32 + 32; ++j) {
                    const double xj = x[r * ldx + j], wj = w[o * s.n_in + j];
                    want += xj * wj;
                    mag += std::fabs(xj * wj);
                    amax_x = std::max(amax_x, std::fabs(xj));
                    amax_w = std::max(amax_w, std::fabs(wj));
                    sum_w += std::fabs(wj);
                    sum_x += std::fabs(xj);
                }
                const double ex = amax_x / 254.0, ew = w_err_scale * amax_w / 254.0;
                bound += ex * sum_w + ew * sum_x + 32.0 * ex * ew;
            }
            if (s.bias) want += bias[o];
            if (s.accumulate) want += y0[iy];
            const double tol = 1.01 * bound + 1e-5 * (mag + std::fabs(want)) + 1e-6;
            ASSERT_NEAR(y[iy], want, tol) << what << " r=" << r << " o=" << o;
        }
    }
}

// Every format keeps GGML's weight values (the K-quants too): the only error is the
// activations' (no weight error term).
TEST(QuantLinear, MatchesFp32WithinActivationRounding) {
    uint32_t seed = 500;
    for (const auto& [type, s] : cases()) {
        seed += 7;
        const CaseData d = make_case(type, s, seed);
        // The fast path where there is one (bit-identical to the reference, tested above).
        auto lin = QuantLinear::create(fast_ctx(2), {&d.part, 1}, s.n_in, d.bias_if(s));
        ASSERT_TRUE(lin.ok()) << lin.error().message();
        EXPECT_EQ(lin->type(), type);
        EXPECT_EQ(lin->n_in(), s.n_in);
        EXPECT_EQ(lin->n_out(), s.n_out);
        const auto y = run(*lin, s, d.x, d.y0);
        expect_near_fp32(y, d.y0, d.x, d.wq.deq, d.bias, s, 0.0f, describe(type, s, 2));
    }
}

// Q8_0 requantization: |w - w_q| <= amax_w / 254 per element (fp16 rounding of the scale is
// absorbed by rounding q against the stored scale; 1.01 covers the clamp case).
TEST(QuantLinear, FromF32WithinWeightAndActivationRounding) {
    uint32_t seed = 900;
    for (const GemvShape& s : shapes()) {
        seed += 7;
        const auto w = random_vec(s.n_out * s.n_in, seed);
        const auto bias = random_vec(s.n_out, seed + 1);
        const auto x = make_x(s.m, s.ldx(), s.n_in, seed + 2);
        const auto y0 = random_vec(s.m * s.ldy(), seed + 3);
        for (const KernelContext& ctx : {kRefCtx, fast_ctx(2)}) {
            auto lin = QuantLinear::create_from_f32(ctx, w.data(), s.n_out, s.n_in,
                                                    s.bias ? bias.data() : nullptr);
            ASSERT_TRUE(lin.ok()) << lin.error().message();
            EXPECT_EQ(lin->type(), GgmlType::Q8_0);
            const auto y = run(*lin, s, x, y0);
            expect_near_fp32(y, y0, x, w, bias, s, 1.01f,
                             "from_f32 " + describe(GgmlType::Q8_0, s, ctx.n_threads));
        }
    }
}

// Rows made one at a time give the same layer as the whole fp32 matrix, on 1 and 2 threads;
// a row source's error is returned.
TEST(QuantLinear, FromRowsEqualsFromF32) {
    const int64_t n_out = 53, n_in = 96;
    const auto w = random_vec(n_out * n_in, 31);
    const auto bias = random_vec(n_out, 32);
    const GemvShape s{5, n_out, n_in, 0, 0, true, false};
    const auto x = make_x(s.m, s.ldx(), s.n_in, 33);
    const auto y0 = random_vec(s.m * s.ldy(), 34);
    for (const KernelContext& ctx : {kRefCtx, fast_ctx(1), fast_ctx(2)}) {
        auto whole = QuantLinear::create_from_f32(ctx, w.data(), n_out, n_in, bias.data());
        ASSERT_TRUE(whole.ok()) << whole.error().message();
        std::vector<int> calls(n_out, 0);
        auto rows = QuantLinear::create_from_rows(
            ctx, n_out, n_in,
            [&](int64_t r, float* dst) -> Status {
                ++calls[r];
                std::copy_n(w.data() + r * n_in, n_in, dst);
                return {};
            },
            bias.data());
        ASSERT_TRUE(rows.ok()) << rows.error().message();
        EXPECT_EQ(rows->weight_bytes(), whole->weight_bytes());
        EXPECT_EQ(run(*rows, s, x, y0), run(*whole, s, x, y0)) << "threads " << ctx.n_threads;
        EXPECT_EQ(std::count(calls.begin(), calls.end(), 1), n_out) << "each row made once";
    }
    auto bad =
        QuantLinear::create_from_rows(kRefCtx, n_out, n_in, [&](int64_t r, float* dst) -> Status {
            if (r == 17) return make_error(ErrorCode::kCorrupt, "row 17 is broken");
            std::fill_n(dst, n_in, 0.0f);
            return {};
        });
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(bad.error().message().find("row 17 is broken"), std::string::npos);
}

TEST(QuantLinear, StackedPartsEqualOneMatrix) {
    const int64_t n_in = 128, rows[] = {40, 9, 23};
    const int64_t n_out = rows[0] + rows[1] + rows[2];
    const QuantMatrix all = make_matrix(GgmlType::Q4_1, n_out, n_in, 7);
    const size_t row_bytes = static_cast<size_t>(n_in / 32) * 20;  // Q4_1: 20 bytes / block
    std::vector<QuantLinear::Part> parts;
    size_t offset = 0;
    for (int64_t r : rows) {
        parts.push_back({GgmlType::Q4_1, all.blocks.data() + offset, r});
        offset += static_cast<size_t>(r) * row_bytes;
    }
    const auto bias = random_vec(n_out, 8);
    const QuantLinear::Part whole{GgmlType::Q4_1, all.blocks.data(), n_out};
    auto a = QuantLinear::create(fast_ctx(1), parts, n_in, bias.data());
    auto b = QuantLinear::create(fast_ctx(1), {&whole, 1}, n_in, bias.data());
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->n_out(), n_out);
    EXPECT_EQ(a->weight_bytes(), b->weight_bytes());
    // 5 groups of 16 rows x 4 blocks x (256 + 32 + 32) bytes.
    EXPECT_EQ(a->weight_bytes(), 5u * 4u * 320u);
    const auto x = random_vec(3 * n_in, 9);
    std::vector<float> ya(3 * n_out), yb(3 * n_out);
    a->forward(x.data(), 3, ya.data());
    b->forward(x.data(), 3, yb.data());
    EXPECT_EQ(ya, yb);
}

// Parts of several types (a Q4_K_M file's q|k|v with Q6_K v rows): each run of one type is a
// layer of its own, and the whole gives what the separate layers give in their columns.
TEST(QuantLinear, MixedTypePartsEqualSeparateLayers) {
    const int64_t n_in = 512;
    const std::pair<GgmlType, int64_t> runs[] = {
        {GgmlType::Q4_K, 40}, {GgmlType::Q6_K, 19}, {GgmlType::Q4_K, 9}, {GgmlType::Q8_0, 16}};
    std::vector<QuantMatrix> mats;
    std::vector<QuantLinear::Part> parts;
    int64_t n_out = 0;
    for (const auto& [type, rows] : runs) mats.push_back(make_matrix(type, rows, n_in, 11 + rows));
    for (size_t i = 0; i < mats.size(); ++i) {
        parts.push_back({runs[i].first, mats[i].blocks.data(), runs[i].second});
        n_out += runs[i].second;
    }
    const auto bias = random_vec(n_out, 12);
    for (const KernelContext& ctx : {kRefCtx, fast_ctx(2)}) {
        auto all = QuantLinear::create(ctx, parts, n_in, bias.data());
        ASSERT_TRUE(all.ok()) << all.error().message();
        EXPECT_EQ(all->n_out(), n_out);
        EXPECT_EQ(all->type(), GgmlType::Q4_K);
        for (int64_t m : {1, 5}) {
            const GemvShape s{m, n_out, n_in, 0, 3, true, true};
            const auto x = make_x(m, s.ldx(), n_in, 13);
            const auto y0 = random_vec(m * s.ldy(), 14);
            std::vector<float> want = y0;
            size_t bytes = 0;
            int64_t first = 0;
            for (const QuantLinear::Part& p : parts) {
                auto one = QuantLinear::create(ctx, {&p, 1}, n_in, bias.data() + first);
                ASSERT_TRUE(one.ok()) << one.error().message();
                one->forward(x.data(), m, want.data() + first, s.ldx(), s.ldy(), true);
                bytes += one->weight_bytes();
                first += p.n_out;
            }
            EXPECT_EQ(run(*all, s, x, y0), want) << "m=" << m << " threads " << ctx.n_threads;
            EXPECT_EQ(all->weight_bytes(), bytes);
        }
    }
}

TEST(QuantLinear, ZeroRowsIsANoOp) {
    const QuantMatrix wq = make_matrix(GgmlType::Q8_0, 16, 32, 3);
    const QuantLinear::Part part{GgmlType::Q8_0, wq.blocks.data(), 16};
    auto lin = QuantLinear::create(fast_ctx(1), {&part, 1}, 32);
    ASSERT_TRUE(lin.ok());
    std::vector<float> y(16, 5.0f);
    lin->forward(nullptr, 0, y.data());
    EXPECT_EQ(y, std::vector<float>(16, 5.0f));
}

TEST(QuantLinear, SupportedTypes) {
    for (GgmlType type : kTypes) EXPECT_TRUE(QuantLinear::supports(type)) << ggml_type_name(type);
    for (GgmlType type : kKTypes) EXPECT_TRUE(QuantLinear::supports(type)) << ggml_type_name(type);
    for (GgmlType type :
         {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q2_K, GgmlType::Q8_1}) {
        EXPECT_FALSE(QuantLinear::supports(type)) << ggml_type_name(type);
    }
    EXPECT_FALSE(QuantLinear::has_fast_path(kRefCtx));
}

// The K-quants and IQ4_XS are held at about the file's bits per weight (file: Q3_K 3.4375, Q4_K
// 4.5, Q5_K 5.5, Q6_K 6.5625, IQ4_XS 4.25): their 6-bit block scales (and mins) as int8 pairs,
// so Q3_K takes 3.5625, Q4_K 4.625, Q5_K 5.625 and IQ4_XS 4.5625, plus, where a segment's
// scales are not a multiple of 64 bytes (Q3_K, Q6_K, IQ4_XS), 32 bytes of padding per 16 rows
// x 256 inputs (0.0625 bits per weight). IQ4_NL and Q4_0 exactly the file's 4.5.
TEST(QuantLinear, HeldAtAboutTheFilesBitsPerWeight) {
    const int64_t n_out = 64, n_in = 1024;
    const std::pair<GgmlType, double> bits[] = {{GgmlType::Q3_K, 3.625},
                                                {GgmlType::Q4_K, 4.625},
                                                {GgmlType::Q5_K, 5.625},
                                                {GgmlType::Q6_K, 6.625},
                                                {GgmlType::IQ4_XS, 4.625},
                                                {GgmlType::IQ4_NL, 4.5},
                                                {GgmlType::Q4_0, 4.5}};
    for (const auto& [type, bpw] : bits) {
        const QuantMatrix wq = make_matrix(type, n_out, n_in, 3);
        const QuantLinear::Part part{type, wq.blocks.data(), n_out};
        auto lin = QuantLinear::create(fast_ctx(1), {&part, 1}, n_in);
        ASSERT_TRUE(lin.ok()) << lin.error().message();
        EXPECT_EQ(lin->weight_bytes(), static_cast<size_t>(bpw * n_out * n_in / 8))
            << ggml_type_name(type);
    }
}

void expect_error(const Result<QuantLinear>& r, ErrorCode code, const std::string& needle) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), code) << r.error().message();
    EXPECT_NE(r.error().message().find(needle), std::string::npos)
        << "'" << r.error().message() << "' lacks '" << needle << "'";
}

// Activations the int8 rounding keeps exactly (integers in [-127, 127], each block holding
// 127, so d_x = 1): the output is the dot product with GGML's dequantized weights up to fp32
// accumulation, for every format (a scale rounded to fp16 would be off by ~2^-11).
TEST(QuantLinear, KeepsGgmlWeightValues) {
    const GemvShape s{3, 45, 512, 0, 0, false, false};
    std::mt19937 rng(11);
    std::vector<float> x(s.m * s.n_in);
    for (size_t i = 0; i < x.size(); ++i) {
        x[i] = i % 32 == 0 ? 127.0f : static_cast<float>(static_cast<int>(rng() % 255) - 127);
    }
    uint32_t seed = 2300;
    for (const auto types :
         {std::span<const GgmlType>(kTypes), std::span<const GgmlType>(kKTypes)}) {
        for (GgmlType type : types) {
            const QuantMatrix wq = make_matrix(type, s.n_out, s.n_in, seed += 7);
            const QuantLinear::Part part{type, wq.blocks.data(), s.n_out};
            auto lin = QuantLinear::create(fast_ctx(1), {&part, 1}, s.n_in);
            ASSERT_TRUE(lin.ok()) << lin.error().message();
            const auto y = run(*lin, s, x, std::vector<float>(s.m * s.n_out, 0.0f));
            for (int64_t r = 0; r < s.m; ++r) {
                for (int64_t o = 0; o < s.n_out; ++o) {
                    double want = 0.0, mag = 0.0;
                    for (int64_t j = 0; j < s.n_in; ++j) {
                        const double p =
                            static_cast<double>(wq.deq[o * s.n_in + j]) * x[r * s.n_in + j];
                        want += p;
                        mag += std::fabs(p);
                    }
                    ASSERT_NEAR(y[r * s.n_out + o], want, 2e-6 * mag)
                        << ggml_type_name(type) << " r=" << r << " o=" << o;
                }
            }
        }
    }
}

// Blocks at an odd address (a GGUF whose general.alignment is 1 can place a tensor there) pack
// to the same weights as the same blocks aligned.
TEST(QuantLinear, UnalignedBlocksEqualAligned) {
    const GemvShape s{2, 33, 512, 0, 0, false, false};
    std::mt19937 rng(5);
    std::vector<float> x(s.m * s.n_in);
    for (float& v : x) v = static_cast<float>(static_cast<int>(rng() % 255) - 127) / 64.0f;
    const std::vector<float> y0(s.m * s.n_out, 0.0f);
    uint32_t seed = 2700;
    for (const auto types :
         {std::span<const GgmlType>(kTypes), std::span<const GgmlType>(kKTypes)}) {
        for (GgmlType type : types) {
            const QuantMatrix wq = make_matrix(type, s.n_out, s.n_in, seed += 7);
            std::vector<uint8_t> shifted(wq.blocks.size() + 1);
            std::memcpy(shifted.data() + 1, wq.blocks.data(), wq.blocks.size());
            const QuantLinear::Part aligned{type, wq.blocks.data(), s.n_out};
            const QuantLinear::Part odd{type, shifted.data() + 1, s.n_out};
            auto a = QuantLinear::create(fast_ctx(1), {&aligned, 1}, s.n_in);
            auto b = QuantLinear::create(fast_ctx(1), {&odd, 1}, s.n_in);
            ASSERT_TRUE(a.ok() && b.ok()) << ggml_type_name(type);
            EXPECT_EQ(run(*a, s, x, y0), run(*b, s, x, y0)) << ggml_type_name(type);
        }
    }
}

// Q4_K scales at the fp16 maximum (d = dmin = 65504) times the largest 6-bit multipliers
// (63): d * sc = 4.1e6 is beyond fp16 but exact in fp32, so the output is the dequantized
// weights' dot product (the weights' scale times the activations' rounding).
TEST(QuantLinear, LargestKScalesAreExact) {
    constexpr int64_t kIn = 256, kOut = 3;
    std::vector<uint8_t> blocks(kOut * sizeof(quant::BlockQ4K));
    std::mt19937 rng(7);
    for (uint8_t& b : blocks) b = static_cast<uint8_t>(rng());
    for (int64_t r = 0; r < kOut; ++r) {
        quant::BlockQ4K b;
        std::memcpy(&b, blocks.data() + r * sizeof(b), sizeof(b));
        b.d = b.dmin = 0x7BFF;                                                   // 65504
        for (int j = 0; j < 12; ++j) b.scales[j] = r == 0 ? 0xFF : b.scales[j];  // all 63
        std::memcpy(blocks.data() + r * sizeof(b), &b, sizeof(b));
    }
    std::vector<float> deq(kOut * kIn);
    ASSERT_TRUE(
        dequantize_row_f32(Isa::kRef, GgmlType::Q4_K, blocks.data(), deq.data(), kOut * kIn).ok());
    const GemvShape s{2, kOut, kIn, 0, 0, false, false};
    const auto x = make_x(s.m, s.ldx(), s.n_in, 9);
    const std::vector<float> y0(s.m * s.ldy(), 0.0f);
    const QuantLinear::Part part{GgmlType::Q4_K, blocks.data(), kOut};
    for (const KernelContext& ctx : {kRefCtx, fast_ctx(1)}) {
        auto lin = QuantLinear::create(ctx, {&part, 1}, kIn);
        ASSERT_TRUE(lin.ok()) << lin.error().message();
        expect_near_fp32(run(*lin, s, x, y0), y0, x, deq, {}, s, 0.0f, "Q4_K at 65504 x 63");
    }
}

TEST(QuantLinear, RejectsBadInput) {
    const std::vector<uint8_t> data(64 * 34 * 4, 0);
    const KernelContext ctx = fast_ctx(1);
    const QuantLinear::Part q2k{GgmlType::Q2_K, data.data(), 4};
    expect_error(QuantLinear::create(ctx, {&q2k, 1}, 256), ErrorCode::kUnsupported, "Q2_K");
    const QuantLinear::Part q4k{GgmlType::Q4_K, data.data(), 4};
    expect_error(QuantLinear::create(ctx, {&q4k, 1}, 96), ErrorCode::kInvalidArgument,
                 "block size 256");
    const QuantLinear::Part f32{GgmlType::F32, data.data(), 4};
    expect_error(QuantLinear::create(ctx, {&f32, 1}, 32), ErrorCode::kUnsupported, "F32");
    const QuantLinear::Part q8{GgmlType::Q8_0, data.data(), 4};
    expect_error(QuantLinear::create(ctx, {&q8, 1}, 48), ErrorCode::kInvalidArgument, "n_in=48");
    expect_error(QuantLinear::create(ctx, {&q8, 1}, 0), ErrorCode::kInvalidArgument, "n_in=0");
    const QuantLinear::Part null_part{GgmlType::Q8_0, nullptr, 4};
    expect_error(QuantLinear::create(ctx, {&null_part, 1}, 32), ErrorCode::kInvalidArgument,
                 "null=true");
    const QuantLinear::Part empty_part{GgmlType::Q8_0, data.data(), 0};
    expect_error(QuantLinear::create(ctx, {&empty_part, 1}, 32), ErrorCode::kInvalidArgument,
                 "n_out=0");
    expect_error(QuantLinear::create(ctx, {}, 32), ErrorCode::kInvalidArgument, "no weight");
    const QuantLinear::Part mixed[] = {q8, {GgmlType::Q2_K, data.data(), 4}};
    expect_error(QuantLinear::create(ctx, mixed, 256), ErrorCode::kUnsupported, "Q2_K");
    const std::vector<float> w(4 * 48, 1.0f);
    expect_error(QuantLinear::create_from_f32(ctx, w.data(), 4, 48), ErrorCode::kInvalidArgument,
                 "n_in=48");
    expect_error(QuantLinear::create_from_f32(ctx, nullptr, 4, 32), ErrorCode::kInvalidArgument,
                 "null=true");
}

}  // namespace
}  // namespace lazyllm::kernels
