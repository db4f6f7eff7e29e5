// Row-wise operators: every ISA variant the CPU supports against the scalar reference, on
// ragged sizes, plus checks of the reference itself against closed forms.
#include "kernels/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu.h"
#include "kernels/quant_blocks.h"
#include "support/random.h"

namespace lazyllm::kernels {
namespace {

std::vector<Isa> supported_isas() {
    const CpuFeatures f = detect_cpu_features();
    std::vector<Isa> out;
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512, Isa::kAmx}) {
        if (isa_supported(isa, f)) out.push_back(isa);
    }
    return out;
}

using test::random_vec;

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float rel,
                  float abs, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], abs + rel * std::fabs(want[i])) << what << " at " << i;
    }
}

TEST(OpsRef, RmsNormClosedForm) {
    const std::vector<float> x = {3.0f, 4.0f};
    const std::vector<float> w = {1.0f, 2.0f};
    std::vector<float> y(2);
    ref::rms_norm(x.data(), w.data(), y.data(), 1, 2, 0.0f);
    const float rms = std::sqrt(12.5f);
    EXPECT_FLOAT_EQ(y[0], 3.0f / rms);
    EXPECT_FLOAT_EQ(y[1], 2.0f * 4.0f / rms);
}

TEST(OpsRef, SwigluClosedForm) {
    const std::vector<float> gu = {0.0f, 1.0f, -30.0f, 5.0f, 2.0f, 3.0f};  // gate | up
    std::vector<float> out(3);
    ref::swiglu(gu.data(), out.data(), 1, 3);
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_NEAR(out[1], 1.0f / (1.0f + std::exp(-1.0f)) * 2.0f, 1e-6f);
    EXPECT_NEAR(out[2], 0.0f, 1e-10f);
}

TEST(Ops, RmsNormMatchesRef) {
    for (Isa isa : supported_isas()) {
        for (int64_t n : {1, 7, 16, 31, 33, 576, 1000}) {
            for (int threads : {1, 2}) {
                const int64_t rows = n < 100 ? 37 : 70;  // enough rows to hit the threaded split
                const auto x = random_vec(rows * n, 1 + n, -3.0f, 3.0f);
                const auto w = random_vec(n, 2 + n, 0.5f, 1.5f);
                std::vector<float> want(rows * n), got(rows * n);
                ref::rms_norm(x.data(), w.data(), want.data(), rows, n, 1e-5f);
                rms_norm({isa, threads}, x.data(), w.data(), got.data(), rows, n, 1e-5f);
                expect_close(got, want, 1e-5f, 1e-6f,
                             std::string(isa_name(isa)) + " n=" + std::to_string(n));
                // In place (x and y alias).
                std::vector<float> inplace = x;
                rms_norm({isa, threads}, inplace.data(), w.data(), inplace.data(), rows, n, 1e-5f);
                expect_close(inplace, want, 1e-5f, 1e-6f, "in place");
            }
        }
    }
}

TEST(OpsRef, GeluTanhClosedForm) {
    EXPECT_EQ(ref::gelu_tanh(0.0f), 0.0f);
    // torch.nn.functional.gelu(torch.tensor([1.0, -2.0, 3.0]), approximate="tanh")
    EXPECT_NEAR(ref::gelu_tanh(1.0f), 0.8411920f, 1e-6f);
    EXPECT_NEAR(ref::gelu_tanh(-2.0f), -0.0454023f, 1e-6f);
    EXPECT_NEAR(ref::gelu_tanh(3.0f), 2.9963627f, 1e-6f);
    const std::vector<float> gu = {1.0f, 2.0f};  // gate | up
    std::vector<float> out(1);
    ref::glu(GluAct::kGeluTanh, gu.data(), out.data(), 1, 1);
    EXPECT_FLOAT_EQ(out[0], 2.0f * ref::gelu_tanh(1.0f));
}

