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
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "support/quantize_ref.h"
#include "support/random.h"

namespace lazyllm::kernels {
namespace {

constexpr GgmlType kTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                               GgmlType::Q8_0};
// Super-blocks of 256, taken with their own scales: fp16 per super-block, and per 32-element
// block 6-bit multipliers (Q4_K, Q5_K) or two int8 half-block scales (Q6_K).
constexpr GgmlType kKTypes[] = {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

KernelContext fast_ctx(int n_threads) { return {best_isa(detect_cpu_features()), n_threads}; }
constexpr KernelContext kRefCtx{Isa::kRef, 1};

using test::random_vec;

// A random [n_out, n_in] matrix quantized to `type`, with its dequantized fp32 values.
struct QuantMatrix {
    std::vector<uint8_t> blocks;
    std::vector<float> deq;  // [n_out, n_in]
};

QuantMatrix make_matrix(GgmlType type, int64_t n_out, int64_t n_in, uint32_t seed) {
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
std::vector<float> make_x(int64_t m, int64_t ldx, int64_t n_in, uint32_t seed) {
    auto x = random_vec(m * ldx, seed);
    if (n_in >= 64) std::fill(x.begin(), x.begin() + 32, 0.0f);
    if (m >= 2) {
        for (int64_t i = 0; i < n_in; ++i) x[ldx + i] *= (i % 7 == 0) ? 30.0f : 0.01f;
    }
    return x;
}

struct Shape {
    int64_t m, n_out, n_in, ldx_pad, ldy_pad;
    bool bias, accumulate;

    int64_t ldx() const { return n_in + ldx_pad; }
    int64_t ldy() const { return n_out + ldy_pad; }
};

std::string describe(GgmlType type, const Shape& s, int n_threads) {
    return std::string(ggml_type_name(type)) + " m=" + std::to_string(s.m) +
           " n_out=" + std::to_string(s.n_out) + " n_in=" + std::to_string(s.n_in) + " ldx+" +
           std::to_string(s.ldx_pad) + " ldy+" + std::to_string(s.ldy_pad) +
           (s.bias ? " bias" : "") + (s.accumulate ? " acc" : "") +
           " threads=" + std::to_string(n_threads);
}

std::vector<Shape> shapes() {
    std::vector<Shape> out;
    for (int64_t m : {1, 2, 3, 5, 8, 11}) {
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
std::vector<Shape> k_shapes() {
    std::vector<Shape> out;
    for (int64_t m : {1, 3, 8, 11}) {
        out.push_back({m, 37, 256, 0, 0, false, false});
        out.push_back({m, 21, 512, 32, 3, true, true});
    }
    out.push_back({5, 600, 768, 0, 0, true, false});
    return out;
}

// Every (type, shape) pair: the 32-element formats on shapes(), the K-quants on k_shapes().
std::vector<std::pair<GgmlType, Shape>> cases() {
    std::vector<std::pair<GgmlType, Shape>> out;
    for (GgmlType type : kTypes) {
        for (const Shape& s : shapes()) out.emplace_back(type, s);
    }
    for (GgmlType type : kKTypes) {
        for (const Shape& s : k_shapes()) out.emplace_back(type, s);
    }
    return out;
}

// One case's random data: the weights (and the part over them), bias, input rows and initial
// output.
struct CaseData {
    QuantMatrix wq;
    std::vector<float> bias, x, y0;
    QuantLinear::Part part;

    const float* bias_if(const Shape& s) const { return s.bias ? bias.data() : nullptr; }
};

CaseData make_case(GgmlType type, const Shape& s, uint32_t seed) {
    CaseData d{make_matrix(type, s.n_out, s.n_in, seed),
               random_vec(s.n_out, seed + 1),
               make_x(s.m, s.ldx(), s.n_in, seed + 2),
               random_vec(s.m * s.ldy(), seed + 3),
               {}};
    d.part = {type, d.wq.blocks.data(), s.n_out};
    return d;
}

// Runs forward() on a copy of y0 (random, so the row padding can be checked untouched).
std::vector<float> run(const QuantLinear& lin, const Shape& s, const std::vector<float>& x,
                       const std::vector<float>& y0) {
    std::vector<float> y = y0;
    lin.forward(x.data(), s.m, y.data(), s.ldx(), s.ldy(), s.accumulate);
    return y;
}

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
                      const std::vector<float>& bias, const Shape& s, float w_err_scale,
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
    for (const Shape& s : shapes()) {
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
    const Shape s{5, n_out, n_in, 0, 0, true, false};
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
            const Shape s{m, n_out, n_in, 0, 3, true, true};
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
         {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q3_K, GgmlType::Q8_1}) {
        EXPECT_FALSE(QuantLinear::supports(type)) << ggml_type_name(type);
    }
    EXPECT_FALSE(QuantLinear::has_fast_path(kRefCtx));
}

// ---- AVX2 kernels (forced through ctx.isa = kAvx2, so they also run on AVX-512 machines) ----

bool have_avx2() { return isa_supported(Isa::kAvx2, detect_cpu_features()); }
KernelContext avx2_ctx(int n_threads) { return {Isa::kAvx2, n_threads}; }

// Builds the reference and the `isa` QuantLinear over `blocks` and checks forward() bit-exact
// for 1 and 2 threads.
void expect_isa_matches_ref(Isa isa, GgmlType type, const std::vector<uint8_t>& blocks,
                            const Shape& s, const std::vector<float>& x, uint32_t seed) {
    const auto bias = random_vec(s.n_out, seed + 1);
    const auto y0 = random_vec(s.m * s.ldy(), seed + 3);
    const QuantLinear::Part part{type, blocks.data(), s.n_out};
    const float* b = s.bias ? bias.data() : nullptr;
    auto ref = QuantLinear::create(kRefCtx, {&part, 1}, s.n_in, b);
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    const auto want = run(*ref, s, x, y0);
    for (int n_threads : {1, 2}) {
        auto fast = QuantLinear::create({isa, n_threads}, {&part, 1}, s.n_in, b);
        ASSERT_TRUE(fast.ok()) << fast.error().message();
        ASSERT_TRUE(fast->uses_fast_path());
        const auto got = run(*fast, s, x, y0);
        for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(got[i], want[i])
                << describe(type, s, n_threads) << " isa " << static_cast<int>(isa) << " at " << i;
        }
    }
}
void expect_avx2_matches_ref(GgmlType type, const std::vector<uint8_t>& blocks, const Shape& s,
                             const std::vector<float>& x, uint32_t seed) {
    expect_isa_matches_ref(Isa::kAvx2, type, blocks, s, x, seed);
}

TEST(QuantLinearAvx2, UsedWhereSupported) {
    if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
    EXPECT_TRUE(QuantLinear::has_fast_path(avx2_ctx(1)));
    EXPECT_FALSE(QuantLinear::has_fast_path(kRefCtx));
}

// Every decode row count 1..8 and beyond (passes of up to 4 rows, both halves of a group
// together or apart), ragged n_out (a group's second half partly or wholly padding), strides,
// bias and accumulation; 2 threads on the large shapes.
TEST(QuantLinearAvx2, MatchesReferenceBitExact) {
    if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
    std::vector<Shape> cases;
    for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16}) {
        cases.push_back({m, 37, 96, 0, 0, false, false});
        cases.push_back({m, 16, 32, 3, 5, true, false});
        cases.push_back({m, 53, 64, 32, 1, true, true});
        cases.push_back({m, 7, 160, 0, 2, false, true});
        cases.push_back({m, 24, 288, 8, 0, true, true});
    }
    cases.push_back({1, 1000, 320, 0, 0, true, false});  // runs on 2 threads
    cases.push_back({3, 1000, 320, 16, 3, false, true});
    cases.push_back({8, 1003, 320, 0, 1, true, true});
    uint32_t seed = 1300;
    for (GgmlType type : kTypes) {
        for (const Shape& s : cases) {
            seed += 7;
            const QuantMatrix wq = make_matrix(type, s.n_out, s.n_in, seed);
            const auto x = make_x(s.m, s.ldx(), s.n_in, seed + 2);
            expect_avx2_matches_ref(type, wq.blocks, s, x, seed);
        }
    }
    for (GgmlType type : kKTypes) {
        for (int64_t m : {1, 2, 3, 4, 5, 8, 9}) {
            for (const Shape& s :
                 {Shape{m, 37, 256, 0, 0, false, false}, Shape{m, 24, 512, 8, 3, true, true}}) {
                seed += 7;
                const QuantMatrix wq = make_matrix(type, s.n_out, s.n_in, seed);
                const auto x = make_x(s.m, s.ldx(), s.n_in, seed + 2);
                expect_avx2_matches_ref(type, wq.blocks, s, x, seed);
            }
        }
    }
}

// Raw GGML blocks with quants at the extremes (all maximal, all minimal, mixed), scale 0.01
// and min -0.5: u = 15 (Q4), 31 (Q5), 255 (Q8_0 q = 127) against activations at +-127 make
// the largest int16 partial sums the AVX2 kernels form (a saturation or overflow would show),
// and every fifth-bit pattern of the 5-bit planes.
std::vector<uint8_t> extreme_blocks(GgmlType type, int64_t n_out, int64_t n_in, uint32_t seed) {
    const quant::BlockShape shape = quant::block_shape(type);
    const bool q8 = type == GgmlType::Q8_0;
    const bool has_min = type == GgmlType::Q4_1 || type == GgmlType::Q5_1;
    const uint8_t hi = q8 ? 0x7F : 0xFF, lo = q8 ? 0x80 : 0x00;
    const uint8_t mixed[] = {hi, lo, 0x0F, 0xF0, 0x7F, 0x80, 0x81, 0xFF, 0x00};
    std::mt19937 rng(seed);
    const int64_t row_blocks = n_in / static_cast<int64_t>(shape.elems);
    std::vector<uint8_t> out(static_cast<size_t>(n_out * row_blocks) * shape.bytes);
    const uint16_t d16 = fp32_to_fp16(0.01f), m16 = fp32_to_fp16(-0.5f);
    for (int64_t row = 0; row < n_out; ++row) {
        for (int64_t b = 0; b < row_blocks; ++b) {
            uint8_t* blk = out.data() + static_cast<size_t>(row * row_blocks + b) * shape.bytes;
            for (size_t i = 0; i < shape.bytes; ++i) {
                switch ((row + b) % 4) {
                    case 0:
                        blk[i] = hi;
                        break;
                    case 1:
                        blk[i] = lo;
                        break;
                    case 2:
                        blk[i] = mixed[rng() % std::size(mixed)];
                        break;
                    default:
                        blk[i] = static_cast<uint8_t>(rng());
                        break;
                }
            }
            std::memcpy(blk, &d16, 2);
            if (has_min) std::memcpy(blk + 2, &m16, 2);
        }
    }
    return out;
}

// Activation blocks that quantize to all +127, all -127, alternating +-127, one +-amax among
// random values, and random.
std::vector<float> extreme_x(int64_t m, int64_t ldx, int64_t n_in, uint32_t seed) {
    auto x = random_vec(m * ldx, seed);
    for (int64_t r = 0; r < m; ++r) {
        for (int64_t b = 0; b < n_in / 32; ++b) {
            float* xb = x.data() + r * ldx + b * 32;
            for (int j = 0; j < 32; ++j) {
                switch ((r + 2 * b) % 5) {
                    case 0:
                        xb[j] = 3.0f;
                        break;
                    case 1:
                        xb[j] = -3.0f;
                        break;
                    case 2:
                        xb[j] = j % 2 ? 3.0f : -3.0f;
                        break;
                    case 3:
                        xb[j] = j == 5 ? (r % 2 ? -4.0f : 4.0f) : xb[j];
                        break;
                    default:
                        break;
                }
            }
        }
    }
    return x;
}

void expect_extremes_match_ref(Isa isa) {
    uint32_t seed = 1700;
    for (GgmlType type : kTypes) {
        for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 11}) {
            for (const Shape& s :
                 {Shape{m, 37, 160, 0, 0, false, false}, Shape{m, 64, 96, 4, 3, true, true}}) {
                seed += 7;
                const auto blocks = extreme_blocks(type, s.n_out, s.n_in, seed);
                const auto x = extreme_x(s.m, s.ldx(), s.n_in, seed + 2);
                expect_isa_matches_ref(isa, type, blocks, s, x, seed);
            }
        }
    }
}

