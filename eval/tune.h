// `lazyllm tune` (design.md 1.4): search boundary layers and keep fractions for the cheapest
// LazyLLM schedule that, on a calibration suite, keeps full's greedy answers on >= target of
// the prompts (TuneObjective::kAnswers) or a task score >= target x full's (kScore).
//
// Cost is the predicted fraction of prompt token-layers computed in prefill (deterministic, unlike
// TTFT), plus, under Schedule::verify_margin, the repairs its first tokens needed: a verified
// prompt recomputes every token from the first boundary on before its first token, so a
// candidate that verifies often is dearer than its cuts alone say. The winner's TTFT is measured
// afterwards. The search leans on the paper's ablation
// (Fu et al. 2024, Sec. 5): pruning later and keeping more never hurt accuracy, so a schedule
// that keeps no more than a failed one at every layer is skipped as failed too. Candidates are
// evaluated sample by sample and stopped as soon as the target is out of reach (or certain).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/runner.h"
#include "lazyllm/schedule.h"

namespace lazyllm::eval {

// Calibration prompts use seeds offset by this much from the reporting suites', so a schedule
// is never tuned on the samples it is reported on.
inline constexpr uint64_t kCalibrationSeedOffset = 1000000;

struct TuneSpace {
    std::vector<double> first_boundary = {0.1, 0.2, 0.3, 0.4, 0.5};  // depth fractions
    std::vector<double> later_boundary = {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
    int max_boundaries = 3;
    std::vector<float> keep = {0.7f, 0.5f, 0.35f, 0.25f, 0.15f, 0.1f};
    // Protection and score shaping, the same for every candidate (Schedule; `tune
    // --preset` takes them from the model's preset): the search is over boundaries and keeps.
    int keep_first = 0;
    int keep_recent = 0;
    int min_context = 0;
    bool prune_decode = true;
    float revive_weight = 1.0f;  // with prune_decode
    bool repair = false;
    float verify_margin = 0.0f;
    int score_layers = 1;
    int score_pool = 1;
    // A sliding-window model's layers that see the whole context (ModelSummary::global_layers):
    // each boundary then sits within score_layers after a global layer of its stage, where its
    // score comes from (Session::create refuses the rest). Empty: any layer.
    std::vector<int> global_layers = {};
};

struct TuneCandidate {
    Schedule schedule;  // boundaries as layer indices
    double cost = 1.0;  // predicted_prefill_fraction (lazyllm/schedule.h)
    // What one verified prompt adds to its prefill's token-layers: the repair runs every token
    // again from the layer where the first boundary cuts (boundary - 1, whose K/V every token
    // holds) to the last, (n_layer - first boundary + 1) / n_layer; 0 when the schedule cannot
    // verify (no repair or no verify_margin).
    double repair_cost = 0.0;
};

// TuneCandidate::repair_cost of a schedule.
double verify_repair_cost(const Schedule& s, int n_layer);

// True when `a` keeps no more tokens than `b` at every layer (a is at least as aggressive).
bool at_most_as_wide(const Schedule& a, const Schedule& b, int n_layer);
// Every schedule of the space for an n_layer model: 1..max_boundaries boundaries (the first from
// first_boundary, later ones from later_boundary, strictly increasing after rounding to layers;
// with global_layers, rounded to the nearest layer a boundary may score on)
// with strictly decreasing keep fractions; duplicates removed; sorted by cost (ties: fewer
// boundaries, then boundaries, then keep), so the order is deterministic.
std::vector<TuneCandidate> enumerate_candidates(const TuneSpace& space, int n_layer);

struct TuneSampleResult {
    double score = 0.0;  // in [0, 1]
    double ttft_ms = 0.0;
    double pct_computed = 100.0;
    bool verified = false;  // the first token was a near tie and came after the repair
};

// What the search needs from the engine; tests inject a fake.
class TuneEvaluator {
public:
    virtual ~TuneEvaluator() = default;
    virtual int n_samples() const = 0;
    // Sample i under `schedule` (lazy policy), or full prefill when schedule is null.
    virtual Result<TuneSampleResult> evaluate(const Schedule* schedule, int i) = 0;
};

struct TuneOptions {
    double target = 0.99;  // of full's score
    int budget = 24;       // candidates evaluated at most (full's run not counted)
    std::function<void(std::string_view)> log;
};

struct CandidateResult {
    TuneCandidate candidate;
    bool passed = false;
    bool stopped_early = false;  // rejected or accepted before its last judged sample
    int n_evaluated = 0;
    int n_verified = 0;  // of the samples evaluated
    double score_sum = 0.0;
    double pct_sum = 0.0;
    std::vector<double> ttft_ms;  // [n_samples], NaN where not evaluated
    double mean_score() const { return n_evaluated ? score_sum / n_evaluated : 0.0; }
    double mean_pct_computed() const { return n_evaluated ? pct_sum / n_evaluated : 0.0; }
    double verified_fraction() const {
        return n_evaluated ? static_cast<double>(n_verified) / n_evaluated : 0.0;
    }
    // The cost the search ranks passing candidates by: the cuts' predicted fraction plus the
    // repairs of the samples that verified, averaged over the samples evaluated.
    double effective_cost() const {
        return candidate.cost + verified_fraction() * candidate.repair_cost;
    }
};

struct TuneResult {
    int n_samples = 0;
    int n_judged = 0;         // samples candidates are judged on (full scores > 0)
    double full_score = 0.0;  // mean over the calibration samples
    std::vector<double> full_scores, full_ttft_ms;  // [n_samples]
    int n_candidates = 0;                           // in the space
    int n_skipped = 0;  // skipped as at least as aggressive as a failed candidate
    std::vector<CandidateResult> evaluated;  // in evaluation order
    std::optional<CandidateResult> best;     // completed on every sample
    double ttft_speedup = 0.0;               // mean over samples of full's TTFT / best's TTFT
};

// Full runs on every sample first. Candidates are then judged on the samples full gets (partly)
// right, best-scored first, so a candidate that loses what full knows is rejected after few
// samples; samples full scores 0 on cannot tell schedules apart except by luck and are left out
// (which makes the rule slightly stricter: no compensating a loss with a lucky win). A
// candidate passes when its judged score sum reaches target x full's; it is stopped as soon as
// that is certain or out of reach (each remaining sample adds at most 1).
//
// Search: bisection over the cost order. Evaluate the median-cost candidate among those still
// open (predicted cheaper than the best so far and not ruled out by a failure); a pass bounds the
// cost from above by its effective cost (the repairs its verified samples ran included), a
// failure rules out every candidate at least as aggressive. The best is the passing candidate of
// least effective cost: one that verifies often can lose to a wider one that does not, whose
// predicted cost lies between the two. Without verify this finds the cheapest passing candidate
// when accuracy is monotone in the keep profile and the budget suffices. The winner is then run
// on every sample for its score, % computed, verified fraction and TTFT speedup.
Result<TuneResult> tune_schedule(TuneEvaluator& evaluator,
                                 const std::vector<TuneCandidate>& candidates, int n_layer,
                                 const TuneOptions& opts);

// What a candidate is judged on (`tune --objective`).
enum class TuneObjective {
    kScore,    // the calibration tasks' scores, >= target x full's
    kAnswers,  // full's own answers: a prompt counts when the candidate's first N greedy tokens
               // equal full's (AnswersTuneEvaluator), on >= target of the prompts
};

// "score" | "answers"; the error lists them.
Result<TuneObjective> parse_tune_objective(std::string_view name);
std::string_view tune_objective_name(TuneObjective objective);

// The engine-backed evaluator: greedy generation of prepared samples, scored.
class EngineTuneEvaluator : public TuneEvaluator {
public:
    // Prepares (chat-wraps, tokenizes) every sample once. A schedule's keep_first and
    // prune_decode go to the engine with it.
    static Result<EngineTuneEvaluator> create(const Engine& engine, std::vector<Sample> samples);
    int n_samples() const override { return static_cast<int>(samples_.size()); }
    Result<TuneSampleResult> evaluate(const Schedule* schedule, int i) override;

private:
    EngineTuneEvaluator(const Engine& engine, std::vector<Sample> samples,
                        std::vector<PreparedPrompt> prompts)
        : engine_(&engine), samples_(std::move(samples)), prompts_(std::move(prompts)) {}
    const Engine* engine_;
    std::vector<Sample> samples_;
    std::vector<PreparedPrompt> prompts_;
};

// Same answers as full (TuneObjective::kAnswers): full answers every sample greedily for
// n_tokens tokens once (its score is 1 by definition); a candidate scores 1 on a sample when
// its first n_tokens greedy tokens equal full's (greedy_common_prefix, fidelity.h), else 0.
// The samples are eval --fidelity's prompts (chat-wrapped built-in tasks).
class AnswersTuneEvaluator : public TuneEvaluator {
public:
    static Result<AnswersTuneEvaluator> create(const Engine& engine, std::vector<Sample> samples,
                                               int n_tokens);
    int n_samples() const override { return static_cast<int>(prompts_.size()); }
    Result<TuneSampleResult> evaluate(const Schedule* schedule, int i) override;

private:
    AnswersTuneEvaluator(const Engine& engine, std::vector<PreparedPrompt> prompts, int n_tokens)
        : engine_(&engine),
          prompts_(std::move(prompts)),
          n_tokens_(n_tokens),
          full_(prompts_.size()) {}
    struct FullAnswer {
        bool done = false;
        std::vector<TokenId> tokens;
        double ttft_ms = 0.0;
    };
    const Engine* engine_;
    std::vector<PreparedPrompt> prompts_;
    int n_tokens_;
    std::vector<FullAnswer> full_;  // [n_samples], filled on first use
};

// The schedule file's "meta" object: score, full_score, target, ttft_speedup, pct_computed,
// predicted_prefill_pct, verified_fraction and effective_prefill_pct (with verify),
// candidates searched and evaluated, and the calibration suite.
std::string tune_meta_json(const TuneResult& result, double target, std::string_view calibration,
                           TuneObjective objective = TuneObjective::kScore, int answer_tokens = 0);

// "layers" and "keep" flag strings of a schedule ("8,18" / "0.5,0.25").
std::string layers_string(const Schedule& s);
std::string keep_string(const Schedule& s);

}  // namespace lazyllm::eval
