// PackedLinear's AVX2 fp32 backend (gemm_avx2.cpp: 6 x 16 micro-tiles, k blocks, rows or
// panels split over threads) against ref::linear: ragged row counts (every micro-tile height
// 1-6, more than one row block), ragged n_out (a masked last panel), n_in not a multiple of 8
// and over one k block, strided x and y, bias, accumulate, 1 and 2 threads, and no write
// outside y's [m, n_out] columns; the backend choice (ISA, precision, KernelContext::gemm); the
// same layer on oneDNN. Any shape fits the kernel, so there is no fallback to test. Skips on CPUs
// without AVX2/FMA/F16C.
//
// Error bound per output y = sum_i x_i w_i (+ b): the kernel sums in another order (8 lanes,
// k blocks), so |err| <= 1e-5 * (sum_i |x_i w_i| + |b|
// + |y0| when accumulating) + 1e-6, as for oneDNN in gemm_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/gemm_test_util.h"
#include "support/random.h"

namespace lazyllm::kernels {
namespace {

using test::random_vec;

#define SKIP_WITHOUT_AVX2()                                  \
    if (!isa_supported(Isa::kAvx2, detect_cpu_features())) { \
        GTEST_SKIP() << "no AVX2/FMA/F16C";                  \
    }

using Case = lazyllm::test::LinearCase;

std::string describe(const Case& c, int threads) {
    return "m=" + std::to_string(c.m) + " n_in=" + std::to_string(c.n_in) +
           " n_out=" + std::to_string(c.n_out) + (c.bias ? " bias" : "") +
           (c.accumulate ? " accumulate" : "") + " ldx+" + std::to_string(c.ldx_pad) + " ldy+" +
           std::to_string(c.ldy_pad) + " threads=" + std::to_string(threads);
}

void run_case(const Case& c, int threads, uint32_t seed) {
    const int64_t ldx = c.n_in + c.ldx_pad, ldy = c.n_out + c.ldy_pad;
    const auto w = random_vec(c.n_out * c.n_in, seed);
    const auto b = random_vec(c.n_out, seed + 1);
    // x ends at the last row's n_in: a read past it is out of bounds (under ASan).
    const auto x = random_vec((c.m - 1) * ldx + c.n_in, seed + 2);
    // Prior contents of y, and one row's worth past its end: the kernel must write neither
    // the row padding nor past the last row's n_out columns.
    const auto y0 = random_vec(c.m * ldy + ldy, seed + 3);
    auto lin = PackedLinear::create({Isa::kAvx2, threads}, w.data(), c.n_out, c.n_in,
                                    c.bias ? b.data() : nullptr, GemmPrecision::kF32);
    ASSERT_TRUE(lin.ok()) << lin.error().message();
    ASSERT_EQ(lin->backend(), GemmBackend::kAvx2);
    std::vector<float> y = y0;
    lin->forward(x.data(), c.m, y.data(), ldx, ldy, c.accumulate);

    const lazyllm::test::LinearReference reference = lazyllm::test::linear_reference(c, x.data(), w.data(), b.data());
    const std::vector<float>& xd = reference.x_dense;
    const std::vector<float>& want = reference.y;
    const std::string what = describe(c, threads);
    for (int64_t r = 0; r < c.m + 1; ++r) {
        for (int64_t o = 0; o < ldy; ++o) {
            const int64_t i = r * ldy + o;
            if (r == c.m || o >= c.n_out) {
                ASSERT_EQ(y[i], y0[i])
                    << "wrote outside the output, r=" << r << " o=" << o << " " << what;
                continue;
            }
            double mag = c.bias ? std::fabs(b[o]) : 0.0;
            for (int64_t k = 0; k < c.n_in; ++k) {
                mag += std::fabs(static_cast<double>(xd[r * c.n_in + k]) * w[o * c.n_in + k]);
            }
            double expect = want[r * c.n_out + o];
            if (c.accumulate) {
                expect += y0[i];
                mag += std::fabs(y0[i]);
            }
            ASSERT_NEAR(y[i], expect, 1e-5 * mag + 1e-6) << "r=" << r << " o=" << o << " " << what;
        }
    }
}

TEST(GemmAvx2, RaggedRowsMatchRef) {
    SKIP_WITHOUT_AVX2();
    uint32_t seed = 100;
    // 1-13: every micro-tile height (1-6 rows, the 1-3 row tiles with split accumulators;
    // 7-13 rows as two or three near-equal tiles); 97, 300: split over the threads by panels
    // (one row block) or by rows.
    for (int threads : {1, 2}) {
        for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 97, 300}) {
            run_case({m, 576, 960, false, false, 0, 0}, threads, seed += 10);
            run_case({m, 37, 53, m % 2 == 0, m % 3 == 0, 3, 5}, threads, seed += 10);
        }
    }
}