bool have_vnni() {
    const CpuFeatures f = detect_cpu_features();
    return isa_supported(Isa::kAvx512, f) && f.avx512vnni;
}

// Q6_K blocks at the extremes: quants all 63, all 0 or mixed (u * qx at its largest, with
// u - 32 at both ends) and half-block scales 127, -128 or mixed, against the extreme
// activations: the largest int16 and int32 sums of block_sums_q6.
std::vector<uint8_t> extreme_q6_k(int64_t n_out, int64_t n_in, uint32_t seed) {
    std::mt19937 rng(seed);
    const int64_t n_blocks = n_out * n_in / 256;
    std::vector<uint8_t> out(static_cast<size_t>(n_blocks) * sizeof(quant::BlockQ6K));
    const uint16_t d16 = fp32_to_fp16(0.001f);
    for (int64_t i = 0; i < n_blocks; ++i) {
        quant::BlockQ6K b;
        const int kind = static_cast<int>(i % 4);
        const uint8_t q = kind == 0 ? 0xFF : kind == 1 ? 0x00 : 0;
        for (uint8_t& v : b.ql) v = kind < 2 ? q : static_cast<uint8_t>(rng());
        for (uint8_t& v : b.qh) v = kind < 2 ? q : static_cast<uint8_t>(rng());
        for (int j = 0; j < 16; ++j) {
            b.scales[j] = kind == 3 ? static_cast<int8_t>(rng()) : (j + kind) % 2 ? -128 : 127;
        }
        b.d = d16;
        std::memcpy(out.data() + static_cast<size_t>(i) * sizeof(b), &b, sizeof(b));
    }
    return out;
}

