// The schedule search with a fake evaluator: the candidate space is well formed, the search
// returns the cheapest candidate meeting the target (checked by brute force), rules out
// candidates at least as aggressive as a failure, and stops evaluating a candidate early.
#include "eval/tune.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "prune/schedule.h"

namespace lazyllm::eval {
namespace {

constexpr int kLayers = 30;

// Scores come from a predicate on the schedule: 1 when it holds, else `fail_score`; full
// always scores 1; a candidate's samples verify where `verifies` says so. Counts every call.
class FakeEvaluator : public TuneEvaluator {
public:
    FakeEvaluator(int n, std::function<bool(const prune::Schedule&)> ok, double fail_score = 0.0)
        : n_(n), ok_(std::move(ok)), fail_score_(fail_score) {}
    int n_samples() const override { return n_; }
    Result<TuneSampleResult> evaluate(const prune::Schedule* s, int i) override {
        ++calls;
        if (s == nullptr) {
            const double f = i < static_cast<int>(full_scores.size()) ? full_scores[i] : 1.0;
            return TuneSampleResult{f, 100.0, 100.0};
        }
        samples_seen.push_back(i);
        const double score = ok_(*s) ? 1.0 : (i == 0 ? 0.0 : fail_score_);
        return TuneSampleResult{score, 100.0 * predicted_prefill_fraction(*s, kLayers), 100.0,
                                verifies && verifies(*s, i)};
    }
    int calls = 0;
    std::function<bool(const prune::Schedule&, int)> verifies;
    std::vector<double> full_scores;  // per sample; 1 where not given
    std::vector<int> samples_seen;    // candidate evaluations, in order

private:
    int n_;
    std::function<bool(const prune::Schedule&)> ok_;
    double fail_score_;
};

TEST(TuneTest, AtMostAsWide) {
    prune::Schedule s;
    s.boundaries = {10, 20};
    s.keep = {0.5f, 0.25f};
    prune::Schedule later = s;
    later.boundaries = {12, 20};
    EXPECT_TRUE(at_most_as_wide(s, later, kLayers));
    EXPECT_FALSE(at_most_as_wide(later, s, kLayers));
    prune::Schedule one;
    one.boundaries = {10};
    one.keep = {0.5f};
    EXPECT_TRUE(at_most_as_wide(s, one, kLayers));  // same until 20, then keeps less
}

TEST(TuneTest, ObjectiveNamesAndMeta) {
    EXPECT_EQ(parse_tune_objective("answers").value(), TuneObjective::kAnswers);
    EXPECT_EQ(parse_tune_objective("score").value(), TuneObjective::kScore);
    EXPECT_EQ(tune_objective_name(TuneObjective::kAnswers), "answers");
    auto bad = parse_tune_objective("speed");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(
        bad.error().message().find("unknown tune objective 'speed' (expected score or answers)"),
        std::string::npos);
    TuneResult r;
    r.n_samples = 54;
    const auto answers =
        nlohmann::json::parse(tune_meta_json(r, 0.8, "calibration", TuneObjective::kAnswers, 32));
    EXPECT_EQ(answers["objective"], "answers");
    EXPECT_EQ(answers["answer_tokens"], 32);
    EXPECT_EQ(answers["target"], 0.8);
    const auto score = nlohmann::json::parse(tune_meta_json(r, 0.99, "calibration"));
    EXPECT_EQ(score["objective"], "score");
    EXPECT_FALSE(score.contains("answer_tokens"));
}

TEST(TuneTest, CandidatesAreWellFormedAndSorted) {
    TuneSpace space;
    space.keep_first = 7;
    space.score_layers = 3;
    space.score_pool = 11;
    space.prune_decode = false;
    space.repair = true;
    const auto cands = enumerate_candidates(space, kLayers);
    ASSERT_GT(cands.size(), 100u);
    std::set<std::string> seen;
    for (size_t i = 0; i < cands.size(); ++i) {
        const prune::Schedule& s = cands[i].schedule;
        ASSERT_TRUE(prune::validate_schedule(s, kLayers).ok()) << prune::to_string(s);
        // The space's fixed parts go to every candidate.
        EXPECT_EQ(s.keep_first, 7);
        EXPECT_EQ(s.score_layers, 3);
        EXPECT_EQ(s.score_pool, 11);
        EXPECT_FALSE(s.prune_decode);
        EXPECT_TRUE(s.repair);
        ASSERT_GE(s.boundaries.size(), 1u);
        ASSERT_LE(s.boundaries.size(), 3u);
        EXPECT_LE(s.boundaries[0], 15);  // first boundary from 0.1..0.5 of depth
        for (size_t j = 1; j < s.keep.size(); ++j) {
            EXPECT_LT(s.keep[j], s.keep[j - 1]);
            EXPECT_GT(s.boundaries[j], s.boundaries[j - 1]);
        }
        EXPECT_NEAR(cands[i].cost, predicted_prefill_fraction(s, kLayers), 1e-12);
        if (i > 0) {
            EXPECT_LE(cands[i - 1].cost, cands[i].cost + 1e-8);  // ties within rounding
        }
        EXPECT_TRUE(seen.insert(prune::to_string(s)).second) << "duplicate";
    }
    EXPECT_TRUE(enumerate_candidates(space, 1).empty());
}

// On a sliding-window model (Gemma 3 270M: 18 layers, global 5, 11, 17) each boundary sits
// within score_layers after a global layer of its own stage, as Session::create requires.
// The fast preset's decode steps weigh revivals (Schedule::revive_weight): tune --preset fast
// judges and writes every candidate with the weight.
TEST(TuneTest, CandidatesCarryTheReviveWeight) {
    TuneSpace space;
    space.revive_weight = 0.25f;
    const auto cands = enumerate_candidates(space, kLayers);
    ASSERT_FALSE(cands.empty());
    for (const TuneCandidate& c : cands) {
        EXPECT_EQ(c.schedule.revive_weight, 0.25f) << prune::to_string(c.schedule);
        EXPECT_TRUE(prune::validate_schedule(c.schedule, kLayers).ok());
    }
}

TEST(TuneTest, SlidingWindowBoundariesFollowGlobalLayers) {
    TuneSpace space;
    space.global_layers = {5, 11, 17};
    space.first_boundary = {0.3, 0.5, 0.7};  // layers 5, 9 (a tie: the shallower), 13
    std::set<std::vector<int>> layouts;
    for (const auto& c : enumerate_candidates(space, 18)) layouts.insert(c.schedule.boundaries);
    EXPECT_EQ(layouts, (std::set<std::vector<int>>{{6}, {12}, {6, 12}}));

    space.score_layers = 3;
    const auto cands = enumerate_candidates(space, 18);
    ASSERT_FALSE(cands.empty());
    layouts.clear();
    for (const auto& c : cands) {
        const std::vector<int>& b = c.schedule.boundaries;
        layouts.insert(b);
        for (size_t j = 0; j < b.size(); ++j) {
            const int lo = std::max(j == 0 ? 0 : b[j - 1], b[j] - 3);
            const bool scored = (lo <= 5 && 5 < b[j]) || (lo <= 11 && 11 < b[j]);
            EXPECT_TRUE(scored) << prune::to_string(c.schedule);
        }
    }
    EXPECT_GT(layouts.size(), 3u);  // more than one layer after each global one

    space.global_layers = {17};  // only the last layer is global: nowhere to cut
    EXPECT_TRUE(enumerate_candidates(space, 18).empty());
}

// Monotone in the keep profile (the paper's ablation): pass iff the first boundary is at
// layer >= 9 and the final keep is >= 0.25.
bool monotone_ok(const prune::Schedule& s) {
    return s.boundaries.front() >= 9 && s.keep.back() >= 0.25f;
}

TEST(TuneTest, FindsTheCheapestPassingCandidate) {
    const auto cands = enumerate_candidates(TuneSpace{}, kLayers);
    double want = std::numeric_limits<double>::infinity();
    for (const auto& c : cands) {
        if (monotone_ok(c.schedule)) want = std::min(want, c.cost);
    }
    ASSERT_TRUE(std::isfinite(want));

    FakeEvaluator fake(5, monotone_ok);
    TuneOptions opts;
    opts.budget = 1000;
    auto r = tune_schedule(fake, cands, kLayers, opts);
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_TRUE(r->best.has_value());
    EXPECT_NEAR(r->best->candidate.cost, want, 1e-12);
    EXPECT_TRUE(monotone_ok(r->best->candidate.schedule));
    EXPECT_DOUBLE_EQ(r->full_score, 1.0);
    EXPECT_DOUBLE_EQ(r->best->mean_score(), 1.0);
    EXPECT_EQ(r->best->n_evaluated, 5);  // completed on every sample
    EXPECT_NEAR(r->ttft_speedup, 1.0 / want, 1e-9);
    // Bisection with ruling-out needs far fewer evaluations than the space has candidates.
    EXPECT_LT(r->evaluated.size(), cands.size() / 10);
    EXPECT_GT(r->n_skipped, 0);
    // Never evaluates a candidate at least as aggressive as one that already failed.
    std::vector<prune::Schedule> failed;
    for (const CandidateResult& c : r->evaluated) {
        for (const auto& f : failed) {
            EXPECT_FALSE(at_most_as_wide(c.candidate.schedule, f, kLayers))
                << prune::to_string(c.candidate.schedule) << " after " << prune::to_string(f);
        }
        if (!c.passed) failed.push_back(c.candidate.schedule);
    }
}

TEST(TuneTest, VerifyRepairCost) {
    prune::Schedule s;
    s.boundaries = {9, 15, 27};
    s.keep = {0.4f, 0.25f, 0.15f};
    EXPECT_EQ(verify_repair_cost(s, kLayers), 0.0);  // no repair
    s.repair = true;
    EXPECT_EQ(verify_repair_cost(s, kLayers), 0.0);  // no verify margin
    s.verify_margin = 0.2f;
    // The repair runs layers 8..29 again: 22 of 30, as docs/lazyllm.md counts it.
    EXPECT_NEAR(verify_repair_cost(s, kLayers), 22.0 / 30.0, 1e-12);
    s.boundaries = {21, 27};
    s.keep = {0.35f, 0.1f};
    EXPECT_NEAR(verify_repair_cost(s, kLayers), 10.0 / 30.0, 1e-12);
}

// With verify, a candidate whose samples verify pays their repairs: cuts from layer 9 to 11
// verify on every other sample here, so the winner is the cheapest by predicted cost plus
// repairs (checked by brute force), a wider candidate that never verifies.
TEST(TuneTest, RanksByCostWithTheRepairsOfVerifiedSamples) {
    TuneSpace space;
    space.repair = true;
    space.prune_decode = false;
    space.verify_margin = 0.2f;
    const auto cands = enumerate_candidates(space, kLayers);
    constexpr int kSamples = 6;
    auto verifies = [](const prune::Schedule& s, int i) {
        return s.boundaries.front() < 12 && i % 2 == 0;
    };
    double want = std::numeric_limits<double>::infinity(), cheapest = want;
    for (const auto& c : cands) {
        if (!monotone_ok(c.schedule)) continue;
        cheapest = std::min(cheapest, c.cost);
        const double repairs = c.schedule.boundaries.front() < 12 ? 0.5 * c.repair_cost : 0.0;
        want = std::min(want, c.cost + repairs);
    }
    ASSERT_LT(cheapest, want);  // the predicted cheapest passing candidate is not the winner

    FakeEvaluator fake(kSamples, monotone_ok);
    fake.verifies = verifies;
    TuneOptions opts;
    opts.budget = 1000;
    auto r = tune_schedule(fake, cands, kLayers, opts);
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_TRUE(r->best.has_value());
    const CandidateResult& best = *r->best;
    EXPECT_NEAR(best.effective_cost(), want, 1e-12) << prune::to_string(best.candidate.schedule);
    EXPECT_GE(best.candidate.schedule.boundaries.front(), 12);
    EXPECT_EQ(best.n_verified, 0);
    // Some candidate that passed verified: the search saw the cheaper cuts and their repairs.
    bool saw_verified_pass = false;
    for (const CandidateResult& c : r->evaluated) {
        if (c.passed && c.n_verified > 0) {
            saw_verified_pass = true;
            EXPECT_NEAR(c.verified_fraction(), 0.5, 1e-12);
            EXPECT_GT(c.effective_cost(), best.effective_cost());
        }
    }
    EXPECT_TRUE(saw_verified_pass);
    const auto meta = nlohmann::json::parse(tune_meta_json(*r, 0.99, "calibration"));
    EXPECT_DOUBLE_EQ(meta["verified_fraction"].get<double>(), 0.0);
    EXPECT_NEAR(meta["effective_prefill_pct"].get<double>(), 100.0 * want, 1e-9);

    // Without verify the same search takes the predicted cheapest.
    space.verify_margin = 0.0f;
    const auto plain = enumerate_candidates(space, kLayers);
    FakeEvaluator no_verify(kSamples, monotone_ok);
    auto r2 = tune_schedule(no_verify, plain, kLayers, opts);
    ASSERT_TRUE(r2.ok());
    ASSERT_TRUE(r2->best.has_value());
    EXPECT_NEAR(r2->best->candidate.cost, cheapest, 1e-12);
    EXPECT_FALSE(
        nlohmann::json::parse(tune_meta_json(*r2, 0.99, "c")).contains("verified_fraction"));
}

TEST(TuneTest, EarlyRejectionAndAcceptance) {
    const auto cands = enumerate_candidates(TuneSpace{}, kLayers);
    // 10 samples, target 0.99: one lost sample already rules a candidate out.
    FakeEvaluator fake(10, monotone_ok);
    TuneOptions opts;
    opts.budget = 1000;
    auto r = tune_schedule(fake, cands, kLayers, opts);
    ASSERT_TRUE(r.ok());
    int failures = 0;
    for (const CandidateResult& c : r->evaluated) {
        if (c.passed) {
            // 9.9 needed: certain only after the 10th sample.
            EXPECT_EQ(c.n_evaluated, 10);
        } else {
            ++failures;
            EXPECT_TRUE(c.stopped_early);
            EXPECT_EQ(c.n_evaluated, 1);  // sample 0 scores 0: out of reach at once
        }
    }
    EXPECT_GT(failures, 0);

    // With a low target a passing candidate is accepted before the last sample.
    FakeEvaluator lenient(10, [](const prune::Schedule&) { return true; });
    opts.target = 0.5;
    auto r2 = tune_schedule(lenient, cands, kLayers, opts);
    ASSERT_TRUE(r2.ok());
    ASSERT_FALSE(r2->evaluated.empty());
    EXPECT_TRUE(r2->evaluated.front().passed);
    EXPECT_TRUE(r2->evaluated.front().stopped_early);
    EXPECT_EQ(r2->evaluated.front().n_evaluated, 5);
    // Everything passes, so the search walks down to the cheapest candidate of all.
    ASSERT_TRUE(r2->best.has_value());
    EXPECT_NEAR(r2->best->candidate.cost, cands.front().cost, 1e-12);
}

TEST(TuneTest, JudgesOnSamplesFullGetsRightBestFirst) {
    const auto cands = enumerate_candidates(TuneSpace{}, kLayers);
    FakeEvaluator fake(6, monotone_ok);
    fake.full_scores = {0.0, 0.5, 1.0, 0.0, 1.0, 0.25};
    TuneOptions opts;
    opts.budget = 1;
    auto r = tune_schedule(fake, cands, kLayers, opts);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->n_judged, 4);
    EXPECT_NEAR(r->full_score, 2.75 / 6.0, 1e-12);
    ASSERT_EQ(r->evaluated.size(), 1u);
    const CandidateResult& c = r->evaluated[0];
    // Judged order: samples 2 and 4 (full 1.0), then 1 (0.5), then 5 (0.25).
    const std::vector<int> order = {2, 4, 1, 5};
    ASSERT_LE(c.n_evaluated, 4);
    for (int k = 0; k < c.n_evaluated; ++k) EXPECT_EQ(fake.samples_seen[k], order[k]);
    if (c.passed) {
        // The winner is completed on every sample, the unjudged ones included.
        ASSERT_TRUE(r->best.has_value());
        EXPECT_EQ(r->best->n_evaluated, 6);
        for (double t : r->best->ttft_ms) EXPECT_FALSE(std::isnan(t));
    } else {
        // A failing candidate scores 0: after one sample 0 + 3 >= 0.99 * 2.75 = 2.72 is still
        // reachable; after two, 0 + 2 is not.
        EXPECT_EQ(c.n_evaluated, 2);
        EXPECT_TRUE(c.stopped_early);
        EXPECT_FALSE(r->best.has_value());
    }