TEST(Ops, GluMatchesRef) {
    for (GluAct act : {GluAct::kSilu, GluAct::kGeluTanh}) {
        for (Isa isa : supported_isas()) {
            for (int64_t n_ff : {1, 15, 16, 33, 1536, 2048}) {
                const int64_t rows = 13;
                auto gu = random_vec(rows * 2 * n_ff, 3 + n_ff, -12.0f, 12.0f);
                gu[0] = -100.0f;  // exp overflow side
                gu[rows * 2 * n_ff - 1] = 100.0f;
                std::vector<float> want(rows * n_ff), got(rows * n_ff);
                ref::glu(act, gu.data(), want.data(), rows, n_ff);
                glu({isa, 2}, act, gu.data(), got.data(), rows, n_ff);
                // GELU's extra polynomial costs one more rounding or two.
                expect_close(got, want, act == GluAct::kSilu ? 1e-5f : 2e-5f, 1e-6f,
                             std::string(isa_name(isa)) + " n_ff=" + std::to_string(n_ff));
            }
        }
    }
}

// QK-norm: each head of each (strided) row normalized on its own with the shared weight; the
// row padding is left alone.
TEST(Ops, RmsNormHeadsMatchesRowWiseRmsNorm) {
    for (Isa isa : supported_isas()) {
        const int64_t rows = 29, stride = 4 * 64 + 2 * 64 + 5;
        for (int n_heads : {1, 4}) {
            const auto x = random_vec(rows * stride, 31 + n_heads, -3.0f, 3.0f);
            const auto w = random_vec(64, 32, 0.5f, 1.5f);
            std::vector<float> got = x, want = x;
            for (int64_t r = 0; r < rows; ++r) {
                ref::rms_norm(want.data() + r * stride, w.data(), want.data() + r * stride,
                              n_heads, 64, 1e-6f);
            }
            rms_norm_heads({isa, 2}, got.data(), stride, rows, n_heads, 64, w.data(), 1e-6f);
            expect_close(got, want, 1e-5f, 1e-6f, std::string(isa_name(isa)));
            for (int64_t r = 0; r < rows; ++r) {
                for (int64_t c = n_heads * 64; c < stride; ++c) {
                    ASSERT_EQ(got[r * stride + c], x[r * stride + c]) << "padding written";
                }
            }
        }
    }
}

// bf16 outputs: the fp32 math may differ from the reference in the last bits (sum order), so
// the result is within half a bf16 step (2^-8 relative, 8 significant bits) of a value within
// a few fp32 ulps of the reference; 2^-7 relative covers both. abs_tol: where the reference
// itself is only absolutely accurate (below).
void expect_bf16_close(const std::vector<uint16_t>& got, const std::vector<float>& want,
                       const std::string& what, float abs_tol = 1e-30f) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(quant::bf16_to_fp32_scalar(got[i]), want[i],
                    std::ldexp(std::fabs(want[i]), -7) + abs_tol)
            << what << " at " << i;
    }
}

TEST(Ops, Bf16OutputsMatchRef) {
    for (Isa isa : supported_isas()) {
        const int64_t rows = 41, n = 576, n_ff = 100;
        const auto x = random_vec(rows * n, 21, -3.0f, 3.0f);
        const auto w = random_vec(n, 22, 0.5f, 1.5f);
        std::vector<float> want(rows * n);
        ref::rms_norm(x.data(), w.data(), want.data(), rows, n, 1e-6f);
        std::vector<uint16_t> got(rows * n), ref_bf16(rows * n);
        rms_norm_bf16({isa, 2}, x.data(), w.data(), got.data(), rows, n, 1e-6f);
        expect_bf16_close(got, want, std::string("rms_norm_bf16 ") + std::string(isa_name(isa)));
        // The reference rounds its own fp32 result to nearest even: within half a step
        // (relative 2^-8).
        ref::rms_norm_bf16(x.data(), w.data(), ref_bf16.data(), rows, n, 1e-6f);
        for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_LE(std::fabs(quant::bf16_to_fp32_scalar(ref_bf16[i]) - want[i]),
                      std::ldexp(std::fabs(want[i]), -8));
        }

        const auto gu = random_vec(rows * 2 * n_ff, 23, -8.0f, 8.0f);
        std::vector<float> want_s(rows * n_ff);
        ref::swiglu(gu.data(), want_s.data(), rows, n_ff);
        std::vector<uint16_t> got_s(rows * n_ff);
        glu_bf16({isa, 2}, GluAct::kSilu, gu.data(), got_s.data(), rows, n_ff);
        expect_bf16_close(got_s, want_s, std::string("swiglu_bf16 ") + std::string(isa_name(isa)));
        // The reference computes GELU as transformers does, 0.5 x (1 + tanh(u)): for x << 0,
        // 1 + tanh(u) cancels to an absolute error of 2^-24, times 0.5 |x u| <= 32 here
        // (1.9e-6; at x = -5 it gives -2.98e-7 for -2.29e-7). The kernels' x / (1 + e^-2u) is
        // accurate there: an absolute tolerance of 2e-6.
        ref::glu(GluAct::kGeluTanh, gu.data(), want_s.data(), rows, n_ff);
        glu_bf16({isa, 2}, GluAct::kGeluTanh, gu.data(), got_s.data(), rows, n_ff);
        expect_bf16_close(got_s, want_s, std::string("geglu_bf16 ") + std::string(isa_name(isa)),
                          2e-6f);
    }
}

