// PackedLinear against ref::linear on ragged shapes, fp32 and (where the CPU has it) bf16 on
// both backends (our AMX kernel where the shape fits it, oneDNN), with bias, accumulation and
// strided rows; the SwiGLU layout against GEMM + glu_bf16; backend selection.
//
// Error bounds, per output y = sum_i x_i w_i (+ b):
// - fp32: oneDNN sums in another order; |err| <= 1e-5 * sum_i |x_i w_i| (+ tiny absolute).
// - bf16: x_i and w_i are each rounded to bf16 (8 significant bits, round to nearest even:
//   relative error <= 2^-8 each), products and sums are fp32, so
//   |err| <= (2 * 2^-8 + 2^-16) * sum_i |x_i w_i| + fp32 summation error; the test allows
//   1.01 * 2^-7 * sum_i |x_i w_i| + 1e-5 (the worst case). On random data the roundings are
//   independent with variance (2^-8)^2 / 3 each, so err has standard deviation
//   2^-8 * sqrt(2/3) * ||x_i w_i||_2; the test also requires |err| <= 6 * 2^-8 * ||x_i w_i||_2
//   (over 7 standard deviations), which catches a systematic loss of precision.
#include "kernels/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu.h"
#include "kernels/gemm_test_util.h"
#include "kernels/gemm_convert.h"
#include "kernels/ops.h"
#include "kernels/quant_blocks.h"
#include "support/cpu.h"
#include "support/random.h"