    FakeEvaluator lenient(6, [](const prune::Schedule&) { return true; });
    lenient.full_scores = fake.full_scores;
    auto r2 = tune_schedule(lenient, cands, kLayers, opts);
    ASSERT_TRUE(r2.ok());
    ASSERT_TRUE(r2->best.has_value());
    EXPECT_EQ(r2->evaluated[0].n_evaluated, 3);  // 1 + 1 + 1 >= 2.72: accepted after three
    EXPECT_EQ(r2->best->n_evaluated, 6);         // then completed, unjudged samples included
    for (double t : r2->best->ttft_ms) EXPECT_FALSE(std::isnan(t));
    EXPECT_DOUBLE_EQ(r2->best->mean_score(), 1.0);
}

TEST(TuneTest, BudgetAndNoWinner) {
    const auto cands = enumerate_candidates(TuneSpace{}, kLayers);
    FakeEvaluator never(4, [](const prune::Schedule&) { return false; });
    TuneOptions opts;
    opts.budget = 3;
    auto r = tune_schedule(never, cands, kLayers, opts);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->best.has_value());
    EXPECT_EQ(r->evaluated.size(), 3u);
    EXPECT_EQ(never.calls, 1 + 4 + 3);  // a warm-up, full on 4 samples, one per rejected candidate

    FakeEvaluator fake(4, monotone_ok);
    opts.target = 1.5;
    EXPECT_FALSE(tune_schedule(fake, cands, kLayers, opts).ok());
    opts.target = 0.99;
    opts.budget = 0;
    EXPECT_FALSE(tune_schedule(fake, cands, kLayers, opts).ok());
}

TEST(TuneTest, FlagStrings) {
    prune::Schedule s;
    s.boundaries = {3, 9, 18};
    s.keep = {0.7f, 0.35f, 0.1f};
    EXPECT_EQ(layers_string(s), "3,9,18");
    EXPECT_EQ(keep_string(s), "0.7,0.35,0.1");
    auto back = prune::parse_schedule(layers_string(s), keep_string(s), kLayers);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->boundaries, s.boundaries);
    EXPECT_EQ(back->keep, s.keep);
}

}  // namespace
}  // namespace lazyllm::eval