TEST(Ops, AddInplaceExact) {
    for (Isa isa : supported_isas()) {
        for (int64_t n : {0, 1, 17, 100003}) {
            auto x = random_vec(n, 5, -1.0f, 1.0f);
            const auto y = random_vec(n, 6, -1.0f, 1.0f);
            std::vector<float> want = x;
            for (int64_t i = 0; i < n; ++i) want[i] += y[i];
            add_inplace({isa, 2}, x.data(), y.data(), n);
            ASSERT_EQ(x, want) << isa_name(isa) << " n=" << n;
        }
    }
}

TEST(RopeTable, AnglesInDoubleAndFreqFactors) {
    const int n_rot = 64;
    const float theta = 10000.0f;
    std::vector<float> factors(n_rot / 2, 1.0f);
    factors[3] = 8.0f;
    const RopeTable plain(8192, n_rot, theta);
    const RopeTable scaled(8192, n_rot, theta, factors);
    plain.ensure(8192);
    scaled.ensure(8192);
    for (int32_t pos : {0, 1, 100, 8191}) {
        for (int i : {0, 3, 31}) {
            const double freq = std::pow(10000.0, -2.0 * i / n_rot);
            EXPECT_FLOAT_EQ(plain.cos_row(pos)[i], static_cast<float>(std::cos(pos * freq)));
            EXPECT_FLOAT_EQ(plain.sin_row(pos)[i], static_cast<float>(std::sin(pos * freq)));
            const double f = i == 3 ? freq / 8.0 : freq;
            EXPECT_FLOAT_EQ(scaled.sin_row(pos)[i], static_cast<float>(std::sin(pos * f)));
        }
    }
}

// Rows made on first use, by rope() calls from several threads at scattered positions, equal
// the rows of a table made whole up front, and reading them is the same rotation.
TEST(RopeTable, RowsMadeOnFirstUseEqualEagerOnes) {
    const int64_t n_ctx = 5 * RopeTable::kFillRows + 17;
    const int d = 64;
    const RopeTable eager(n_ctx, d, 500000.0f), lazy(n_ctx, d, 500000.0f);
    eager.ensure(n_ctx);
    std::vector<int32_t> pos = {static_cast<int32_t>(n_ctx - 1), 3, 2 * RopeTable::kFillRows, 0,
                                static_cast<int32_t>(RopeTable::kFillRows - 1)};
    const auto x = test::random_vec(static_cast<int64_t>(pos.size()) * d, 5);
    std::vector<float> want = x;
    rope({Isa::kRef, 1}, eager, RopeMode::kNeox, want.data(), pos.data(),
         static_cast<int64_t>(pos.size()), d, 1, d);
    std::vector<std::vector<float>> got(8, x);
#pragma omp parallel for num_threads(4)
    for (int t = 0; t < 8; ++t) {
        rope({Isa::kRef, 1}, lazy, RopeMode::kNeox, got[t].data(), pos.data(),
             static_cast<int64_t>(pos.size()), d, 1, d);
    }
    for (const auto& g : got) EXPECT_EQ(g, want);
    for (int32_t p : pos) {
        EXPECT_EQ(std::vector<float>(lazy.cos_row(p), lazy.cos_row(p) + d / 2),
                  std::vector<float>(eager.cos_row(p), eager.cos_row(p) + d / 2));
    }
}