TEST(GemmAvx2, RaggedColumnsAndDepthMatchRef) {
    SKIP_WITHOUT_AVX2();
    // n_out: one to 16 columns in the last panel (1, 7, 8, 9, 15, 17, 20, 53, 63); n_in: odd,
    // below one ymm, and over one k block of at most 768 (gemm_avx2.cpp kKcMax): 1536 in two
    // equal blocks, 1001 in 501 + 500, 2311 in three of 578 and one of 577.
    const int64_t dims[][2] = {{1, 1},   {5, 7},    {8, 8},     {13, 9},     {64, 15},  {100, 16},
                               {37, 17}, {333, 53}, {1001, 63}, {1536, 576}, {2311, 20}};
    uint32_t seed = 200;
    for (int threads : {1, 2}) {
        for (const auto& d : dims) {
            for (int64_t m : {1, 4, 13, 97}) {
                run_case({m, d[0], d[1], false, false, 0, 0}, threads, seed += 10);
            }
            run_case({7, d[0], d[1], true, false, 0, 0}, threads, seed += 10);
            run_case({11, d[0], d[1], true, true, 9, 4}, threads, seed += 10);
            run_case({3, d[0], d[1], false, true, 1, 16}, threads, seed += 10);
        }
    }
}

TEST(GemmAvx2, ManyRowBlocksMatchRef) {
    SKIP_WITHOUT_AVX2();
    // More rows than one row block (x rows of a block fit 256 KiB: 108 rows at n_in = 576,
    // 84 at 1536), a row count that leaves a short micro-tile at the end of the last block,
    // strided, with bias and accumulate; the model's down shape (1536 -> 576).
    uint32_t seed = 300;
    for (int threads : {1, 2}) {
        run_case({1201, 576, 96, true, true, 16, 3}, threads, seed += 10);
        run_case({700, 1536, 40, true, false, 8, 0}, threads, seed += 10);
        run_case({301, 100, 1000, false, true, 0, 7}, threads, seed += 10);
    }
}

TEST(GemmAvx2, RepeatedShapesAndZeroRows) {
    SKIP_WITHOUT_AVX2();
    const int64_t n_in = 64, n_out = 48;
    const auto w = random_vec(n_out * n_in, 4);
    auto lin =
        PackedLinear::create({Isa::kAvx2, 2}, w.data(), n_out, n_in, nullptr, GemmPrecision::kF32);
    ASSERT_TRUE(lin.ok());
    ASSERT_EQ(lin->backend(), GemmBackend::kAvx2);
    lin->forward(nullptr, 0, nullptr);  // m = 0 is a no-op
    for (int64_t m : {5, 1, 5, 9, 2, 9, 1}) {
        const auto x = random_vec(m * n_in, 5 + m);
        std::vector<float> y(m * n_out), want(m * n_out);
        lin->forward(x.data(), m, y.data());
        ref::linear(x.data(), w.data(), nullptr, want.data(), m, n_out, n_in);
        for (int64_t i = 0; i < m * n_out; ++i) ASSERT_NEAR(y[i], want[i], 1e-4f) << m;
    }
}