namespace lazyllm::kernels {
namespace {

using lazyllm::test::gemm_ctx;
using lazyllm::test::GemmScope;

KernelContext best_ctx() { return gemm_ctx(best_isa(detect_cpu_features())); }

bool amx_gemm_here() {
    const float w[32 * 32] = {};
    auto lin = PackedLinear::create(best_ctx(), w, 32, 32, nullptr, GemmPrecision::kAuto);
    return lin.ok() && lin->backend() == GemmBackend::kAmx;
}

using test::random_vec;

using Case = lazyllm::test::LinearCase;

void run_case(const Case& c, GemmPrecision precision, uint32_t seed) {
    const int64_t ldx = c.n_in + c.ldx_pad, ldy = c.n_out + c.ldy_pad;
    const auto w = random_vec(c.n_out * c.n_in, seed);
    const auto b = random_vec(c.n_out, seed + 1);
    const auto x = random_vec(c.m * ldx, seed + 2);
    const auto y0 = random_vec(c.m * ldy, seed + 3);  // prior contents for accumulate
    auto lin = PackedLinear::create(best_ctx(), w.data(), c.n_out, c.n_in,
                                    c.bias ? b.data() : nullptr, precision);
    ASSERT_TRUE(lin.ok()) << lin.error().message();
    ASSERT_EQ(lin->is_bf16(), precision == GemmPrecision::kBf16);
    ASSERT_EQ(lin->n_in(), c.n_in);
    ASSERT_EQ(lin->n_out(), c.n_out);
    std::vector<float> y = y0;
    lin->forward(x.data(), c.m, y.data(), ldx, ldy, c.accumulate);

    const lazyllm::test::LinearReference reference = lazyllm::test::linear_reference(c, x.data(), w.data(), b.data());
    const std::vector<float>& xd = reference.x_dense;
    const std::vector<float>& want = reference.y;
    const bool bf16 = precision == GemmPrecision::kBf16;
    const double rel = bf16 ? 1.01 * std::ldexp(1.0, -7) : 1e-5;
    const double abs = bf16 ? 1e-5 : 1e-6;
    for (int64_t r = 0; r < c.m; ++r) {
        for (int64_t o = 0; o < ldy; ++o) {
            const float got = y[r * ldy + o];
            if (o >= c.n_out) {
                ASSERT_EQ(got, y0[r * ldy + o]) << "wrote into the row padding";
                continue;
            }
            double mag = c.bias ? std::fabs(b[o]) : 0.0;
            double norm2 = 0.0;
            for (int64_t i = 0; i < c.n_in; ++i) {
                const double p = static_cast<double>(xd[r * c.n_in + i]) * w[o * c.n_in + i];
                mag += std::fabs(p);
                norm2 += p * p;
            }
            const double expect = want[r * c.n_out + o] + (c.accumulate ? y0[r * ldy + o] : 0.0);
            ASSERT_NEAR(got, expect, rel * mag + abs)
                << "m=" << c.m << " n_in=" << c.n_in << " n_out=" << c.n_out << " r=" << r
                << " o=" << o << (bf16 ? " bf16" : " f32");
            if (bf16) {
                ASSERT_NEAR(got, expect, 6.0 * std::ldexp(std::sqrt(norm2), -8) + abs)
                    << "statistical bound, m=" << c.m << " n_in=" << c.n_in << " r=" << r
                    << " o=" << o;
            }
        }
    }
}

std::vector<Case> cases() {
    std::vector<Case> out;
    // 576 x 960 and 64 x 96 fit the AMX kernel (multiples of 32); the others run on oneDNN.
    const int64_t dims[][2] = {{576, 960}, {64, 96}, {37, 53}, {100, 7}, {1536, 40}};
    for (const auto& d : dims) {
        for (int64_t m : {1, 3, 17, 64, 300}) {
            out.push_back({m, d[0], d[1], false, false, 0, 0});
        }
        out.push_back({17, d[0], d[1], true, false, 0, 0});
        out.push_back({17, d[0], d[1], true, true, 0, 0});
        out.push_back({3, d[0], d[1], false, true, 5, 3});  // strided, accumulate
        out.push_back({64, d[0], d[1], true, false, 16, 1});
        // A ragged row count runs as a 64-aligned block plus a tail (gemm.cpp kRowAlign).
        out.push_back({131, d[0], d[1], true, true, 16, 1});
    }
    // More rows than one AMX row block per thread (512 rows at n_in = 576): 4 blocks of
    // 10-11 micro-tiles, the last one short (gemm_amx.cpp).
    out.push_back({1300, 576, 96, false, false, 0, 0});
    out.push_back({1300, 576, 96, true, true, 16, 1});
    // AMX weights too big for the micro-tile-by-micro-tile order (over 1.25 MiB packed), and
    // three k blocks (n_in = 1536): both run panel by panel.
    out.push_back({300, 576, 1152, true, true, 16, 1});
    out.push_back({300, 1536, 64, false, true, 0, 0});
    out.push_back({700, 1536, 64, true, false, 8, 3});
    return out;
}

TEST(Gemm, F32MatchesRef) {
    uint32_t seed = 1;
    for (const Case& c : cases()) run_case(c, GemmPrecision::kF32, seed += 10);
}

// oneDNN's fp32 path (strided copies, ragged tails, primitive cache) where the default is our
// AVX2 kernel (GemmKernels::kOneDnn keeps oneDNN).
TEST(Gemm, F32OnOneDnnMatchesRef) {
    const GemmScope onednn(GemmKernels::kOneDnn);
    uint32_t seed = 3;
    const std::vector<Case> all = cases();
    // Every third case: the shapes, strides and flags all recur (F32MatchesRef runs them all).
    for (size_t i = 0; i < all.size(); i += 3) run_case(all[i], GemmPrecision::kF32, seed += 10);
}

TEST(Gemm, Bf16MatchesRefWithinRounding) {
    if (!testing::cpu_has_bf16_gemm()) GTEST_SKIP() << "no AVX-512-BF16";
    uint32_t seed = 2;
    for (const Case& c : cases()) run_case(c, GemmPrecision::kBf16, seed += 10);
}

TEST(Gemm, Bf16OnOneDnnMatchesRefWithinRounding) {
    if (!testing::cpu_has_bf16_gemm()) GTEST_SKIP() << "no AVX-512-BF16";
    GemmScope onednn(GemmKernels::kOneDnn);
    uint32_t seed = 3;
    for (const Case& c : cases()) run_case(c, GemmPrecision::kBf16, seed += 10);
}

TEST(Gemm, BackendFollowsShapeCpuAndEnv) {
    if (!amx_gemm_here()) GTEST_SKIP() << "no AMX GEMM on this CPU";
    const auto w = random_vec(96 * 64, 11);
    auto amx = PackedLinear::create(best_ctx(), w.data(), 96, 64);
    ASSERT_TRUE(amx.ok());
    EXPECT_EQ(amx->backend(), GemmBackend::kAmx);
    EXPECT_EQ(amx->weight_bytes(), 96u * 64u * 2u);
    auto ragged = PackedLinear::create(best_ctx(), w.data(), 95, 64);  // n_out % 32 != 0
    ASSERT_TRUE(ragged.ok());
    EXPECT_EQ(ragged->backend(), GemmBackend::kOneDnn);
    auto f32 = PackedLinear::create(best_ctx(), w.data(), 96, 64, nullptr, GemmPrecision::kF32);
    ASSERT_TRUE(f32.ok());
    EXPECT_EQ(f32->backend(), GemmBackend::kOneDnn);
    {
        GemmScope onednn(GemmKernels::kOneDnn);
        auto forced = PackedLinear::create(best_ctx(), w.data(), 96, 64);
        ASSERT_TRUE(forced.ok());
        EXPECT_EQ(forced->backend(), GemmBackend::kOneDnn);
    }
}

// LAZYLLM_GEMM is read where the runtime builds its context: auto and amx mean our kernels,
// onednn oneDNN alone, anything else an error naming the value.
TEST(Gemm, KernelsFromTheEnvironment) {
    const auto with = [](const char* v) {
        setenv("LAZYLLM_GEMM", v, 1);
        auto k = gemm_kernels_from_env();
        unsetenv("LAZYLLM_GEMM");
        return k;
    };
    EXPECT_EQ(gemm_kernels_from_env().value(), GemmKernels::kOwn);
    EXPECT_EQ(with("auto").value(), GemmKernels::kOwn);
    EXPECT_EQ(with("amx").value(), GemmKernels::kOwn);
    EXPECT_EQ(with("onednn").value(), GemmKernels::kOneDnn);
    auto bad = with("cublas");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("LAZYLLM_GEMM=cublas"), std::string::npos)
        << bad.error().message();
}

// forward_glu_bf16 against GEMM + glu_bf16 on a plain-layout linear (same bf16 inputs,
// fp32 sums in another order: the bf16 outputs may differ by an ulp or two), on both
// backends, with strided input and output rows; forward() on the SwiGLU layout keeps W's
// column order.
void run_glu_case(GluAct act, int64_t m, int64_t n_in, int64_t n_ff, bool with_bias,
                  uint32_t seed) {
    const int64_t ldx = n_in + 8, ld_act = n_ff + 5;
    const auto w = random_vec(2 * n_ff * n_in, seed);
    const auto b = random_vec(2 * n_ff, seed + 1);
    const auto xf = random_vec(m * ldx, seed + 2);
    std::vector<uint16_t> x(m * ldx);
    detail::convert_rows_to_bf16_ref(xf.data(), m, n_in, ldx, x.data(), ldx);
    const float* bias = with_bias ? b.data() : nullptr;
    auto fused = PackedLinear::create(best_ctx(), w.data(), 2 * n_ff, n_in, bias,
                                      GemmPrecision::kBf16, GemmLayout::kSwiGlu);
    auto plain = PackedLinear::create(best_ctx(), w.data(), 2 * n_ff, n_in, bias,
                                      GemmPrecision::kBf16, GemmLayout::kPlain);
    ASSERT_TRUE(fused.ok() && plain.ok());
    std::vector<float> gu(m * 2 * n_ff), gu_fused(m * 2 * n_ff);
    plain->forward_bf16(x.data(), m, gu.data(), ldx);
    fused->forward_bf16(x.data(), m, gu_fused.data(), ldx);
    ASSERT_EQ(gu_fused, gu) << "SwiGLU layout changed forward_bf16's columns";
    std::vector<uint16_t> want(m * n_ff), got(m * ld_act, 0x7777);
    glu_bf16(best_ctx(), act, gu.data(), want.data(), m, n_ff);
    fused->forward_glu_bf16(act, x.data(), m, got.data(), ldx, ld_act);
    for (int64_t r = 0; r < m; ++r) {
        for (int64_t i = 0; i < ld_act; ++i) {
            if (i >= n_ff) {
                ASSERT_EQ(got[r * ld_act + i], 0x7777) << "wrote into the row padding";
                continue;
            }
            const float e = quant::bf16_to_fp32_scalar(want[r * n_ff + i]);
            const float g = quant::bf16_to_fp32_scalar(got[r * ld_act + i]);
            ASSERT_NEAR(g, e, std::ldexp(std::fabs(e), -7) + 1e-6f)
                << "m=" << m << " n_ff=" << n_ff << " r=" << r << " i=" << i;
        }
    }
}

// SwiGLU and GeGLU (Gemma 3) alike.
TEST(Gemm, SwiGluLayoutMatchesGemmThenGlu) {
    if (!testing::cpu_has_bf16_gemm()) GTEST_SKIP() << "no AVX-512-BF16";
    for (const GemmKernels backend : {GemmKernels::kOwn, GemmKernels::kOneDnn}) {
        GemmScope scope(backend);
        for (const GluAct act : {GluAct::kSilu, GluAct::kGeluTanh}) {
            uint32_t seed = act == GluAct::kSilu ? 40 : 400;
            for (int64_t m : {1, 9, 32, 133}) {
                run_glu_case(act, m, 64, 48, false, seed += 10);  // 2 n_ff = 96: AMX-able
                run_glu_case(act, m, 576, 96, true, seed += 10);
                run_glu_case(act, m, 40, 20, m % 2 == 1, seed += 10);  // oneDNN + glu_bf16
            }
        }
    }
}

// Off the AMX backend forward_glu_bf16 runs the gate|up GEMM kSwiGluChunkRows rows at a
// time: the result is the one call's over all rows, bit for bit (each row's sums do not depend
// on the rows beside it), at row counts that leave a partial last chunk, with strided rows.
TEST(Gemm, SwiGluInRowChunksEqualsOneCall) {
    if (!testing::cpu_has_bf16_gemm()) GTEST_SKIP() << "no AVX-512-BF16";
    GemmScope scope(GemmKernels::kOneDnn);
    const int64_t n_in = 576, n_ff = 96, ldx = n_in + 8;
    for (const int64_t m : {kSwiGluChunkRows + 1, 2 * kSwiGluChunkRows + 88}) {
        const auto w = random_vec(2 * n_ff * n_in, 5);
        const auto xf = random_vec(m * ldx, 6);
        std::vector<uint16_t> x(m * ldx);
        detail::convert_rows_to_bf16_ref(xf.data(), m, n_in, ldx, x.data(), ldx);
        auto lin = PackedLinear::create(best_ctx(), w.data(), 2 * n_ff, n_in, nullptr,
                                        GemmPrecision::kBf16, GemmLayout::kSwiGlu);
        ASSERT_TRUE(lin.ok());
        ASSERT_EQ(lin->backend(), GemmBackend::kOneDnn);
        std::vector<float> gu(m * 2 * n_ff);
        lin->forward_bf16(x.data(), m, gu.data(), ldx);  // one call, all rows
        std::vector<uint16_t> want(m * n_ff), got(m * n_ff);
        glu_bf16(best_ctx(), GluAct::kSilu, gu.data(), want.data(), m, n_ff);
        lin->forward_glu_bf16(GluAct::kSilu, x.data(), m, got.data(), ldx);
        ASSERT_EQ(got, want) << "m=" << m;
    }
}

TEST(Gemm, SwiGluLayoutNeedsGateAndUpRows) {
    const auto w = random_vec(63 * 32, 12);
    auto odd = PackedLinear::create(best_ctx(), w.data(), 63, 32, nullptr, GemmPrecision::kAuto,
                                    GemmLayout::kSwiGlu);
    ASSERT_FALSE(odd.ok());
    EXPECT_NE(odd.error().message().find("n_out=63"), std::string::npos);
}

TEST(Gemm, AutoPrecisionFollowsIsaAndCpu) {
    const auto w = random_vec(16 * 8, 3);
    auto ref_lin = PackedLinear::create({Isa::kRef, 1}, w.data(), 8, 16);
    ASSERT_TRUE(ref_lin.ok());
    EXPECT_FALSE(ref_lin->is_bf16());
    auto best = PackedLinear::create(best_ctx(), w.data(), 8, 16);
    ASSERT_TRUE(best.ok());
    EXPECT_EQ(best->is_bf16(), testing::auto_precision_is_bf16_at(best_isa(detect_cpu_features())));
    EXPECT_GT(best->weight_bytes(), 0u);
    auto forced = PackedLinear::create(best_ctx(), w.data(), 8, 16, nullptr, GemmPrecision::kBf16);
    EXPECT_EQ(forced.ok(), testing::cpu_has_bf16_gemm());
}

TEST(Gemm, RejectsBadShapes) {
    const float w = 1.0f;
    EXPECT_FALSE(PackedLinear::create(best_ctx(), &w, 0, 1).ok());
    EXPECT_FALSE(PackedLinear::create(best_ctx(), nullptr, 1, 1).ok());
}

TEST(Gemm, RepeatedShapesAndZeroRows) {
    // Many m values through one layer (pruning makes m arbitrary): cached primitives must
    // not mix shapes up.
    const int64_t n_in = 64, n_out = 48;
    const auto w = random_vec(n_out * n_in, 4);
    auto lin = PackedLinear::create(best_ctx(), w.data(), n_out, n_in);
    ASSERT_TRUE(lin.ok());
    lin->forward(nullptr, 0, nullptr);  // m = 0 is a no-op
    for (int64_t m : {5, 1, 5, 9, 2, 9, 1}) {
        const auto x = random_vec(m * n_in, 5 + m);
        std::vector<float> y(m * n_out), want(m * n_out);
        lin->forward(x.data(), m, y.data());
        ref::linear(x.data(), w.data(), nullptr, want.data(), m, n_out, n_in);
        for (int64_t i = 0; i < m * n_out; ++i) ASSERT_NEAR(y[i], want[i], 0.1f) << m;
    }
}

TEST(Gemm, ForwardBf16EqualsForwardOnConvertedInput) {
    if (!testing::cpu_has_bf16_gemm()) GTEST_SKIP() << "no AVX-512-BF16";
    const int64_t m = 137, n_in = 576, n_out = 96, ldx = n_in + 8;  // 128 + a tail of 9
    const auto w = random_vec(n_out * n_in, 6);
    const auto b = random_vec(n_out, 7);
    const auto x = random_vec(m * ldx, 8);
    auto lin =
        PackedLinear::create(best_ctx(), w.data(), n_out, n_in, b.data(), GemmPrecision::kBf16);
    ASSERT_TRUE(lin.ok());
    std::vector<uint16_t> xb(m * ldx);
    detail::convert_rows_to_bf16_ref(x.data(), m, n_in, ldx, xb.data(), ldx);
    std::vector<float> want(m * n_out), got(m * n_out, 1.0f), got_acc(m * n_out, 1.0f);
    lin->forward(x.data(), m, want.data(), ldx);
    lin->forward_bf16(xb.data(), m, got.data(), ldx);  // strided bf16 rows
    EXPECT_EQ(got, want);
    lin->forward_bf16(xb.data(), m, got_acc.data(), ldx, 0, /*accumulate=*/true);
    for (int64_t i = 0; i < m * n_out; ++i) ASSERT_FLOAT_EQ(got_acc[i], want[i] + 1.0f) << i;
}

// A row's output does not depend on the other rows of the call (a prompt over a cached prefix
// answers as the same prompt cold, docs/architecture.md): the q|k|v, Wo, gate|up and down
// shapes of the default model and Gemma 3 270M, each row range of a larger call alone, at 1 and
// 2 threads, in bf16 and fp32.
void expect_rows_alone_equal(KernelContext ctx) {
    struct Shape {
        int64_t n_in, n_out;
    };
    for (const GemmPrecision precision : {GemmPrecision::kBf16, GemmPrecision::kF32}) {
        if (precision == GemmPrecision::kBf16 && !testing::cpu_has_bf16_gemm()) continue;
        for (const Shape s :
             {Shape{576, 960}, Shape{576, 576}, Shape{576, 3072}, Shape{1536, 576},
              Shape{640, 1536}, Shape{1024, 640}, Shape{640, 4096}, Shape{2048, 640}}) {
            const int64_t m = 300;
            const auto w = random_vec(s.n_out * s.n_in, 81);
            const auto x = random_vec(m * s.n_in, 82);
            for (int threads : {1, 2}) {
                ctx.n_threads = threads;
                auto lin = PackedLinear::create(ctx, w.data(), s.n_out, s.n_in, nullptr, precision);
                ASSERT_TRUE(lin.ok()) << lin.error().message();
                std::vector<float> whole(m * s.n_out);
                lin->forward(x.data(), m, whole.data());
                for (const int64_t rows : {1, 2, 3, 7, 16, 31, 64, 65, 129}) {
                    for (const int64_t r0 : {int64_t{0}, int64_t{5}, m - rows}) {
                        std::vector<float> part(rows * s.n_out);
                        lin->forward(x.data() + r0 * s.n_in, rows, part.data());
                        ASSERT_TRUE(
                            std::equal(part.begin(), part.end(), whole.begin() + r0 * s.n_out))
                            << s.n_in << "x" << s.n_out << " rows " << r0 << "+" << rows
                            << " threads=" << threads << " bf16 " << lin->is_bf16() << " backend "
                            << static_cast<int>(lin->backend());
                    }
                }
            }
        }
    }
}

// The context's own backends: the AMX and AVX2 kernels, oneDNN where they do not fit.
TEST(Gemm, RowsAloneEqualTheSameRowsInALargerCall) { expect_rows_alone_equal(best_ctx()); }

// oneDNN at AVX-512 (a Zen 4's GEMMs; on an AMX CPU the cap LAZYLLM_ISA=avx512 sets, without
// which oneDNN runs AMX, whose rows depend on the call). The cap holds only before oneDNN's
// first primitive in the process, which ctest's one process per test gives.
TEST(Gemm, OneDnnAtAvx512RowsAloneEqualTheSameRowsInALargerCall) {
    if (!isa_supported(Isa::kAvx512, detect_cpu_features())) GTEST_SKIP() << "no AVX-512";
    if (!cap_onednn_isa(Isa::kAvx512)) {
        GTEST_SKIP() << "oneDNN ran in this process before the cap (ctest runs this test alone)";
    }
    KernelContext ctx = gemm_ctx(Isa::kAvx512);
    ctx.gemm = GemmKernels::kOneDnn;
    expect_rows_alone_equal(ctx);
}

// RowsDone: on the AMX backend with whole-row work items, fn sees every row exactly once,
// already final (equal to the hook-less result), and forward_bf16 says so; with few rows
// (work items split across columns) and on oneDNN it is never called and forward_bf16 says
// that too. Plain store and accumulate.
struct RowLog {
    const float* y = nullptr;   // the GEMM's output
    const float* want = nullptr;  // the hook-less result
    int64_t n_out = 0;
    std::vector<int> seen;       // calls per row
    std::vector<int> final_ok;   // the row equalled `want` when the hook saw it
};

void log_rows(void* p, int64_t r0, int64_t r1) {
    RowLog& log = *static_cast<RowLog*>(p);
    for (int64_t r = r0; r < r1; ++r) {
        ++log.seen[r];  // rows are disjoint across threads
        log.final_ok[r] = std::memcmp(log.y + r * log.n_out, log.want + r * log.n_out,
                                      sizeof(float) * log.n_out) == 0;
    }
}

TEST(Gemm, RowsDoneHookSeesEachFinalRowOnce) {
    if (!testing::cpu_has_bf16_gemm()) GTEST_SKIP() << "no AVX-512-BF16";
    // 64 -> 96: weights hot in L2, micro-tile by micro-tile (the hook per 32 rows);
    // 1536 -> 64: three k blocks, panel by panel (the hook per row block).
    for (const auto& [n_in, n_out] : {std::pair<int64_t, int64_t>{64, 96}, {1536, 64}}) {
        const auto w = random_vec(n_out * n_in, 21);
        for (const GemmKernels backend : {GemmKernels::kOwn, GemmKernels::kOneDnn}) {
            GemmScope scope(backend);
            auto lin = PackedLinear::create(best_ctx(), w.data(), n_out, n_in, nullptr,
                                            GemmPrecision::kBf16);
            ASSERT_TRUE(lin.ok());
            const bool amx = lin->backend() == GemmBackend::kAmx;
            // 2 threads (best_ctx): below 256 rows the panels are split; from 256 on, whole-row
            // items; 10000 rows at n_in = 64 run as 4 row blocks of 78-79 micro-tiles, the last
            // one short; 1000 rows at n_in = 1536 as 6 blocks of 192 rows or less.
            for (int64_t m :
                 {int64_t{40}, int64_t{255}, int64_t{256}, int64_t{1000}, int64_t{10000}}) {
                if (n_in == 1536 && m == 10000) continue;
                for (bool accumulate : {false, true}) {
                    const auto xf = random_vec(m * n_in, 22);
                    std::vector<uint16_t> x(m * n_in);
                    detail::convert_rows_to_bf16_ref(xf.data(), m, n_in, n_in, x.data(), n_in);
                    std::vector<float> want(m * n_out, 0.5f), got(m * n_out, 0.5f);
                    EXPECT_FALSE(lin->forward_bf16(x.data(), m, want.data(), 0, 0, accumulate));
                    RowLog log;
                    log.y = got.data();
                    log.want = want.data();
                    log.n_out = n_out;
                    log.seen.assign(m, 0);
                    log.final_ok.assign(m, 0);
                    const RowsDone done{&log_rows, &log};
                    const bool called =
                        lin->forward_bf16(x.data(), m, got.data(), 0, 0, accumulate, &done);
                    const std::string what =
                        std::string(backend == GemmKernels::kOwn ? "own" : "onednn") +
                        " n_in=" + std::to_string(n_in) + " m=" + std::to_string(m) +
                        (accumulate ? " accumulate" : " store");
                    EXPECT_EQ(got, want) << what;
                    // Whole-row items need at least 128 rows per thread (gemm_amx.cpp).
                    EXPECT_EQ(called, amx && m >= 256) << what;
                    for (int64_t r = 0; r < m; ++r) {
                        ASSERT_EQ(log.seen[r], called ? 1 : 0) << what << " row " << r;
                        if (called) {
                            ASSERT_TRUE(log.final_ok[r]) << what << " row " << r;
                        }
                    }
                }
            }
        }
    }
}

TEST(GemmConvert, Bf16RoundsToNearestEven) {
    // Values exactly halfway between two bf16 numbers round to the even one.
    std::vector<float> src = {1.0f,
                              1.00390625f /* 1 + 2^-8: tie, down to 1 */,
                              1.01171875f /* 1 + 3 * 2^-8: tie, up */,
                              -2.5f,
                              0.0f,
                              65504.0f};
    for (int i = 0; i < 40; ++i) src.push_back(std::sin(static_cast<float>(i)) * 1000.0f);
    const int64_t n = static_cast<int64_t>(src.size());
    std::vector<uint16_t> want(n), got(n, 0xffff);
    detail::convert_rows_to_bf16_ref(src.data(), 1, n, n, want.data(), n);
    EXPECT_EQ(want[1], 0x3f80);
    EXPECT_EQ(want[2], 0x3f82);
    if (testing::cpu_has_bf16_gemm()) {
        detail::convert_rows_to_bf16_avx512(src.data(), 1, n, n, got.data(), n);
        EXPECT_EQ(got, want);
    }
}

}  // namespace
}  // namespace lazyllm::kernels
