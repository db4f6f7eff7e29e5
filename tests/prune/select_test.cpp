#include "prune/select.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <vector>

namespace lazyllm::prune {
namespace {

// Brute force: protected first, then a full sort of the rest by (score desc, position asc).
std::vector<int32_t> reference_select(const std::vector<float>& scores,
                                      const std::vector<int32_t>& positions, int64_t n_keep,
                                      const std::vector<int32_t>& protected_positions) {
    const std::set<int32_t> prot(protected_positions.begin(), protected_positions.end());
    std::vector<int32_t> kept;
    std::vector<std::pair<float, int32_t>> rest;
    for (size_t i = 0; i < positions.size(); ++i) {
        if (prot.count(positions[i])) {
            kept.push_back(positions[i]);
        } else {
            const float s =
                std::isnan(scores[i]) ? -std::numeric_limits<float>::infinity() : scores[i];
            rest.emplace_back(s, positions[i]);
        }
    }
    std::sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto& [s, pos] : rest) {
        if (static_cast<int64_t>(kept.size()) >= n_keep) break;
        kept.push_back(pos);
    }
    std::sort(kept.begin(), kept.end());
    return kept;
}

TEST(SelectTop, HighestScoresSortedByPosition) {
    const std::vector<float> scores = {0.1f, 0.9f, 0.3f, 0.8f, 0.05f};
    const std::vector<int32_t> positions = {10, 11, 12, 13, 14};
    EXPECT_EQ(select_top(scores, positions, 2, {}), (std::vector<int32_t>{11, 13}));
    EXPECT_EQ(select_top(scores, positions, 3, {}), (std::vector<int32_t>{11, 12, 13}));
}

TEST(SelectTop, TiesGoToTheLowerPosition) {
    const std::vector<float> scores = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    const std::vector<int32_t> positions = {40, 7, 22, 3, 15};  // any input order
    EXPECT_EQ(select_top(scores, positions, 2, {}), (std::vector<int32_t>{3, 7}));
    const std::vector<float> some_ties = {0.2f, 0.9f, 0.2f, 0.2f, 0.1f};
    const std::vector<int32_t> pos2 = {5, 1, 4, 2, 0};
    // 0.9 at 1, then the 0.2 tie among 5, 4, 2 goes to 2.
    EXPECT_EQ(select_top(some_ties, pos2, 2, {}), (std::vector<int32_t>{1, 2}));
}

TEST(SelectTop, ProtectedAlwaysKeptAndCountTowardNKeep) {
    const std::vector<float> scores = {0.9f, 0.8f, 0.7f, 0.0f, 0.01f};
    const std::vector<int32_t> positions = {0, 1, 2, 3, 4};
    // The last token (4) has a low score but is protected; it uses one of the three slots.
    EXPECT_EQ(select_top(scores, positions, 3, std::vector<int32_t>{4}),
              (std::vector<int32_t>{0, 1, 4}));
    // Protected positions not among the candidates are ignored (no slot used).
    EXPECT_EQ(select_top(scores, positions, 2, std::vector<int32_t>{99}),
              (std::vector<int32_t>{0, 1}));
    // Duplicates in the protected list count once.
    EXPECT_EQ(select_top(scores, positions, 2, std::vector<int32_t>{4, 4}),
              (std::vector<int32_t>{0, 4}));
}

TEST(SelectTop, ProtectedBeyondNKeepAreAllKept) {
    const std::vector<float> scores = {0.9f, 0.8f, 0.7f, 0.0f, 0.01f};
    const std::vector<int32_t> positions = {0, 1, 2, 3, 4};
    EXPECT_EQ(select_top(scores, positions, 1, std::vector<int32_t>{3, 4}),
              (std::vector<int32_t>{3, 4}));
    EXPECT_EQ(select_top(scores, positions, 0, std::vector<int32_t>{2, 4}),
              (std::vector<int32_t>{2, 4}));
    EXPECT_TRUE(select_top(scores, positions, 0, {}).empty());
    EXPECT_TRUE(select_top(scores, positions, -5, {}).empty());
}

TEST(SelectTop, NKeepAtLeastNReturnsAll) {
    const std::vector<float> scores = {0.3f, 0.1f, 0.2f};
    const std::vector<int32_t> positions = {9, 2, 5};
    EXPECT_EQ(select_top(scores, positions, 3, {}), (std::vector<int32_t>{2, 5, 9}));
    EXPECT_EQ(select_top(scores, positions, 100, std::vector<int32_t>{5}),
              (std::vector<int32_t>{2, 5, 9}));
    EXPECT_TRUE(select_top({}, {}, 4, {}).empty());
}

TEST(SelectTop, NanRanksLowest) {
    const float nan = std::nanf("");
    const std::vector<float> scores = {nan, 0.1f, nan, -1.0f};
    const std::vector<int32_t> positions = {0, 1, 2, 3};
    EXPECT_EQ(select_top(scores, positions, 2, {}), (std::vector<int32_t>{1, 3}));
    EXPECT_EQ(select_top(scores, positions, 3, {}), (std::vector<int32_t>{0, 1, 3}));
}

TEST(SelectTop, ScratchOverloadMatchesAndReuses) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(0.0f, 1.0f);
    SelectScratch scratch;
    std::vector<int32_t> kept;
    for (int n : {100, 50, 200, 10}) {
        std::vector<float> scores(n);
        for (float& s : scores) s = dist(rng);
        std::vector<int32_t> positions(n);
        std::iota(positions.begin(), positions.end(), 0);
        select_top(scores, positions, n / 3, std::vector<int32_t>{n - 1}, scratch, kept);
        EXPECT_EQ(kept, select_top(scores, positions, n / 3, std::vector<int32_t>{n - 1}));
    }
}

