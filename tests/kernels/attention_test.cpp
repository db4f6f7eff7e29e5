// Attention: the tiled kernels (AVX-512 fp32, AMX bf16) against the two-pass reference on
// full causal prefixes, sparse key subsets (pruned steps), decode, GQA ratios 1/3/4; the
// reference against closed forms; the LazyLLM head-mean scores.
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu.h"

namespace lazyllm::kernels {
namespace {

bool cpu_has(Isa isa) { return isa_supported(isa, detect_cpu_features()); }

// Owns the buffers of one attention problem.
struct Problem {
    std::vector<float> q, k, v, out;
    std::vector<int32_t> q_pos, kv_pos;
    AttentionArgs args;
};

// Queries at q_pos, keys at kv_pos (sorted); strides padded to catch stride bugs.
Problem make_problem(std::vector<int32_t> q_pos, std::vector<int32_t> kv_pos, int n_head,
                     int n_head_kv, int head_dim, uint32_t seed) {
    Problem p;
    p.q_pos = std::move(q_pos);
    p.kv_pos = std::move(kv_pos);
    const int64_t n_q = static_cast<int64_t>(p.q_pos.size());
    const int64_t n_kv = static_cast<int64_t>(p.kv_pos.size());
    const int64_t q_stride = static_cast<int64_t>(n_head) * head_dim + 3;
    const int64_t kv_stride = static_cast<int64_t>(n_head_kv) * head_dim + 5;
    const int64_t out_stride = static_cast<int64_t>(n_head) * head_dim + 7;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto fill = [&](std::vector<float>& x, int64_t n) {
        x.resize(n);
        for (float& e : x) e = dist(rng);
    };
    fill(p.q, n_q * q_stride);
    fill(p.k, std::max<int64_t>(1, n_kv * kv_stride));
    fill(p.v, std::max<int64_t>(1, n_kv * kv_stride));
    // Scale queries up so that softmax rows are peaked, not near-uniform.
    for (float& e : p.q) e *= 4.0f;
    p.out.assign(n_q * out_stride, -7.0f);
    AttentionArgs& a = p.args;
    a.q = p.q.data();
    a.q_pos = p.q_pos.data();
    a.n_q = n_q;
    a.q_stride = q_stride;
    a.k = p.k.data();
    a.v = p.v.data();
    a.kv_pos = p.kv_pos.data();
    a.n_kv = n_kv;
    a.kv_stride = kv_stride;
    a.n_head = n_head;
    a.n_head_kv = n_head_kv;
    a.head_dim = head_dim;
    a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    a.out = p.out.data();
    a.out_stride = out_stride;
    return p;
}

// Points args at this Problem's own buffers (after a copy).
void rebind(Problem& p) {
    p.args.q = p.q.data();
    p.args.q_pos = p.q_pos.data();
    p.args.k = p.k.data();
    p.args.v = p.v.data();
    p.args.kv_pos = p.kv_pos.data();
    p.args.out = p.out.data();
}

std::vector<int32_t> iota_pos(int32_t n) {
    std::vector<int32_t> v(n);
    std::iota(v.begin(), v.end(), 0);
    return v;
}

// Sorted random subset of [0, range) of the given size.
std::vector<int32_t> random_subset(int32_t range, int32_t size, uint32_t seed) {
    std::vector<int32_t> all = iota_pos(range);
    std::mt19937 rng(seed);
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(size);
    std::sort(all.begin(), all.end());
    return all;
}

// Runs ref and the kernel of `isa`; compares the head_dim outputs of every (row, head).
void check_against_ref(Problem p, Isa isa, int n_threads, float abs_tol, float mean_tol,
                       const std::string& what) {
    rebind(p);
    Problem want = p;
    rebind(want);
    ref::attention(want.args);
    attention({isa, n_threads}, p.args);
    const AttentionArgs& a = p.args;
    double err_sum = 0.0;
    int64_t count = 0;
    for (int64_t i = 0; i < a.n_q; ++i) {
        for (int64_t c = 0; c < a.out_stride; ++c) {
            const float w = want.out[i * a.out_stride + c];
            const float g = p.out[i * a.out_stride + c];
            if (c >= static_cast<int64_t>(a.n_head) * a.head_dim) {
                ASSERT_EQ(g, -7.0f) << what << ": wrote into the row padding";
                continue;
            }
            ASSERT_NEAR(g, w, abs_tol) << what << " row " << i << " col " << c;
            err_sum += std::fabs(g - w);
            ++count;
        }
    }
    EXPECT_LE(err_sum / std::max<int64_t>(1, count), mean_tol) << what;
}

constexpr float kFp32Tol = 2e-5f;  // outputs are convex combinations of values in [-1, 1]
// bf16 inputs (Q, K, V, P rounded to 8 significant bits) with scores of magnitude ~5 in the
// tests: a few parts in 1e3 per element, averaging out over the keys.
constexpr float kBf16Tol = 3e-2f;
constexpr float kBf16MeanTol = 3e-3f;

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

struct Shape {
    int n_head, n_head_kv, head_dim;
};

const Shape kShapes[] = {{4, 4, 64}, {9, 3, 64}, {8, 2, 64}, {4, 1, 128}, {6, 2, 80}};

TEST(Attention, Avx512FullPrefixPrefill) {
    if (!cpu_has(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
    for (const Shape& s : kShapes) {
        for (int32_t n : {1, 15, 17, 100, 301}) {
            check_against_ref(
                make_problem(iota_pos(n), iota_pos(n), s.n_head, s.n_head_kv, s.head_dim, n),
                Isa::kAvx512, 2, kFp32Tol, kFp32Tol,
                "prefill n=" + std::to_string(n) + " d=" + std::to_string(s.head_dim));
        }
    }
}

TEST(Attention, Avx512SparseKeysArbitraryQueries) {
    if (!cpu_has(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
    for (const Shape& s : kShapes) {
        for (uint32_t seed : {1u, 2u, 3u}) {
            // A pruned step: 211 of 1000 positions kept; queries anywhere, some before the
            // first key (zero output), unsorted.
            std::vector<int32_t> kv = random_subset(1000, 211, seed);
            std::vector<int32_t> q = random_subset(1000, 37, seed + 10);
            std::shuffle(q.begin(), q.end(), std::mt19937(seed));
            q.push_back(kv.front() > 0 ? kv.front() - 1 : 0);
            check_against_ref(make_problem(q, kv, s.n_head, s.n_head_kv, s.head_dim, seed),
                              Isa::kAvx512, 2, kFp32Tol, kFp32Tol,
                              "sparse seed " + std::to_string(seed));
        }
    }
}

TEST(Attention, Avx512DecodeSplitKeys) {
    if (!cpu_has(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
    for (const Shape& s : kShapes) {
        // One query over 3000 keys: few tiles, so the keys are split across threads.
        for (int threads : {1, 2, 3}) {
            check_against_ref(make_problem({5000}, random_subset(5000, 3000, 4), s.n_head,
                                           s.n_head_kv, s.head_dim, 5),
                              Isa::kAvx512, threads, kFp32Tol, kFp32Tol,
                              "decode threads=" + std::to_string(threads));
        }
    }
}

TEST(Attention, AmxPrefillAndSparse) {
    if (!cpu_has(Isa::kAmx)) GTEST_SKIP() << "no AMX";
    for (const Shape& s : kShapes) {
        // 200 queries are enough for the AMX path (>= 64 query vectors per KV head).
        check_against_ref(
            make_problem(iota_pos(200), iota_pos(200), s.n_head, s.n_head_kv, s.head_dim, 6),
            Isa::kAmx, 2, kBf16Tol, kBf16MeanTol, "amx prefill");
        std::vector<int32_t> kv = random_subset(3000, 777, 7);
        std::vector<int32_t> q = random_subset(3000, 150, 8);
        q.push_back(kv.front() > 0 ? kv.front() - 1 : 0);
        check_against_ref(make_problem(q, kv, s.n_head, s.n_head_kv, s.head_dim, 9), Isa::kAmx, 2,
                          kBf16Tol, kBf16MeanTol, "amx sparse");
        // Few tiles over many keys with 4 threads: the key-split path with AMX tiles.
        std::vector<int32_t> q_late = iota_pos(64);
        for (int32_t& e : q_late) e += 3936;
        check_against_ref(make_problem(q_late, random_subset(4000, 2500, 10), 1, 1, s.head_dim, 11),
                          Isa::kAmx, 4, kBf16Tol, kBf16MeanTol, "amx split");
    }
}

TEST(Attention, AmxLargeScoresRescale) {
    if (!cpu_has(Isa::kAmx)) GTEST_SKIP() << "no AMX";
    // Scores growing along the keys force repeated reference-max raises in the AMX kernel.
    Problem p = make_problem(iota_pos(256), iota_pos(256), 4, 1, 64, 12);
    for (int64_t j = 0; j < p.args.n_kv; ++j) {
        for (int c = 0; c < 64; ++c)
            p.k[j * p.args.kv_stride + c] *= 0.05f * static_cast<float>(j % 97);
    }
    check_against_ref(p, Isa::kAmx, 2, kBf16Tol, kBf16MeanTol, "amx rescale");
}

TEST(Attention, RefIsaAndAvx2UseTheReference) {
    Problem p = make_problem(iota_pos(40), iota_pos(40), 9, 3, 64, 13);
    check_against_ref(p, Isa::kRef, 2, 0.0f, 0.0f, "ref isa");
}

TEST(AttentionScores, HeadMeanMatchesRefAndSumsToOne) {
    for (Isa isa : {Isa::kRef, Isa::kAvx512}) {
        if (!cpu_has(isa)) continue;
        for (const Shape& s : kShapes) {
            std::vector<int32_t> kv = random_subset(2000, 1500, 14);
            Problem p = make_problem({kv[1000]}, kv, s.n_head, s.n_head_kv, s.head_dim, 15);
            std::vector<float> want(kv.size()), got(kv.size(), -1.0f);
            ref::attention_scores_head_mean(p.args, p.q.data(), kv[1000], want.data());
            attention_scores_head_mean({isa, 2}, p.args, p.q.data(), kv[1000], got.data());
            double sum = 0.0;
            for (size_t j = 0; j < kv.size(); ++j) {
                ASSERT_NEAR(got[j], want[j], 1e-5f * want[j] + 1e-9f) << j;
                if (j > 1000) {
                    ASSERT_EQ(got[j], 0.0f) << "invisible key " << j;
                }
                sum += got[j];
            }
            EXPECT_NEAR(sum, 1.0, 1e-5);
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

}  // namespace
}  // namespace lazyllm::kernels
