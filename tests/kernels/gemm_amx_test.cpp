// The internal AMX bf16 GEMM (gemm_amx.h): shape checks, the packed weight layout (bit-exact,
// round to nearest even), the SwiGLU column order, and amx_gemm against a double reference on
// ragged m (1 .. 300, short last micro-tiles; 700 .. 1300, several row blocks), n_in 32 / 64 /
// 576 / 640 (one k block) / 1312 and 1536 (three k blocks), n_out 32 / 64 / 96 / 320 / 960, 1-3
// threads, strided x / y / y16 (padding never read or written), kStore / kAccumulate / kGlu with
// and without a bias in packed column order, permuted packed columns, m = 0, and identical results
// for any thread count.
//
// Error bounds: x and W are rounded to bf16 as the kernel does, so the reference differs only
// in the fp32 accumulation order: |err| <= 1e-4 * (sum_k |x_k w_k| + |bias| + |y0|) + 1e-5.
// kGlu (SiLU): bf16(silu(g) * u) within 2 bf16 ulps plus the propagated g / u error of the double
// reference, and within 1 ulp of the same formula on the kernel's own kStore g and u.
#include "kernels/gemm_amx.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/amx_tiles.h"
#include "kernels/quant_blocks.h"
#include "support/random.h"

namespace lazyllm::kernels::detail {
namespace {

#define SKIP_WITHOUT_AMX() \
    if (!amx_permission()) GTEST_SKIP() << "no AMX bf16 (or no tile permission from the OS)"

using test::random_vec;

using quant::bf16_to_fp32_scalar;
using quant::fp32_to_bf16_scalar;

double bf16_ulp(double v) { return v == 0.0 ? 0.0 : std::ldexp(1.0, std::ilogb(v) - 7); }

// One GEMM problem: x bf16 [m, ldx] (padding holds NaN, so reading it shows), W fp32 and its
// bf16-rounded copy, packed with row_of_col.
struct Problem {
    int64_t m, n_in, n_out, ldx;
    std::vector<uint16_t> x;
    std::vector<float> w, wr;
    std::vector<int64_t> roc;  // empty: natural order
    std::vector<uint16_t> packed;