// Every row count of a VNNI pass (1-8, then a second pass) and of an AVX2 one (1-4), groups
// taken 4, 2 or 1 at a time (n_out 64 and 37: whole and ragged).
void expect_q6_k_extremes_match_ref(Isa isa) {
    uint32_t seed = 1900;
    for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13}) {
        for (const Shape& s :
             {Shape{m, 37, 256, 0, 0, false, false}, Shape{m, 64, 512, 4, 3, true, true}}) {
            seed += 7;
            const auto blocks = extreme_q6_k(s.n_out, s.n_in, seed);
            const auto x = extreme_x(s.m, s.ldx(), s.n_in, seed + 2);
            expect_isa_matches_ref(isa, GgmlType::Q6_K, blocks, s, x, seed);
        }
    }
}

TEST(QuantLinearAvx2, ExtremeValuesBitExact) {
    if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
    expect_extremes_match_ref(Isa::kAvx2);
    expect_q6_k_extremes_match_ref(Isa::kAvx2);
}

TEST(QuantLinearVnni, ExtremeValuesBitExact) {
    if (!have_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
    expect_extremes_match_ref(Isa::kAvx512);
    expect_q6_k_extremes_match_ref(Isa::kAvx512);
}

// create_from_f32 (Q8_0 requantization, |q| <= 127) through the AVX2 kernels.
TEST(QuantLinearAvx2, FromF32MatchesReferenceBitExact) {
    if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
    uint32_t seed = 2100;
    for (int64_t m : {1, 4, 8}) {
        const Shape s{m, 45, 192, 0, 0, true, false};
        seed += 7;
        const auto w = random_vec(s.n_out * s.n_in, seed, -2.0f, 2.0f);
        const auto bias = random_vec(s.n_out, seed + 1);
        const auto x = make_x(s.m, s.ldx(), s.n_in, seed + 2);
        const auto y0 = random_vec(s.m * s.ldy(), seed + 3);
        auto ref = QuantLinear::create_from_f32(kRefCtx, w.data(), s.n_out, s.n_in, bias.data());
        auto avx2 =
            QuantLinear::create_from_f32(avx2_ctx(1), w.data(), s.n_out, s.n_in, bias.data());
        ASSERT_TRUE(ref.ok() && avx2.ok());
        ASSERT_TRUE(avx2->uses_fast_path());
        EXPECT_EQ(run(*avx2, s, x, y0), run(*ref, s, x, y0)) << "m=" << m;
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
    const Shape s{3, 45, 512, 0, 0, false, false};
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
    const Shape s{2, kOut, kIn, 0, 0, false, false};
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
    const QuantLinear::Part q3k{GgmlType::Q3_K, data.data(), 4};
    expect_error(QuantLinear::create(ctx, {&q3k, 1}, 256), ErrorCode::kUnsupported, "Q3_K");
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
    const QuantLinear::Part mixed[] = {q8, {GgmlType::Q3_K, data.data(), 4}};
    expect_error(QuantLinear::create(ctx, mixed, 256), ErrorCode::kUnsupported, "Q3_K");
    const std::vector<float> w(4 * 48, 1.0f);
    expect_error(QuantLinear::create_from_f32(ctx, w.data(), 4, 48), ErrorCode::kInvalidArgument,
                 "n_in=48");
    expect_error(QuantLinear::create_from_f32(ctx, nullptr, 4, 32), ErrorCode::kInvalidArgument,
                 "null=true");
}

}  // namespace
}  // namespace lazyllm::kernels