// Layout for the RoPE tests: rows of n_heads heads plus padding, so row_stride > n_heads * d.
struct RopeCase {
    int n_heads, head_dim, n_rot;
};

TEST(Ops, RopeMatchesRef) {
    const RopeTable tables[] = {RopeTable(4096, 64, 10000.0f), RopeTable(4096, 32, 500000.0f),
                                RopeTable(4096, 6, 10000.0f), RopeTable(4096, 128, 10000.0f)};
    const RopeCase cases[] = {{9, 64, 64}, {3, 64, 32}, {2, 10, 6}, {4, 128, 128}};
    for (Isa isa : supported_isas()) {
        for (int c = 0; c < 4; ++c) {
            const RopeCase& rc = cases[c];
            for (RopeMode mode : {RopeMode::kNorm, RopeMode::kNeox}) {
                const int64_t rows = 50;
                const int64_t stride = static_cast<int64_t>(rc.n_heads) * rc.head_dim + 5;
                const auto x0 = random_vec(rows * stride, 7 + c, -2.0f, 2.0f);
                std::vector<int32_t> pos(rows);
                std::mt19937 rng(c);
                for (auto& p : pos) p = static_cast<int32_t>(rng() % 4096);
                std::vector<float> want = x0, got = x0;
                ref::rope(tables[c], mode, want.data(), pos.data(), rows, stride, rc.n_heads,
                          rc.head_dim);
                rope({isa, 2}, tables[c], mode, got.data(), pos.data(), rows, stride, rc.n_heads,
                     rc.head_dim);
                expect_close(got, want, 1e-5f, 1e-6f,
                             std::string(isa_name(isa)) + " case " + std::to_string(c));
                // Dims past n_rot and the row padding are untouched.
                for (int64_t r = 0; r < rows; ++r) {
                    for (int h = 0; h < rc.n_heads; ++h) {
                        for (int d = rc.n_rot; d < rc.head_dim; ++d) {
                            const int64_t i = r * stride + h * rc.head_dim + d;
                            ASSERT_EQ(got[i], x0[i]);
                        }
                    }
                    for (int64_t i = rc.n_heads * rc.head_dim; i < stride; ++i) {
                        ASSERT_EQ(got[r * stride + i], x0[r * stride + i]);
                    }
                }
            }
        }
    }
}

// kNorm on the converter's permuted layout equals kNeox (HF rotate_half) on the original one:
// llama.cpp's convert_hf_to_gguf.py permutes Q/K rows so that original dims (i, i + d/2)
// become adjacent (2i, 2i + 1).
TEST(OpsRef, RopeNormIsNeoxOnPermutedDims) {
    const int d = 64;
    const RopeTable table(100, d, 10000.0f);
    const auto orig = random_vec(d, 11, -1.0f, 1.0f);
    std::vector<float> perm(d);
    for (int i = 0; i < d / 2; ++i) {
        perm[2 * i] = orig[i];
        perm[2 * i + 1] = orig[i + d / 2];
    }
    std::vector<float> neox = orig;
    const int32_t pos = 37;
    ref::rope(table, RopeMode::kNeox, neox.data(), &pos, 1, d, 1, d);
    ref::rope(table, RopeMode::kNorm, perm.data(), &pos, 1, d, 1, d);
    for (int i = 0; i < d / 2; ++i) {
        EXPECT_FLOAT_EQ(perm[2 * i], neox[i]);
        EXPECT_FLOAT_EQ(perm[2 * i + 1], neox[i + d / 2]);
    }
    // Position 0 is the identity; rotations preserve each pair's norm.
    std::vector<float> same = orig;
    const int32_t zero = 0;
    ref::rope(table, RopeMode::kNorm, same.data(), &zero, 1, d, 1, d);
    EXPECT_EQ(same, orig);
    for (int i = 0; i < d / 2; ++i) {
        EXPECT_NEAR(std::hypot(neox[i], neox[i + d / 2]), std::hypot(orig[i], orig[i + d / 2]),
                    1e-6f);
    }
}

}  // namespace
}  // namespace lazyllm::kernels