    Problem(int64_t m_, int64_t n_in_, int64_t n_out_, int64_t ldx_pad, uint32_t seed,
            std::vector<int64_t> roc_ = {})
        : m(m_), n_in(n_in_), n_out(n_out_), ldx(n_in_ + ldx_pad), roc(std::move(roc_)) {
        const auto xf = random_vec(m * ldx, seed);
        x.assign(m * ldx, 0x7fc0);  // quiet NaN in the padding
        for (int64_t r = 0; r < m; ++r) {
            for (int64_t k = 0; k < n_in; ++k) {
                x[r * ldx + k] = fp32_to_bf16_scalar(xf[r * ldx + k]);
            }
        }
        w = random_vec(n_out * n_in, seed + 1);
        wr.resize(w.size());
        for (size_t i = 0; i < w.size(); ++i) {
            wr[i] = bf16_to_fp32_scalar(fp32_to_bf16_scalar(w[i]));
        }
        packed.assign(amx_gemm_packed_elems(n_in, n_out), 0);
        amx_gemm_pack(w.data(), n_in, n_out, roc.empty() ? nullptr : roc.data(), packed.data());
    }
    // sum_k x[r, k] W[row, k] in double, and sum_k |x[r, k] W[row, k]|.
    void dot(int64_t r, int64_t row, double* s, double* mag) const {
        *s = *mag = 0.0;
        for (int64_t k = 0; k < n_in; ++k) {
            const double p =
                static_cast<double>(bf16_to_fp32_scalar(x[r * ldx + k])) * wr[row * n_in + k];
            *s += p;
            *mag += std::fabs(p);
        }
    }
    int64_t row_of(int64_t j) const { return roc.empty() ? j : roc[j]; }
    AmxGemmArgs args() const {
        AmxGemmArgs a;
        a.x = x.data(), a.ldx = ldx, a.m = m, a.w = packed.data();
        a.n_in = n_in, a.n_out = n_out;
        return a;
    }
};

// One amx_gemm call. kGlu: n_out = 2 n_ff, W = [gate rows; up rows] packed with
// amx_gemm_swiglu_order (perm is ignored), ldy_pad pads y16.
struct Case {
    int64_t m, n_in, n_out;
    int threads = 1;
    bool bias = false;
    AmxGemmOut out = AmxGemmOut::kStore;
    int64_t ldx_pad = 0, ldy_pad = 0;
    int perm = 0;  // packed column j holds W row: 0: j, 1: n_out - 1 - j, 2: shuffled
};

std::vector<int64_t> make_perm(int perm, int64_t n, uint32_t seed) {
    if (perm == 0) return {};
    std::vector<int64_t> p(n);
    std::iota(p.begin(), p.end(), 0);
    if (perm == 1) std::reverse(p.begin(), p.end());
    if (perm == 2) std::shuffle(p.begin(), p.end(), std::mt19937(seed));
    return p;
}

float silu_f(float g) { return g / (1.0f + std::exp(-g)); }

void run_swiglu(const Case& c, uint32_t seed) {
    const int64_t m = c.m, n_out = c.n_out, n_ff = n_out / 2, ldy16 = n_ff + c.ldy_pad;
    std::vector<int64_t> order(n_out);
    amx_gemm_swiglu_order(n_ff, order.data());
    const Problem pr(m, c.n_in, n_out, c.ldx_pad, seed, order);
    const auto bias_rows = random_vec(n_out, seed + 2);  // per W row
    std::vector<float> bias(n_out);
    for (int64_t j = 0; j < n_out; ++j) bias[j] = bias_rows[order[j]];
    std::vector<uint16_t> y16(m * ldy16, 0xbeef);
    AmxGemmArgs a = pr.args();
    a.bias = c.bias ? bias.data() : nullptr, a.out = AmxGemmOut::kGlu;
    a.y16 = y16.data(), a.ldy16 = ldy16;
    amx_gemm(a, c.threads);
    // The kernel's own fp32 gate / up: kStore on the same packed weights.
    std::vector<float> gu(m * n_out);
    a.out = AmxGemmOut::kStore, a.y16 = nullptr, a.y = gu.data(), a.ldy = n_out;
    amx_gemm(a, c.threads);

    for (int64_t r = 0; r < m; ++r) {
        for (int64_t f = 0; f < ldy16; ++f) {
            const uint16_t bits = y16[r * ldy16 + f];
            if (f >= n_ff) {
                ASSERT_EQ(bits, 0xbeef) << "wrote into the row padding, r=" << r << " f=" << f;
                continue;
            }
            const double got = bf16_to_fp32_scalar(bits);
            double g, u, mg, mu;
            pr.dot(r, f, &g, &mg);
            pr.dot(r, n_ff + f, &u, &mu);
            if (c.bias) g += bias_rows[f], u += bias_rows[n_ff + f];
            const double eg = 1e-4 * (mg + 1.0) + 1e-5, eu = 1e-4 * (mu + 1.0) + 1e-5;
            const float sg = silu_f(static_cast<float>(g));
            const double want =
                bf16_to_fp32_scalar(fp32_to_bf16_scalar(sg * static_cast<float>(u)));
            const double tol =
                2 * bf16_ulp(want) + 1.1 * std::fabs(u) * eg + std::fabs(sg) * eu + eg * eu;
            ASSERT_NEAR(got, want, tol)
                << "vs reference: m=" << m << " n_in=" << c.n_in << " n_ff=" << n_ff
                << " threads=" << c.threads << " bias=" << c.bias << " r=" << r << " f=" << f;
            const int64_t p = f / 16, i = f % 16;
            const float kg = gu[r * n_out + 32 * p + i], ku = gu[r * n_out + 32 * p + 16 + i];
            const double own = bf16_to_fp32_scalar(fp32_to_bf16_scalar(silu_f(kg) * ku));
            ASSERT_LE(std::fabs(got - own), bf16_ulp(std::max(std::fabs(own), std::fabs(got))))
                << "vs silu(g) * u on the kernel's own g, u: m=" << m << " n_ff=" << n_ff
                << " r=" << r << " f=" << f << " got=" << got << " want=" << own;
        }
    }
}

// One case against the reference; y_out (kStore / kAccumulate, if given) receives y.
void run(const Case& c, uint32_t seed, std::vector<float>* y_out = nullptr) {
    if (c.out == AmxGemmOut::kGlu) return run_swiglu(c, seed);
    const Problem pr(c.m, c.n_in, c.n_out, c.ldx_pad, seed, make_perm(c.perm, c.n_out, seed));
    const int64_t ldy = c.n_out + c.ldy_pad;
    const bool acc = c.out == AmxGemmOut::kAccumulate;
    const auto bias = random_vec(c.n_out, seed + 2);  // packed column order
    const auto y0 = random_vec(c.m * ldy, seed + 3);
    std::vector<float> y = y0;
    AmxGemmArgs a = pr.args();
    a.bias = c.bias ? bias.data() : nullptr, a.out = c.out, a.y = y.data(), a.ldy = ldy;
    amx_gemm(a, c.threads);
    if (y_out != nullptr) *y_out = y;
    for (int64_t r = 0; r < c.m; ++r) {
        for (int64_t j = 0; j < ldy; ++j) {
            const float got = y[r * ldy + j], prior = y0[r * ldy + j];
            if (j >= c.n_out) {
                ASSERT_EQ(got, prior) << "wrote into the row padding, r=" << r << " j=" << j;
                continue;
            }
            double want, mag;
            pr.dot(r, pr.row_of(j), &want, &mag);
            if (c.bias) want += bias[j], mag += std::fabs(bias[j]);
            if (acc) want += prior, mag += std::fabs(prior);
            ASSERT_NEAR(got, want, 1e-4 * mag + 1e-5)
                << "m=" << c.m << " n_in=" << c.n_in << " n_out=" << c.n_out
                << " threads=" << c.threads << " bias=" << c.bias << " acc=" << acc
                << " perm=" << c.perm << " r=" << r << " j=" << j;
        }
    }
}

constexpr AmxGemmOut kSt = AmxGemmOut::kStore, kAcc = AmxGemmOut::kAccumulate,
                     kSwi = AmxGemmOut::kGlu;

TEST(GemmAmx, UsableOnlyForMultiplesOf32) {
    const int64_t bad[][2] = {{0, 32},  {32, 0},  {-32, 32}, {32, -32}, {16, 32}, {48, 32},
                              {33, 32}, {32, 16}, {32, 48},  {32, 31},  {576, 80}};
    for (const auto& d : bad) EXPECT_FALSE(amx_gemm_usable(d[0], d[1])) << d[0] << "x" << d[1];
    const int64_t good[][2] = {{32, 32}, {64, 96}, {576, 960}, {1536, 64}};
    for (const auto& d : good) {
        EXPECT_EQ(amx_gemm_usable(d[0], d[1]), amx_permission()) << d[0] << "x" << d[1];
        EXPECT_EQ(amx_gemm_packed_elems(d[0], d[1]), static_cast<size_t>(d[0] * d[1]));
    }
}

TEST(GemmAmx, PackFollowsDocumentedLayoutAndRoundsToNearestEven) {
    const int64_t n_in = 96, n_out = 64, n_chunks = n_in / kAmxGemmChunk;
    auto w = random_vec(n_out * n_in, 11);
    w[5 * n_in + 0] = 1.00390625f;  // 1 + 2^-8: tie, rounds down to 0x3f80
    w[5 * n_in + 1] = 1.01171875f;  // 1 + 3 * 2^-8: tie, rounds up to 0x3f82
    w[5 * n_in + 2] = -0.0f;
    const auto rev = make_perm(1, n_out, 0);
    std::vector<uint16_t> natural(amx_gemm_packed_elems(n_in, n_out)), reversed(natural.size());
    amx_gemm_pack(w.data(), n_in, n_out, nullptr, natural.data());
    amx_gemm_pack(w.data(), n_in, n_out, rev.data(), reversed.data());
    for (int64_t j = 0; j < n_out; ++j) {
        const int64_t p = j / 32, h = (j % 32) / 16, i = j % 16;
        for (int64_t k = 0; k < n_in; ++k) {
            const int64_t at =
                ((p * n_chunks + k / 32) * 2 + h) * 512 + (k % 32) / 2 * 32 + i * 2 + k % 2;
            ASSERT_EQ(natural[at], fp32_to_bf16_scalar(w[j * n_in + k])) << "j=" << j << " k=" << k;
            ASSERT_EQ(reversed[at], fp32_to_bf16_scalar(w[(n_out - 1 - j) * n_in + k]))
                << "j=" << j << " k=" << k;
        }
    }
    const auto at = [&](int64_t j, int64_t k) { return (k % 32) / 2 * 32 + j * 2 + k % 2; };
    EXPECT_EQ(natural[at(5, 0)], 0x3f80);
    EXPECT_EQ(natural[at(5, 1)], 0x3f82);
    EXPECT_EQ(natural[at(5, 2)], 0x8000);
}

TEST(GemmAmx, SwiGluOrderInterleavesGateAndUpBy16) {
    for (int64_t n_ff : {16, 48, 480}) {
        std::vector<int64_t> order(2 * n_ff, -1);
        amx_gemm_swiglu_order(n_ff, order.data());
        EXPECT_EQ(order[15], 15);                      // gate 15
        EXPECT_EQ(order[16], n_ff);                    // up 0
        EXPECT_EQ(order[2 * n_ff - 17], n_ff - 1);     // last gate
        EXPECT_EQ(order[2 * n_ff - 1], 2 * n_ff - 1);  // last up
        for (int64_t j = 0; j < 2 * n_ff; ++j) {
            const int64_t f = 16 * (j / 32) + j % 16;
            ASSERT_EQ(order[j], (j % 32 < 16 ? 0 : n_ff) + f) << "n_ff=" << n_ff << " j=" << j;
        }
        std::sort(order.begin(), order.end());
        for (int64_t j = 0; j < 2 * n_ff; ++j) ASSERT_EQ(order[j], j) << "not a permutation";
    }
}

TEST(GemmAmx, StoreMatchesReferenceOnRaggedShapes) {
    SKIP_WITHOUT_AMX();
    const int64_t dims[][2] = {{32, 32}, {64, 96}, {576, 960}};
    uint32_t seed = 100;
    int n = 0;
    for (int64_t m : {1, 5, 16, 31, 32, 33, 127, 128, 129, 300}) {
        for (const auto& d : dims) run({m, d[0], d[1], 1 + n++ % 3}, seed += 10);
    }
    for (int64_t m : {7, 130}) {  // the remaining (n_in, n_out) pairs
        for (int64_t n_in : {32, 64, 576}) {
            for (int64_t n_out : {32, 96, 960}) run({m, n_in, n_out, 1 + n++ % 3}, seed += 10);
        }
    }
}

TEST(GemmAmx, BiasAccumulateAndStridesMatchReference) {
    SKIP_WITHOUT_AMX();
    uint32_t seed = 200;
    for (AmxGemmOut out : {kSt, kAcc}) {
        for (bool bias : {false, true}) {
            for (int t : {1, 2, 3}) {
                run({33, 64, 96, t, bias, out}, seed += 10);
                run({129, 576, 96, t, bias, out, 8, 5}, seed += 10);
                run({300, 32, 960, t, bias, out, 32, 1}, seed += 10);
                run({5, 576, 960, t, bias, out, 64, 32}, seed += 10);
                run({70, 640, 64, t, bias, out}, seed += 10);   // 20 chunks: one k block
                run({45, 1312, 96, t, bias, out}, seed += 10);  // 41: k blocks of 14, 14, 13
            }
        }
    }
}

TEST(GemmAmx, PermutedPackedColumnsPermuteOutputs) {
    SKIP_WITHOUT_AMX();
    uint32_t seed = 300;
    for (int perm : {1, 2}) {
        run({31, 64, 96, 2, false, kSt, 0, 0, perm}, seed += 10);
        run({129, 576, 960, 3, true, kSt, 0, 0, perm}, seed += 10);
        run({40, 32, 32, 1, true, kAcc, 16, 3, perm}, seed += 10);
    }
}

TEST(GemmAmx, ResultsDoNotDependOnThreadCount) {
    SKIP_WITHOUT_AMX();
    // 700 and 1300 rows at n_in = 576 split by rows on 2 and 3 threads (blocks of up to 512
    // rows, their count rounded up to a multiple of the threads: 22 micro-tiles in 3 blocks
    // of 7, 7 and 8); 1000 rows at n_in = 1536 in blocks of up to 192 rows, panel by panel.
    for (Case c : {Case{300, 576, 320}, Case{129, 64, 96, 1, true, kAcc}, Case{1, 576, 960},
                   Case{700, 576, 96}, Case{1300, 576, 64, 1, true, kAcc},
                   Case{1000, 1536, 64, 1, false, kAcc}}) {
        std::vector<float> y1, yt;
        run(c, 400, &y1);
        for (int t : {2, 3}) {
            c.threads = t;
            run(c, 400, &yt);
            EXPECT_EQ(yt, y1) << "threads=" << t << " m=" << c.m;
        }
    }
}

// kAccumulate (the residual adds of Wo and down): a row's result is the same whichever call
// computes it (a prompt split into steps by a server's cache), full micro-tiles and short ones
// alike: 70 rows at once against pieces of 1, 5 and 37 rows, one k block (n_in 576) and three
// (1536), with and without a bias, on the row-block and the micro-tile walks.
TEST(GemmAmx, AccumulatedRowsAreTheirOwn) {
    SKIP_WITHOUT_AMX();
    for (const int64_t n_in : {576, 1536}) {
        for (const bool with_bias : {false, true}) {
            const Problem pr(70, n_in, 64, 0, 800);
            const auto bias = random_vec(64, 801);
            const auto y0 = random_vec(70 * 64, 802);
            const auto call = [&](int64_t r0, int64_t rows, std::vector<float>& y) {
                AmxGemmArgs a = pr.args();
                a.x = pr.x.data() + r0 * pr.ldx, a.m = rows;
                a.bias = with_bias ? bias.data() : nullptr, a.out = kAcc;
                a.y = y.data() + r0 * 64, a.ldy = 64;
                amx_gemm(a, 2);
            };
            std::vector<float> whole = y0;
            call(0, 70, whole);
            for (const int64_t step : {1, 5, 37}) {
                std::vector<float> parts = y0;
                for (int64_t r = 0; r < 70; r += step)
                    call(r, std::min<int64_t>(step, 70 - r), parts);
                EXPECT_EQ(parts, whole)
                    << "n_in " << n_in << " bias " << with_bias << " pieces of " << step;
            }
        }
    }
}

TEST(GemmAmx, SwiGluMatchesSiluGateTimesUp) {
    SKIP_WITHOUT_AMX();
    uint32_t seed = 500;
    int n = 0;
    for (int64_t m : {1, 5, 16, 31, 32, 33, 127, 128, 129, 300}) {
        run({m, 64, 96, 1 + n % 3, n % 2 == 0, kSwi}, seed += 10);
        ++n;
    }
    for (int t : {1, 2, 3}) {
        run({33, 576, 960, t, true, kSwi, 8, 16}, seed += 10);
        run({129, 32, 32, t, false, kSwi, 32, 1}, seed += 10);
        run({300, 576, 96, t, true, kSwi, 0, 7}, seed += 10);
    }
}

TEST(GemmAmx, ManyKBlocksWithShortLastMicroTile) {
    SKIP_WITHOUT_AMX();
    // n_in = 1536: 48 chunks of 32, three k blocks (18 + 18 + 12); m = 257 leaves one row
    // in the last micro-tile, whose partial sums live in the scratch buffer.
    uint32_t seed = 600;
    for (int t : {1, 2, 3}) {
        for (bool bias : {false, true}) {
            run({257, 1536, 64, t, bias, kSt, 0, 4}, seed += 10);
            run({257, 1536, 64, t, bias, kAcc, 8, 0}, seed += 10);
            run({257, 1536, 64, t, bias, kSwi, 0, 3}, seed += 10);
        }
    }
}

TEST(GemmAmx, ZeroRowsIsANoOp) {
    SKIP_WITHOUT_AMX();
    const Problem pr(1, 64, 96, 0, 700);
    std::vector<float> y(96, 3.5f), bias(96, 1.0f);
    std::vector<uint16_t> y16(48, 0xbeef);
    for (AmxGemmOut out : {AmxGemmOut::kStore, AmxGemmOut::kAccumulate, AmxGemmOut::kGlu}) {
        AmxGemmArgs a = pr.args();
        a.m = 0, a.bias = bias.data(), a.out = out;
        a.y = y.data(), a.ldy = 96, a.y16 = y16.data(), a.ldy16 = 48;
        amx_gemm(a, 2);
        EXPECT_EQ(y, std::vector<float>(96, 3.5f));
        EXPECT_EQ(y16, std::vector<uint16_t>(48, 0xbeef));
    }
}

}  // namespace
}  // namespace lazyllm::kernels::detail
