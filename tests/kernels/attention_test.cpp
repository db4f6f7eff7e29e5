// Attention: the fast fp32 paths (AVX-512 tiles, keys-in-lanes decode, key-split) against the
// two-pass reference on full causal prefixes, sparse key subsets (pruned steps),
// decode, GQA ratios 1/3/4, head_dim 64/80/128, for K/V in fp32 and f16, as dense rows or by
// row index into a bigger cache; the reference against closed forms; the LazyLLM head-mean
// scores; the KV cache write (f16 rounding identical on every path). The bf16 tiles:
// attention_bf16_test.cpp.
#include "kernels/attention.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/attention_test_util.h"
#include "kernels/cpu.h"
#include "kernels/fp_env.h"
#include "kernels/gemm_convert.h"
#include "kernels/quant_blocks.h"
#include "kernels/workspace.h"

namespace lazyllm::kernels {
namespace {

using namespace attention_testing;

TEST(AttentionRef, SingleVisibleKeyAndUniformWeights) {
    // Query at position 0 sees only key 0: output = v_0.
    Problem p = make_problem({0, 2}, {0, 1, 2}, 2, 1, 4, 1);
    std::fill(p.q.begin() + p.args.q_stride, p.q.end(), 0.0f);  // row 1: q = 0 -> uniform
    ref::attention(p.args);
    for (int h = 0; h < 2; ++h) {
        for (int c = 0; c < 4; ++c) {
            EXPECT_FLOAT_EQ(p.out[h * 4 + c], p.v[c]);
            const float mean =
                (p.v[c] + p.v[p.args.kv_stride + c] + p.v[2 * p.args.kv_stride + c]) / 3;
            EXPECT_NEAR(p.out[p.args.out_stride + h * 4 + c], mean, 1e-6f);
        }
    }
}

TEST(AttentionRef, NoVisibleKeyGivesZeros) {
    Problem p = make_problem({3}, {5, 9}, 3, 3, 8, 2);
    ref::attention(p.args);
    for (int c = 0; c < 24; ++c) EXPECT_EQ(p.out[c], 0.0f);
}

// The reference reads f16 and indexed rows as exactly the fp32 values of dense rows.
TEST(AttentionRef, F16AndIndexedRowsReadExactly) {
    for (const Layout& l : kLayouts) {
        Problem p =
            make_problem(random_subset(500, 7, 3), random_subset(500, 120, 4), 6, 2, 16, 5, l);
        Problem d = dense_f32(p);
        ref::attention(p.args);
        ref::attention(d.args);
        EXPECT_EQ(p.out, d.out) << layout_name(l);
    }
}

TEST(Attention, Avx512FullPrefixPrefill) {
    if (!cpu_has(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
    for (const Layout& l : kLayouts) {
        for (const Shape& s : kShapes) {
            for (int32_t n : {1, 17, 150}) {
                check_against_ref(
                    make_problem(iota_pos(n), iota_pos(n), s.n_head, s.n_head_kv, s.head_dim, n, l),
                    Isa::kAvx512, {2}, kFp32Tol, kFp32Tol,
                    "prefill n=" + std::to_string(n) + " " + shape_name(s));
            }
        }
    }
}

TEST(Attention, Avx512SparseKeysArbitraryQueries) {
    if (!cpu_has(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
    check_sparse_keys(Isa::kAvx512, {2});
}

TEST(Attention, Avx512Decode) {
    if (!cpu_has(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
    check_decode(Isa::kAvx512, {1, 2});
}

TEST(Attention, Avx512DecodeSplitKeys) {
    if (!cpu_has(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
    check_decode_split_keys(Isa::kAvx512, {3, 4});
}

TEST(Attention, Avx512KeyChunksMatchReference) {
    if (!cpu_has(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
    check_key_chunks(Isa::kAvx512, {1, 2});
}

TEST(Attention, Avx512SlidingWindowsMatchReference) {
    if (!cpu_has(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
    check_windows(Isa::kAvx512, {1, 2});
}

// The window's definition: a query sees the keys less than `window` positions before it.
TEST(AttentionRef, WindowEqualsTheKeysInsideIt) {
    Problem w = make_problem({10, 4}, iota_pos(11), 2, 1, 8, 42);
    w.args.window = 3;
    ref::attention(w.args);
    for (int row = 0; row < 2; ++row) {
        const int32_t qp = w.q_pos[row];
        Problem inside = make_problem({qp}, {qp - 2, qp - 1, qp}, 2, 1, 8, 42);
        inside.q.assign(w.q.begin() + row * w.args.q_stride,
                        w.q.begin() + (row + 1) * w.args.q_stride);
        for (int j = 0; j < 3; ++j) {
            const int64_t src = (qp - 2 + j) * w.args.kv_stride;
            std::copy_n(w.k.begin() + src, w.args.kv_stride, inside.k.begin() + j * w.args.kv_stride);
            std::copy_n(w.v.begin() + src, w.args.kv_stride, inside.v.begin() + j * w.args.kv_stride);
        }
        rebind(inside);
        ref::attention(inside.args);
        for (int c = 0; c < 16; ++c) {
            EXPECT_FLOAT_EQ(w.out[row * w.args.out_stride + c], inside.out[c]) << "row " << row;
        }
    }
}

TEST(Attention, Avx512IndexedF16EqualsDenseF32) {
    if (!cpu_has(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
    check_indexed_f16_equals_dense_f32(Isa::kAvx512);
}

// out16 (the bf16 path's output) holds exactly the bf16 rounding of what the same call writes
// to out, on every path: reference, AVX-512 tiles and decode, the bf16 tiles (AVX-512-BF16,
// AMX), key split and key chunks; the row padding is left alone.
TEST(Attention, Bf16OutputIsTheRoundedFp32Output) {
    std::vector<Problem> problems = path_problems(31);
    problems.push_back(make_problem(iota_pos(40), iota_pos(40), 4, 2, 80, 36));  // no fast kernel
    for (bool bf16 : {false, true}) {
        for (Problem& p : problems) p.args.bf16 = bf16;
        for (Isa isa : {Isa::kRef, Isa::kAvx512, Isa::kAmx}) {
            if (cpu_has(isa)) check_bf16_output_is_rounded_fp32(problems, isa, 4);
        }
    }
}

TEST(Attention, Avx512DecodeLargeScoresRescale) {
    if (!cpu_has(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
    // Growing scores raise the keys-in-lanes kernel's reference max again and again.
    for (const Layout& l : kLayouts) {
        Problem p = make_problem({1999}, iota_pos(2000), 6, 2, 64, 13, l);
        for (size_t i = 0; i < p.k.size(); ++i) {
            const int64_t j = static_cast<int64_t>(i) / p.args.kv_stride;
            p.k[i] *= 0.02f * static_cast<float>(j % 301);
        }
        check_against_ref(p, Isa::kAvx512, {1}, 1e-4f, kFp32Tol, "decode rescale");
    }
}

TEST(FpEnv, ScopedFlushDenormalsFlushesAndRestores) {
    const unsigned before = _mm_getcsr();
    volatile float tiny = 1e-40f;  // a denormal
    volatile float one = 1.0f;
    {
        const ScopedFlushDenormals ftz;
        EXPECT_EQ(_mm_getcsr() & 0x8040u, 0x8040u);
        EXPECT_EQ(tiny * one, 0.0f);  // DAZ: the denormal input reads as zero
    }
    EXPECT_EQ(_mm_getcsr(), before);
    EXPECT_GT(tiny * one, 0.0f);
}

// The fast kernels flush denormals (masked scores underflow in exp2) on the calling thread
// and on each worker, and must leave both as they found them.
TEST(Attention, FastPathsRestoreTheFloatingPointEnvironment) {
    std::vector<Problem> problems = path_problems(21);
    for (Problem& p : path_problems(22)) {
        p.args.bf16 = true;  // the bf16 tiles where the CPU has them
        problems.push_back(std::move(p));
    }
    for (Isa isa : {Isa::kAvx512, Isa::kAmx}) {
        if (!cpu_has(isa)) continue;
        for (Problem& p : problems) {
            rebind(p);
            const unsigned before = _mm_getcsr();
            attention({isa, 4}, p.args);
            EXPECT_EQ(_mm_getcsr(), before) << "calling thread, isa " << static_cast<int>(isa);
            std::vector<unsigned> worker(4, 0xFFFFFFFFu);
#pragma omp parallel num_threads(4)
            worker[omp_get_thread_num()] = _mm_getcsr();
            for (unsigned csr : worker) {
                EXPECT_EQ(csr & 0x8040u, before & 0x8040u)
                    << "worker, isa " << static_cast<int>(isa);
            }
        }
    }
}

// kRef runs the reference itself (bit for bit); kAvx2 has its own kernels
// (attention_avx2_test.cpp).
TEST(Attention, RefIsaUsesTheReference) {
    for (const Layout& l : kLayouts) {
        Problem p = make_problem(iota_pos(40), iota_pos(40), 9, 3, 64, 13, l);
        check_against_ref(p, Isa::kRef, {2}, 0.0f, 0.0f, "ref isa");
    }
}

TEST(AttentionScores, HeadMeanMatchesRefAndSumsToOne) {
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
        if (!cpu_has(isa)) continue;
        for (const Layout& l : kLayouts) {
            for (const Shape& s : kShapes) {
                std::vector<int32_t> kv = random_subset(2000, 1500, 14);
                Problem p = make_problem({kv[1000]}, kv, s.n_head, s.n_head_kv, s.head_dim, 15, l);
                std::vector<float> want(kv.size()), got(kv.size(), -1.0f), dense(kv.size());
                ref::attention_scores_head_mean(p.args, p.q.data(), kv[1000], want.data());
                attention_scores_head_mean({isa, 2}, p.args, p.q.data(), kv[1000], got.data());
                // Same keys as dense fp32 rows: the same scores.
                Problem d = dense_f32(p);
                ref::attention_scores_head_mean(d.args, d.q.data(), kv[1000], dense.data());
                ASSERT_EQ(want, dense) << layout_name(l);
                double sum = 0.0;
                for (size_t j = 0; j < kv.size(); ++j) {
                    ASSERT_NEAR(got[j], want[j], 1e-5f * want[j] + 1e-9f) << j;
                    if (j > 1000) {
                        ASSERT_EQ(got[j], 0.0f) << "invisible key " << j;
                    }
                    sum += got[j];
                }
                EXPECT_NEAR(sum, 1.0, 1e-5) << layout_name(l);
            }
        }
    }
}

// Fewer visible keys than a vector's lanes, and head dims the vectors do not divide (the
// reference then: the same bits).
TEST(AttentionScores, FewKeysAndOddHeadDims) {
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
        if (!cpu_has(isa)) continue;
        for (int head_dim : {24, 72, 64}) {
            for (int n_vis : {1, 3, 9, 17}) {
                Problem p = make_problem({n_vis - 1}, iota_pos(n_vis + 5), 4, 2, head_dim, 18);
                std::vector<float> want(n_vis + 5), got(n_vis + 5, -1.0f);
                ref::attention_scores_head_mean(p.args, p.q.data(), n_vis - 1, want.data());
                attention_scores_head_mean({isa, 2}, p.args, p.q.data(), n_vis - 1, got.data());
                const bool vectorized = head_dim % (isa == Isa::kAvx512 ? 16 : 8) == 0;
                for (int j = 0; j < n_vis + 5; ++j) {
                    if (!vectorized || j >= n_vis) {
                        ASSERT_EQ(got[j], want[j]) << head_dim << " " << n_vis << " " << j;
                    } else {
                        ASSERT_NEAR(got[j], want[j], 1e-5f * want[j] + 1e-9f) << j;
                    }
                }
            }
        }
    }
}

// Keys in chunks over the threads, query heads in passes of four over a KV head's keys: every
// split gives the same bits, with the caller's Workspace or without one.
TEST(AttentionScores, SameBitsForEveryThreadCountAndWorkspace) {
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
        if (!cpu_has(isa)) continue;
        for (const Shape& s : {Shape{12, 2, 64}, Shape{9, 3, 64}, Shape{8, 1, 128}}) {
            std::vector<int32_t> kv = random_subset(4000, 3100, 19);
            Problem p = make_problem({kv[3000]}, kv, s.n_head, s.n_head_kv, s.head_dim, 20);
            std::vector<float> want(kv.size()), one(kv.size(), -1.0f);
            ref::attention_scores_head_mean(p.args, p.q.data(), kv[3000], want.data());
            attention_scores_head_mean({isa, 1}, p.args, p.q.data(), kv[3000], one.data());
            for (size_t j = 0; j < kv.size(); ++j) {
                ASSERT_NEAR(one[j], want[j], 1e-5f * want[j] + 1e-9f) << shape_name(s) << " " << j;
            }
            Workspace ws;
            for (int threads : {2, 3}) {
                for (Workspace* w : {static_cast<Workspace*>(nullptr), &ws, &ws}) {
                    KernelContext ctx{isa, threads};
                    ctx.ws = w;
                    std::vector<float> got(kv.size(), -1.0f);
                    attention_scores_head_mean(ctx, p.args, p.q.data(), kv[3000], got.data());
                    ASSERT_EQ(got, one) << shape_name(s) << " threads " << threads;
                }
            }
        }
    }
}

// AttentionArgs::scores: a decode call takes the score's logits from its own pass over K
// (keys in lanes; one chunk, or chunks over the threads), any other call computes the score
// first; either way the score and the output have the bits of the separate calls.
TEST(AttentionScores, ScoresFromTheAttentionCallHaveTheSeparateBits) {
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512, Isa::kAmx}) {
        if (!cpu_has(isa)) continue;
        for (const Layout& l : heavy_check_layouts()) {
            for (const Shape& s : kShapes) {
                for (int32_t n_kv : {7, 300, 1500}) {
                    if (isa == Isa::kRef && n_kv > 300) continue;  // the scalar reference: slow
                    const std::vector<int32_t> kv = random_subset(2 * n_kv, n_kv, 40 + n_kv);
                    // The last key (decode), a middle one (later keys hidden), and two to
                    // four rows (a step's own and revived ones; on the keys-in-lanes kernel the
                    // score row's lanes write the logits, sharing tiles with other rows).
                    const std::vector<std::vector<int32_t>> queries = {
                        {kv.back()},
                        {kv[n_kv / 2]},
                        {kv[n_kv / 4], kv.back()},
                        {kv[n_kv / 3], kv[n_kv / 2], kv.back()},
                        {kv[n_kv / 5], kv[n_kv / 3], kv[n_kv / 2], kv.back()}};
                    for (const std::vector<int32_t>& q : queries) {
                        Problem p = make_problem(q, kv, s.n_head, s.n_head_kv, s.head_dim, 41, l);
                        p.args.bf16 = isa == Isa::kAmx;
                        for (int threads : {1, 2}) {
                            Workspace ws;
                            const KernelContext ctx{isa, threads, &ws};
                            const std::string what = layout_name(l) + " " + shape_name(s) + " " +
                                                     std::to_string(n_kv) + " rows " +
                                                     std::to_string(q.size()) + " threads " +
                                                     std::to_string(threads);
                            std::vector<float> want(n_kv), got(n_kv, -1.0f);
                            const std::vector<float> out_before = p.out;
                            attention(ctx, p.args);
                            const std::vector<float> want_out = p.out;
                            attention_scores_head_mean(
                                ctx, p.args, p.q.data() + (q.size() - 1) * p.args.q_stride,
                                q.back(), want.data());
                            p.out = out_before;
                            p.args.scores = got.data();
                            attention(ctx, p.args);
                            p.args.scores = nullptr;
                            ASSERT_EQ(got, want) << what;
                            ASSERT_EQ(p.out, want_out) << what;
                        }
                    }
                }
            }
        }
    }
}

TEST(AttentionScores, MatchesAttentionProbabilities) {
    // With V = one-hot rows, attention's output row is the probability row: the head mean of
    // those equals the scores.
    const int n_kv = 24, d = 32;
    Problem p = make_problem({30}, random_subset(40, n_kv, 16), 2, 1, d, 17);
    for (int64_t j = 0; j < n_kv; ++j) {
        for (int c = 0; c < d; ++c) p.v[j * p.args.kv_stride + c] = c == j ? 1.0f : 0.0f;
    }
    ref::attention(p.args);
    std::vector<float> scores(n_kv);
    ref::attention_scores_head_mean(p.args, p.q.data(), 30, scores.data());
    for (int j = 0; j < n_kv; ++j) {
        const float mean = 0.5f * (p.out[j] + p.out[d + j]);
        EXPECT_NEAR(scores[j], mean, 1e-6f);
    }
}

// The cache write: rows land at their row index, other rows untouched; f16 is the
// round-to-nearest-even half of each value, identical on the reference and AVX-512 paths,
// including ties, subnormals, overflow to inf, infinities and NaN.
TEST(KvStore, RowsAndF16RoundingMatchOnEveryPath) {
    const int64_t width = 37, src_stride = 41, dst_stride = 40, n_rows = 9;
    std::vector<float> src(n_rows * src_stride);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
    for (float& e : src) e = dist(rng);
    const float specials[] = {65504.0f,
                              65520.0f,
                              1e6f,
                              -1e6f,
                              0x1p-24f,
                              0x1.8p-24f,
                              0x1p-26f,
                              -0.0f,
                              1.0f + 0x1p-11f,
                              1.0f + 0x3p-11f,
                              std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN(),
                              6e-5f,
                              3e-8f};
    for (size_t i = 0; i < std::size(specials); ++i) src[i * 5] = specials[i];  // rows 0-1
    const std::vector<int32_t> rows = {12, 0, 3, 7, 1, 15, 9, 4, 5};
    for (KvType type : {KvType::kF32, KvType::kF16}) {
        const size_t elem = kv_type_size(type);
        const size_t bytes = 16 * dst_stride * elem;
        std::vector<uint8_t> want(bytes, 0xab);  // untouched outside the written elements
        for (int64_t i = 0; i < n_rows; ++i) {
            for (int64_t c = 0; c < width; ++c) {
                const float x = src[i * src_stride + c];
                uint8_t* at = want.data() + (rows[i] * dst_stride + c) * elem;
                if (type == KvType::kF32) {
                    std::memcpy(at, &x, sizeof(x));
                } else {
                    const uint16_t h = quant::fp32_to_fp16_scalar(x);
                    std::memcpy(at, &h, sizeof(h));
                }
            }
        }
        std::vector<uint8_t> got(bytes, 0xab);
        ref::kv_store_rows(type, src.data(), src_stride, n_rows, width, rows.data(), got.data(),
                           dst_stride);
        EXPECT_EQ(got, want) << "ref, type " << static_cast<int>(type);
        for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
            if (!cpu_has(isa)) continue;
            std::fill(got.begin(), got.end(), 0xab);
            kv_store_rows({isa, 1}, type, src.data(), src_stride, n_rows, width, rows.data(),
                          got.data(), dst_stride);
            EXPECT_EQ(got, want) << "isa " << isa_name(isa) << " type " << static_cast<int>(type);
        }
    }
}

}  // namespace
}  // namespace lazyllm::kernels