// A row's outputs do not depend on the rows beside it: the rows of a call taken in calls of
// 1 to 7 rows (every micro-tile height, with and without a split over the threads) are the
// whole call's, bit for bit (row-invariant prompt steps, gemm_avx2.cpp).
TEST(GemmAvx2, RowsAloneEqualTheSameRowsInALargerCall) {
    SKIP_WITHOUT_AVX2();
    const int64_t m = 40, n_in = 1536, n_out = 200;  // two k blocks, a masked last panel
    const auto w = random_vec(n_out * n_in, 71);
    const auto x = random_vec(m * n_in, 72);
    for (int threads : {1, 2}) {
        auto lin = PackedLinear::create({Isa::kAvx2, threads}, w.data(), n_out, n_in, nullptr,
                                        GemmPrecision::kF32);
        ASSERT_TRUE(lin.ok()) << lin.error().message();
        std::vector<float> whole(m * n_out);
        lin->forward(x.data(), m, whole.data(), n_in, n_out, false);
        for (int64_t rows = 1; rows <= 7; ++rows) {
            for (int64_t r0 = 0; r0 + rows <= m; r0 += rows) {
                std::vector<float> part(rows * n_out);
                lin->forward(x.data() + r0 * n_in, rows, part.data(), n_in, n_out, false);
                ASSERT_TRUE(std::equal(part.begin(), part.end(), whole.begin() + r0 * n_out))
                    << "rows " << r0 << "+" << rows << " threads=" << threads;
            }
        }
    }
}

TEST(GemmAvx2, BackendFollowsIsaPrecisionAndEnv) {
    SKIP_WITHOUT_AVX2();
    const auto w = random_vec(50 * 30, 11);
    auto own = PackedLinear::create({Isa::kAvx2, 2}, w.data(), 50, 30, nullptr,
                                    GemmPrecision::kAuto);  // kAuto on avx2: fp32
    ASSERT_TRUE(own.ok());
    EXPECT_EQ(own->backend(), GemmBackend::kAvx2);
    EXPECT_FALSE(own->is_bf16());
    EXPECT_EQ(own->weight_bytes(), 64u * 30u * sizeof(float));  // 4 panels of 16 columns
    auto ref_ctx = PackedLinear::create({Isa::kRef, 2}, w.data(), 50, 30);
    ASSERT_TRUE(ref_ctx.ok());
    EXPECT_EQ(ref_ctx->backend(), GemmBackend::kOneDnn);
    if (isa_supported(Isa::kAvx512, detect_cpu_features())) {
        auto avx512 =
            PackedLinear::create({Isa::kAvx512, 2}, w.data(), 50, 30, nullptr, GemmPrecision::kF32);
        ASSERT_TRUE(avx512.ok());
        EXPECT_EQ(avx512->backend(), GemmBackend::kOneDnn);
    }
    auto forced = PackedLinear::create({Isa::kAvx2, 2, nullptr, GemmKernels::kOneDnn}, w.data(), 50,
                                       30, nullptr, GemmPrecision::kF32);
    ASSERT_TRUE(forced.ok());
    EXPECT_EQ(forced->backend(), GemmBackend::kOneDnn);
}

TEST(GemmAvx2, SameResultAsOneDnnWithinRounding) {
    SKIP_WITHOUT_AVX2();
    // The two fp32 backends on the same layer, the model's gate|up shape at a stage's rows.
    const int64_t m = 203, n_in = 576, n_out = 3072;
    const auto w = random_vec(n_out * n_in, 31);
    const auto b = random_vec(n_out, 32);
    const auto x = random_vec(m * n_in, 33);
    auto own =
        PackedLinear::create({Isa::kAvx2, 2}, w.data(), n_out, n_in, b.data(), GemmPrecision::kF32);
    auto dnn = PackedLinear::create({Isa::kAvx2, 2, nullptr, GemmKernels::kOneDnn}, w.data(), n_out,
                                    n_in, b.data(), GemmPrecision::kF32);
    ASSERT_TRUE(own.ok() && dnn.ok());
    ASSERT_EQ(own->backend(), GemmBackend::kAvx2);
    ASSERT_EQ(dnn->backend(), GemmBackend::kOneDnn);
    std::vector<float> y_own(m * n_out), y_dnn(m * n_out);
    own->forward(x.data(), m, y_own.data());
    dnn->forward(x.data(), m, y_dnn.data());
    // |x|, |w|, |b| <= 1: sum_i |x_i w_i| + |b| <= 577, each side within 1e-5 of that.
    for (int64_t i = 0; i < m * n_out; ++i) ASSERT_NEAR(y_own[i], y_dnn[i], 2 * 1e-5 * 577) << i;
}

#undef SKIP_WITHOUT_AVX2

}  // namespace
}  // namespace lazyllm::kernels
