// Attention on the AVX2 + FMA path (attention_avx2.cpp: queries-in-lanes tiles as two 8-lane
// halves, keys-in-lanes decode, key split) against the reference: full causal prefixes, sparse
// key subsets with arbitrary query positions, decode with and without the key split, GQA
// groups 1/3/4, head_dim 32-256, K/V in fp32 and f16, dense or by row index, ragged tails,
// large scores that force rescaling, queries with no visible key, bf16 output, 1-4 threads,
// and the floating-point environment. Skips on CPUs without AVX2/FMA/F16C.
#include <gtest/gtest.h>
#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/attention_test_util.h"
#include "kernels/cpu.h"
#include "kernels/gemm_convert.h"

namespace lazyllm::kernels {
namespace {

using namespace attention_testing;

#define SKIP_WITHOUT_AVX2() \
    if (!cpu_has(Isa::kAvx2)) GTEST_SKIP() << "no AVX2/FMA/F16C"

TEST(AttentionAvx2, FullPrefixPrefill) {
    SKIP_WITHOUT_AVX2();
    for (const Layout& l : heavy_check_layouts()) {
        for (const Shape& s : kShapes) {
            // 1: decode-sized; 17, 150: ragged tiles (n_q * group not a multiple of 16) and
            // ragged key blocks (not a multiple of 8 or 16).
            for (int32_t n : {1, 17, 150}) {
                check_against_ref(
                    make_problem(iota_pos(n), iota_pos(n), s.n_head, s.n_head_kv, s.head_dim, n, l),
                    Isa::kAvx2, {1, 2}, kFp32Tol, kFp32Tol,
                    "prefill n=" + std::to_string(n) + " " + shape_name(s));
            }
        }
    }
}

TEST(AttentionAvx2, OtherHeadDims) {
    SKIP_WITHOUT_AVX2();
    for (const Layout& l : kLayouts) {
        for (int d : {32, 96, 256}) {
            check_against_ref(make_problem(iota_pos(45), iota_pos(45), 6, 2, d, 3, l), Isa::kAvx2,
                              {2}, kFp32Tol, kFp32Tol, "prefill d=" + std::to_string(d));
            std::vector<int32_t> kv = random_subset(2000, 700, 8);
            check_against_ref(make_problem({kv.back()}, kv, 6, 2, d, 4, l), Isa::kAvx2, {1, 2},
                              kFp32Tol, kFp32Tol, "decode d=" + std::to_string(d));
        }
    }
}

TEST(AttentionAvx2, SparseKeysArbitraryQueries) {
    SKIP_WITHOUT_AVX2();
    check_sparse_keys(Isa::kAvx2, {1, 2});
}

TEST(AttentionAvx2, Decode) {
    SKIP_WITHOUT_AVX2();
    check_decode(Isa::kAvx2, {1, 2});
}

TEST(AttentionAvx2, DecodeSplitKeys) {
    SKIP_WITHOUT_AVX2();
    check_decode_split_keys(Isa::kAvx2, {2, 3, 4});
}

// One problem per driver path (prefill tiles, decode, key-split prefill with merged partial
// states, long keys) on 1, 2 and 4 threads.
TEST(AttentionAvx2, SlidingWindowsMatchReference) {
    SKIP_WITHOUT_AVX2();
    check_windows(Isa::kAvx2, {1, 2});
}

TEST(AttentionAvx2, KeyChunksMatchReference) {
    SKIP_WITHOUT_AVX2();
    check_key_chunks(Isa::kAvx2, {1, 2});
}

TEST(AttentionAvx2, EveryDriverPath) {
    SKIP_WITHOUT_AVX2();
    std::vector<Problem> problems = path_problems(41);
    for (size_t k = 0; k < problems.size(); ++k) {
        check_against_ref(problems[k], Isa::kAvx2, {1, 2, 4}, kFp32Tol, kFp32Tol,
                          "path problem " + std::to_string(k));
    }
}

TEST(AttentionAvx2, IndexedF16EqualsDenseF32) {
    SKIP_WITHOUT_AVX2();
    check_indexed_f16_equals_dense_f32(Isa::kAvx2);
}

// Scores growing along the keys: the tile kernel's running max rises block after block and
// the keys-in-lanes kernel's lazy reference max is raised again and again. With the steeper
// growth the scores span far more than 2^128 (log2 domain), so a kernel that does not rescale
// overflows.
TEST(AttentionAvx2, LargeScoresRescale) {
    SKIP_WITHOUT_AVX2();
    for (const Layout& l : heavy_check_layouts()) {
        for (float growth : {0.02f, 0.3f}) {
            for (int n_q : {1, 2, 40}) {
                std::vector<int32_t> q(n_q);
                std::iota(q.begin(), q.end(), 2000 - n_q);
                Problem p = make_problem(q, iota_pos(2000), 6, 2, 64, 13, l);
                for (size_t i = 0; i < p.k.size(); ++i) {
                    const int64_t j = static_cast<int64_t>(i) / p.args.kv_stride;
                    p.k[i] *= growth * static_cast<float>(j % 301);
                }
                // Near one-hot rows of scores ~ 1e3: fp32 score rounding shows at 1e-4.
                check_against_ref(p, Isa::kAvx2, {1, 2}, growth < 0.1f ? 1e-4f : 1e-3f, kFp32Tol,
                                  "rescale n_q=" + std::to_string(n_q));
            }
        }
    }
}

// Queries before every key (tile and decode paths) get exact zeros, and so do the lanes of a
// tile whose other lanes see keys.
TEST(AttentionAvx2, NoVisibleKeyGivesZeros) {
    SKIP_WITHOUT_AVX2();
    for (const Layout& l : kLayouts) {
        for (int n_q : {1, 30}) {
            std::vector<int32_t> q(n_q);
            std::iota(q.begin(), q.end(), 0);  // rows before position 10 see nothing
            Problem p = make_problem(q, random_subset(400, 100, 7), 9, 3, 64, 8, l);
            for (int32_t& e : p.kv_pos) e += 10;  // every key at position >= 10
            rebind(p);
            attention({Isa::kAvx2, 2}, p.args);
            const int64_t width = static_cast<int64_t>(p.args.n_head) * p.args.head_dim;
            for (int64_t i = 0; i < std::min(n_q, 10); ++i) {
                for (int64_t c = 0; c < width; ++c) {
                    ASSERT_EQ(p.out[i * p.args.out_stride + c], 0.0f)
                        << layout_name(l) << " row " << i << " col " << c;
                }
            }
            check_against_ref(p, Isa::kAvx2, {1, 2}, kFp32Tol, kFp32Tol, "partly keyless");
        }
    }
}

// out16 holds exactly the bf16 rounding of what the same call writes to out.
TEST(AttentionAvx2, Bf16OutputIsTheRoundedFp32Output) {
    SKIP_WITHOUT_AVX2();
    std::vector<Problem> problems = path_problems(31);
    check_bf16_output_is_rounded_fp32(problems, Isa::kAvx2, 2);
}

// The kernels flush denormals on the calling thread and each worker, and restore them.
TEST(AttentionAvx2, RestoresTheFloatingPointEnvironment) {
    SKIP_WITHOUT_AVX2();
    std::vector<Problem> problems = path_problems(21);
    for (Problem& p : problems) {
        const unsigned before = _mm_getcsr();
        attention({Isa::kAvx2, 4}, p.args);
        EXPECT_EQ(_mm_getcsr(), before) << "calling thread";
        std::vector<unsigned> worker(4, 0xFFFFFFFFu);
#pragma omp parallel num_threads(4)
        worker[omp_get_thread_num()] = _mm_getcsr();
        for (unsigned csr : worker) EXPECT_EQ(csr & 0x8040u, before & 0x8040u) << "worker";
    }
}

#undef SKIP_WITHOUT_AVX2

}  // namespace
}  // namespace lazyllm::kernels