TEST(SelectTop, MatchesBruteForceOnRandomCases) {
    std::mt19937 rng(20240717);
    for (int c = 0; c < 1000; ++c) {
        const int n = std::uniform_int_distribution<int>(0, 300)(rng);
        // Positions: a random distinct subset of [0, 2n+10) in random order (a pruned set).
        std::vector<int32_t> all(2 * n + 10);
        std::iota(all.begin(), all.end(), 0);
        std::shuffle(all.begin(), all.end(), rng);
        std::vector<int32_t> positions(all.begin(), all.begin() + n);
        if (c % 2 == 1) std::sort(positions.begin(), positions.end());  // a session's key set
        // Few distinct score levels on some cases, to exercise ties; NaN now and then.
        const int levels = std::uniform_int_distribution<int>(1, 4)(rng) == 1 ? 3 : 1000000;
        std::uniform_int_distribution<int> level(0, levels - 1);
        std::vector<float> scores(n);
        for (float& s : scores) {
            s = std::uniform_int_distribution<int>(0, 50)(rng) == 0
                    ? std::nanf("")
                    : static_cast<float>(level(rng)) / static_cast<float>(levels);
        }
        std::vector<int32_t> prot;
        const int n_prot = std::uniform_int_distribution<int>(0, 4)(rng);
        for (int p = 0; p < n_prot; ++p) {
            // Half from the candidates, half possibly absent.
            if (n > 0 && p % 2 == 0) {
                prot.push_back(positions[std::uniform_int_distribution<int>(0, n - 1)(rng)]);
            } else {
                prot.push_back(std::uniform_int_distribution<int32_t>(0, 2 * n + 20)(rng));
            }
        }
        const int64_t n_keep = std::uniform_int_distribution<int64_t>(-1, n + 2)(rng);
        const std::vector<int32_t> got = select_top(scores, positions, n_keep, prot);
        const std::vector<int32_t> want = reference_select(scores, positions, n_keep, prot);
        ASSERT_EQ(got, want) << "case " << c << " n=" << n << " n_keep=" << n_keep;
    }
}

// revive_max: at most `max` of the pruned tokens a boundary selects revive, the best-scored;
// live tokens and protected ones (the recent window after a truncation, keep_first) are no
// candidates and stay.
TEST(BoundRevivals, KeepsTheBestCandidatesAndEveryProtectedOne) {
    std::vector<int32_t> S(20);
    std::iota(S.begin(), S.end(), 0);
    std::vector<float> scores(20);
    for (int i = 0; i < 20; ++i)
        scores[i] = static_cast<float>(i % 7);  // best: 6, 13 (6), 5, 12 (5)
    const std::vector<int32_t> live = {0, 1, 2};
    std::vector<int16_t> depth(20, 9);
    depth[4] = 12;  // stopped elsewhere: no candidate at layer 9
    const std::vector<int32_t> protect = {0, 18, 19};
    CutScratch scratch;
    std::vector<int32_t> kept = S;
    bound_revivals(S, scores, live, depth, 9, 3, protect, scratch, kept);
    EXPECT_EQ(kept, (std::vector<int32_t>{0, 1, 2, 4, 5, 6, 13, 18, 19}));
}

// revive_weight: after pooling, the scores of tokens the cut would revive (depth == layer and
// not live) count times the weight, so a live token keeps its place unless a deferred one
// outscores it by 1 / weight; protected tokens stay whatever their score.
TEST(SelectKept, DeferredScoresCountTimesTheWeight) {
    Schedule sch;
    sch.keep_first = 1;
    std::vector<int32_t> S(10);
    std::iota(S.begin(), S.end(), 0);
    const std::vector<float> raw = {0.0f, 0.9f, 0.5f, 0.45f, 0.3f, 0.8f, 0.2f, 0.1f, 0.6f, 0.0f};
    std::vector<int16_t> depth(10, 4);
    for (int32_t t : {1, 5, 8}) depth[t] = 2;  // deferred at layer 2 unless live
    const std::vector<int32_t> live = {8, 9};  // 8 was revived at an earlier boundary
    const DeferredWeight deferred{live, depth, 2, 0.5f};
    CutScratch scratch;
    std::vector<int32_t> kept;
    // keep 0.4 of 10: 4 tokens, 0 (protected) and 9 (the last) among them.
    std::vector<float> scores = raw;
    select_kept(sch, S, scores, 0.4f, 10, scratch, kept);
    EXPECT_EQ(kept, (std::vector<int32_t>{0, 1, 5, 9}));  // the paper's rule
    scores = raw;
    select_kept(sch, S, scores, 0.4f, 10, scratch, kept, &deferred);
    EXPECT_EQ(scores[1], 0.45f);  // 0.9 x 0.5
    EXPECT_EQ(scores[5], 0.4f);
    EXPECT_EQ(scores[8], 0.6f);  // live: as it was
    EXPECT_EQ(scores[2], 0.5f);  // depth 4: computed, as it was
    EXPECT_EQ(kept, (std::vector<int32_t>{0, 2, 8, 9}));
    // A small weight: deferred tokens fill what live ones leave of the keep count, best first.
    const DeferredWeight small{live, depth, 2, 0.01f};
    scores = raw;
    select_kept(sch, S, scores, 0.9f, 10, scratch, kept, &small);
    EXPECT_EQ(kept, (std::vector<int32_t>{0, 1, 2, 3, 4, 6, 7, 8, 9}));
    const std::vector<float> swapped = {0.0f, 0.8f, 0.5f, 0.45f, 0.3f,
                                        0.9f, 0.2f, 0.1f, 0.6f,  0.0f};
    scores = swapped;
    select_kept(sch, S, scores, 0.9f, 10, scratch, kept, &small);
    EXPECT_EQ(kept, (std::vector<int32_t>{0, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(KeepCount, CeilOfFractionOfWholeContext) {
    EXPECT_EQ(keep_count(0.5, 100, 100), 50);
    EXPECT_EQ(keep_count(0.5, 101, 101), 51);  // ceil
    EXPECT_EQ(keep_count(0.25, 4096, 2048), 1024);
    EXPECT_EQ(keep_count(0.3, 4096, 4096), 1229);  // 1228.8 -> 1229
    // Cumulative fraction of the whole context, clamped to the candidates left (nested sets).
    EXPECT_EQ(keep_count(0.5, 100, 30), 30);
    EXPECT_EQ(keep_count(1.0, 100, 100), 100);
    // At least one token (the last) survives.
    EXPECT_EQ(keep_count(0.001, 10, 10), 1);
    EXPECT_EQ(keep_count(0.0, 10, 10), 1);
    EXPECT_EQ(keep_count(0.5, 0, 10), 1);
    EXPECT_EQ(keep_count(0.5, 10, 0), 0);
    EXPECT_EQ(keep_count(std::nan(""), 10, 10), 1);
}

TEST(KeepCount, FloatFractionsDoNotRoundUpSpuriously) {
    // 0.1f is 0.100000001490116...: a plain ceil would give 4 of 30 and 8 of 70.
    EXPECT_EQ(keep_count(0.1f, 30, 30), 3);
    EXPECT_EQ(keep_count(0.1f, 70, 70), 7);
    EXPECT_EQ(keep_count(0.7, 10, 10), 7);  // 0.7 * 10 = 7.000000000000001 in double
    for (int n = 1; n <= 5000; ++n) {
        for (float k : {0.1f, 0.2f, 0.25f, 0.3f, 0.5f, 0.6f, 0.7f, 0.9f}) {
            // Exact rational reference: ceil(num * n / 100) for k = num / 100.
            const int64_t num = std::lround(static_cast<double>(k) * 100.0);
            const int64_t want = std::max<int64_t>(1, (num * n + 99) / 100);
            ASSERT_EQ(keep_count(k, n, n), want) << "k=" << k << " n=" << n;
        }
    }
}

// Brute force: the max over every candidate within window / 2 positions.
std::vector<float> reference_pool(const std::vector<float>& scores,
                                  const std::vector<int32_t>& positions, int window) {
    const float ninf = -std::numeric_limits<float>::infinity();
    std::vector<float> out(scores.size(), ninf);
    for (size_t i = 0; i < scores.size(); ++i) {
        for (size_t j = 0; j < scores.size(); ++j) {
            if (std::abs(positions[j] - positions[i]) > window / 2) continue;
            out[i] = std::max(out[i], std::isnan(scores[j]) ? ninf : scores[j]);
        }
    }
    return out;
}

TEST(PoolScores, HandCase) {
    // Positions with a gap: 10 and 13 are 3 apart, out of reach of a window of 5 (radius 2).
    const std::vector<int32_t> pos = {0, 1, 2, 3, 10, 13, 14};
    const std::vector<float> sc = {0.1f, 0.0f, 0.0f, 0.5f, 0.2f, 0.0f, 0.3f};
    std::vector<float> out;
    pool_scores(sc, pos, 5, out);
    EXPECT_EQ(out, (std::vector<float>{0.1f, 0.5f, 0.5f, 0.5f, 0.2f, 0.3f, 0.3f}));
    pool_scores(sc, pos, 1, out);
    EXPECT_EQ(out, sc);
    pool_scores({}, {}, 7, out);
    EXPECT_TRUE(out.empty());
}

// The dense trials (odd) take pool_scores' contiguous path, the others the general one; windows
// wider than the whole set included.
TEST(PoolScores, MatchesBruteForce) {
    std::mt19937 rng(11);
    for (int trial = 0; trial < 300; ++trial) {
        const int n = 1 + static_cast<int>(rng() % (trial % 10 == 3 ? 500 : 60));
        std::vector<int32_t> pos;
        int32_t p = static_cast<int32_t>(rng() % 5);
        for (int i = 0; i < n; ++i) {
            pos.push_back(p);
            p += 1 + static_cast<int32_t>(rng() % (trial % 2 ? 1 : 6));  // dense, or with gaps
        }
        std::vector<float> sc(static_cast<size_t>(n));
        for (float& x : sc) x = static_cast<float>(rng() % 8) / 8.0f;  // many ties
        if (trial % 5 == 0) sc[rng() % sc.size()] = std::numeric_limits<float>::quiet_NaN();
        const int window = 1 + 2 * static_cast<int>(rng() % 8);
        std::vector<float> out;
        pool_scores(sc, pos, window, out);
        EXPECT_EQ(out, reference_pool(sc, pos, window)) << "trial " << trial << " window " << window;
    }
}

}  // namespace
}  // namespace lazyllm::prune
