#include "eval/tune.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "eval/fidelity.h"

namespace lazyllm::eval {

namespace {

constexpr double kEps = 1e-9;

// All increasing index subsets of size k of [0, n).
void combinations(int n, int k, int start, std::vector<int>& cur,
                  std::vector<std::vector<int>>& out) {
    if (static_cast<int>(cur.size()) == k) {
        out.push_back(cur);
        return;
    }
    for (int i = start; i < n; ++i) {
        cur.push_back(i);
        combinations(n, k, i + 1, cur, out);
        cur.pop_back();
    }
}

std::vector<std::vector<int>> combinations(int n, int k) {
    std::vector<std::vector<int>> out;
    std::vector<int> cur;
    if (k >= 0 && k <= n) combinations(n, k, 0, cur, out);
    return out;
}

std::string describe(const Schedule& s) { return to_string(s); }

// Every sample chat-wrapped and tokenized once (prepare_prompt), in order.
Result<std::vector<PreparedPrompt>> prepare_all(const Engine& engine,
                                                const std::vector<Sample>& samples) {
    std::vector<PreparedPrompt> prompts;
    for (const Sample& s : samples) {
        LAZYLLM_ASSIGN_OR_RETURN(PreparedPrompt p, prepare_prompt(engine, s));
        prompts.push_back(std::move(p));
    }
    return prompts;
}

}  // namespace

double verify_repair_cost(const Schedule& s, int n_layer) {
    if (!s.repair || !(s.verify_margin > 0.0f) || s.boundaries.empty() || n_layer <= 0) {
        return 0.0;
    }
    const int from = std::clamp(s.boundaries.front() - 1, 0, n_layer);
    return static_cast<double>(n_layer - from) / n_layer;
}

bool at_most_as_wide(const Schedule& a, const Schedule& b, int n_layer) {
    const std::vector<float> pa = keep_profile(a, n_layer), pb = keep_profile(b, n_layer);
    for (size_t l = 0; l < pa.size(); ++l) {
        if (pa[l] > pb[l]) return false;
    }
    return true;
}

std::vector<TuneCandidate> enumerate_candidates(const TuneSpace& space, int n_layer) {
    std::vector<TuneCandidate> out;
    if (n_layer < 2) return out;
    // Where a boundary may go: anywhere, or within score_layers after a global layer.
    std::vector<int> allowed;
    for (int g : space.global_layers) {
        for (int b = g + 1; b <= g + std::max(space.score_layers, 1) && b < n_layer; ++b) {
            allowed.push_back(b);
        }
    }
    std::sort(allowed.begin(), allowed.end());
    allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
    if (!space.global_layers.empty() && allowed.empty()) return out;
    auto to_layer = [&](double f) {
        const int b = std::clamp(static_cast<int>(std::lround(f * n_layer)), 1, n_layer - 1);
        if (allowed.empty()) return b;
        // The nearest allowed layer; on a tie the shallower one.
        return *std::min_element(allowed.begin(), allowed.end(), [b](int x, int y) {
            return std::pair(std::abs(x - b), x) < std::pair(std::abs(y - b), y);
        });
    };
    // A boundary's stage (from the previous boundary) must hold the global layer it scores on.
    auto scores_on_global = [&](const std::vector<int>& bounds) {
        if (space.global_layers.empty()) return true;
        for (size_t j = 0; j < bounds.size(); ++j) {
            const int lo = std::max(j == 0 ? 0 : bounds[j - 1], bounds[j] - space.score_layers);
            const bool any = std::any_of(space.global_layers.begin(), space.global_layers.end(),
                                         [&](int g) { return g >= lo && g < bounds[j]; });
            if (!any) return false;
        }
        return true;
    };
    std::vector<float> keep = space.keep;
    std::sort(keep.begin(), keep.end(), std::greater<>());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    std::erase_if(keep, [](float k) { return !(k > 0.0f && k <= 1.0f); });
    std::vector<double> later = space.later_boundary;
    std::sort(later.begin(), later.end());

    std::map<std::pair<std::vector<int>, std::vector<float>>, bool> seen;
    for (int nb = 1; nb <= space.max_boundaries; ++nb) {
        const auto keep_sets = combinations(static_cast<int>(keep.size()), nb);
        for (double f1 : space.first_boundary) {
            std::vector<double> after;
            for (double f : later) {
                if (f > f1 + kEps && f < 1.0) after.push_back(f);
            }
            for (const auto& pick : combinations(static_cast<int>(after.size()), nb - 1)) {
                std::vector<int> bounds = {to_layer(f1)};
                bool increasing = true;
                for (int i : pick) {
                    const int b = to_layer(after[static_cast<size_t>(i)]);
                    increasing = increasing && b > bounds.back();
                    bounds.push_back(b);
                }
                if (!increasing || !scores_on_global(bounds)) continue;
                for (const auto& ks : keep_sets) {
                    Schedule s;
                    s.boundaries = bounds;
                    for (int i : ks) s.keep.push_back(keep[static_cast<size_t>(i)]);
                    s.keep_first = space.keep_first;
                    s.keep_recent = space.keep_recent;
                    s.min_context = space.min_context;
                    s.prune_decode = space.prune_decode;
                    s.revive_weight = space.revive_weight;
                    s.repair = space.repair;
                    s.verify_margin = space.verify_margin;
                    s.score_layers = space.score_layers;
                    s.score_pool = space.score_pool;
                    if (!seen.emplace(std::pair(s.boundaries, s.keep), true).second) continue;
                    out.push_back({s, predicted_prefill_fraction(s, n_layer),
                                   verify_repair_cost(s, n_layer)});
                }
            }
        }
    }
    // Cheapest first; on equal cost fewer boundaries first, then by boundaries and keep.
    std::sort(out.begin(), out.end(), [](const TuneCandidate& a, const TuneCandidate& b) {
        const int64_t ca = std::llround(a.cost * 1e9), cb = std::llround(b.cost * 1e9);
        if (ca != cb) return ca < cb;
        const size_t na = a.schedule.boundaries.size(), nb = b.schedule.boundaries.size();
        if (na != nb) return na < nb;
        return std::tie(a.schedule.boundaries, a.schedule.keep) <
               std::tie(b.schedule.boundaries, b.schedule.keep);
    });
    return out;
}

std::string layers_string(const Schedule& s) {
    return fmt::format("{}", fmt::join(s.boundaries, ","));
}

std::string keep_string(const Schedule& s) {
    std::string out;
    for (size_t i = 0; i < s.keep.size(); ++i)
        out += fmt::format("{}{:g}", i ? "," : "", s.keep[i]);
    return out;
}

namespace {

// One tune_schedule call (tune.h): full's pass, then the bisection over the candidates.
class TuneSearch {
public:
    TuneSearch(TuneEvaluator& evaluator, const std::vector<TuneCandidate>& candidates, int n_layer,
               const TuneOptions& opts)
        : ev_(evaluator),
          cands_(candidates),
          n_layer_(n_layer),
          opts_(opts),
          n_(evaluator.n_samples()),
          tried_(candidates.size(), false) {}

    Result<TuneResult> run() {
        if (n_ <= 0) {
            return make_error(ErrorCode::kInvalidArgument, "the calibration suite is empty");
        }
        if (!(opts_.target > 0.0 && opts_.target <= 1.0)) {
            return make_error(ErrorCode::kInvalidArgument, "target must be in (0, 1], got {}",
                              opts_.target);
        }
        if (opts_.budget < 1) {
            return make_error(ErrorCode::kInvalidArgument, "budget must be >= 1, got {}",
                              opts_.budget);
        }
        LAZYLLM_TRY(score_full());
        for (int round = 0; round < opts_.budget; ++round) {
            LAZYLLM_ASSIGN_OR_RETURN(bool searched, search_step(round));
            if (!searched) break;
        }
        for (size_t i = 0; i < cands_.size(); ++i) {
            if (!tried_[i] && ruled_out(i)) ++result_.n_skipped;
        }
        if (best_) LAZYLLM_TRY(complete_winner());
        return std::move(result_);
    }

private:
    void log(const std::string& s) const {
        if (opts_.log) opts_.log(s);
    }

    // Full on every sample; the judged samples are those it scores > 0 on, best first (ties in
    // suite order), or all of them when it scores 0 everywhere.
    Status score_full() {
        result_.n_samples = n_;
        result_.n_candidates = static_cast<int>(cands_.size());
        double full_sum = 0.0;
        // One untimed run first: the process's first generation pays first-use costs that
        // would inflate sample 0's full TTFT and so the winner's speedup over it.
        if (n_ > 0) LAZYLLM_TRY(ev_.evaluate(nullptr, 0));
        for (int i = 0; i < n_; ++i) {
            LAZYLLM_ASSIGN_OR_RETURN(TuneSampleResult r, ev_.evaluate(nullptr, i));
            full_sum += r.score;
            result_.full_scores.push_back(r.score);
            result_.full_ttft_ms.push_back(r.ttft_ms);
        }
        result_.full_score = full_sum / n_;
        const std::vector<double>& fs = result_.full_scores;
        for (int i = 0; i < n_; ++i) {
            if (fs[i] > 0.0) judged_.push_back(i);
        }
        std::stable_sort(judged_.begin(), judged_.end(),
                         [&](int a, int b) { return fs[a] > fs[b]; });
        if (judged_.empty()) {
            log("tune: warning: full scores 0 on every calibration sample, so accuracy cannot "
                "constrain the search (every candidate passes)");
            for (int i = 0; i < n_; ++i) judged_.push_back(i);
        }
        result_.n_judged = static_cast<int>(judged_.size());
        needed_ = opts_.target * full_sum;
        const bool uniform =
            std::adjacent_find(fs.begin(), fs.end(), std::not_equal_to<>()) == fs.end();
        log(fmt::format(
            "tune: full scores {:.3f} on {} samples{}; candidates are judged on the {} full "
            "scores > 0 on and need >= {:.3f} of full's {:.3f} there; {} candidates, budget {}",
            result_.full_score, n_,
            uniform ? std::string() : fmt::format(" (per sample: {:.2g})", fmt::join(fs, " ")),
            judged_.size(), needed_, full_sum, cands_.size(), opts_.budget));
        return {};
    }

    Status eval_sample(CandidateResult& c, int i) {
        LAZYLLM_ASSIGN_OR_RETURN(TuneSampleResult r, ev_.evaluate(&c.candidate.schedule, i));
        ++c.n_evaluated;
        c.n_verified += r.verified ? 1 : 0;
        c.score_sum += r.score;
        c.pct_sum += r.pct_computed;
        c.ttft_ms[static_cast<size_t>(i)] = r.ttft_ms;
        return {};
    }

    // Judged samples in order, stopping once the outcome is certain.
    Status judge(CandidateResult& c) {
        c.ttft_ms.assign(static_cast<size_t>(n_), std::numeric_limits<double>::quiet_NaN());
        for (size_t k = 0; k < judged_.size(); ++k) {
            LAZYLLM_TRY(eval_sample(c, judged_[k]));
            const auto remaining = static_cast<double>(judged_.size() - 1 - k);
            if (remaining == 0) break;
            // Scores are in [0, 1]: the best the rest can add is `remaining`.
            if (c.score_sum + remaining < needed_ - kEps || c.score_sum >= needed_ - kEps) {
                c.stopped_early = true;
                break;
            }
        }
        c.passed = c.score_sum >= needed_ - kEps;
        return {};
    }

    bool ruled_out(size_t i) const {
        for (size_t f : failed_) {
            if (at_most_as_wide(cands_[i].schedule, cands_[f].schedule, n_layer_)) return true;
        }
        return false;
    }

    // Judges the median-cost open candidate; false when none is open.
    Result<bool> search_step(int round) {
        std::vector<size_t> open;
        for (size_t i = 0; i < cands_.size(); ++i) {
            if (tried_[i]) continue;
            // A candidate's effective cost is at least its predicted one.
            if (best_cost_ && cands_[i].cost >= *best_cost_ - kEps) continue;
            if (ruled_out(i)) continue;
            open.push_back(i);
        }
        if (open.empty()) return false;
        const size_t pick = open[open.size() / 2];
        tried_[pick] = true;
        CandidateResult c;
        c.candidate = cands_[pick];
        LAZYLLM_TRY(judge(c));
        const std::string verified = c.candidate.repair_cost > 0.0
                                         ? fmt::format(", {} verified: {:.1f}% with their repairs",
                                                       c.n_verified, 100.0 * c.effective_cost())
                                         : std::string();
        log(
            fmt::format("tune: [{}/{}] {} (predicted {:.1f}% computed): {} after {}/{} judged "
                        "samples{}, score {:.2f} of {:.2f} needed; {} open",
                        round + 1, opts_.budget, describe(c.candidate.schedule),
                        100.0 * c.candidate.cost, c.passed ? "pass" : "fail", c.n_evaluated,
                        judged_.size(), verified, c.score_sum, needed_, open.size() - 1));
        if (c.passed) {
            // The least effective cost so far wins (ties: the earlier, predicted cheaper).
            if (!best_cost_ || c.effective_cost() < *best_cost_ - kEps) {
                best_ = pick;
                best_cost_ = c.effective_cost();
            }
        } else {
            failed_.push_back(pick);
        }
        result_.evaluated.push_back(std::move(c));
        return true;
    }

    // The winner on every sample, for its score, % computed and TTFT speedup.
    Status complete_winner() {
        const Schedule& best = cands_[*best_].schedule;
        auto it = std::find_if(
            result_.evaluated.begin(), result_.evaluated.end(), [&](const CandidateResult& c) {
                return c.passed && c.candidate.schedule.boundaries == best.boundaries &&
                       c.candidate.schedule.keep == best.keep;
            });
        CandidateResult winner = *it;
        for (int i = 0; i < n_; ++i) {
            if (std::isnan(winner.ttft_ms[static_cast<size_t>(i)])) {
                LAZYLLM_TRY(eval_sample(winner, i));
            }
        }
        double sp = 0.0;
        for (int i = 0; i < n_; ++i) {
            sp += result_.full_ttft_ms[static_cast<size_t>(i)] /
                  std::max(winner.ttft_ms[static_cast<size_t>(i)], 1e-9);
        }
        result_.ttft_speedup = sp / n_;
        result_.best = std::move(winner);
        return {};
    }

    TuneEvaluator& ev_;
    const std::vector<TuneCandidate>& cands_;
    const int n_layer_;
    const TuneOptions& opts_;
    const int n_;
    TuneResult result_;
    std::vector<int> judged_;
    double needed_ = 0.0;
    std::vector<bool> tried_;
    std::vector<size_t> failed_;
    std::optional<size_t> best_;
    std::optional<double> best_cost_;  // best_'s effective cost on its judged samples
};

}  // namespace

Result<TuneResult> tune_schedule(TuneEvaluator& evaluator,
                                 const std::vector<TuneCandidate>& candidates, int n_layer,
                                 const TuneOptions& opts) {
    return TuneSearch(evaluator, candidates, n_layer, opts).run();
}

std::string tune_meta_json(const TuneResult& result, double target, std::string_view calibration,
                           TuneObjective objective, int answer_tokens) {
    nlohmann::json j;
    j["tool"] = "lazyllm tune";
    j["objective"] = std::string(tune_objective_name(objective));
    if (objective == TuneObjective::kAnswers) j["answer_tokens"] = answer_tokens;
    j["calibration"] = std::string(calibration);
    j["calibration_samples"] = result.n_samples;
    j["judged_samples"] = result.n_judged;
    j["target"] = target;
    j["full_score"] = result.full_score;
    if (result.best) {
        j["score"] = result.best->mean_score();
        j["ttft_speedup"] = result.ttft_speedup;
        j["pct_computed"] = result.best->mean_pct_computed();
        j["predicted_prefill_pct"] = 100.0 * result.best->candidate.cost;
        if (result.best->candidate.repair_cost > 0.0) {
            j["verified_fraction"] = result.best->verified_fraction();
            j["effective_prefill_pct"] = 100.0 * result.best->effective_cost();
        }
    }
    j["candidates"] = result.n_candidates;
    j["candidates_evaluated"] = result.evaluated.size();
    return j.dump();
}

Result<EngineTuneEvaluator> EngineTuneEvaluator::create(const Engine& engine,
                                                        std::vector<Sample> samples) {
    LAZYLLM_ASSIGN_OR_RETURN(std::vector<PreparedPrompt> prompts, prepare_all(engine, samples));
    return EngineTuneEvaluator(engine, std::move(samples), std::move(prompts));
}

Result<TuneSampleResult> EngineTuneEvaluator::evaluate(const Schedule* schedule, int i) {
    if (i < 0 || i >= n_samples()) {
        return make_error(ErrorCode::kOutOfRange, "calibration sample {} of {}", i, n_samples());
    }
    PolicyRun policy;
    policy.name = schedule ? "lazy" : "full";
    policy.prune.policy = schedule ? Policy::kLazy : Policy::kFull;
    if (schedule) policy.prune.schedule = *schedule;
    const size_t k = static_cast<size_t>(i);
    LAZYLLM_ASSIGN_OR_RETURN(SampleRecord rec,
                             evaluate_one(*engine_, samples_[k], prompts_[k], policy));
    return TuneSampleResult{rec.score, rec.ttft_ms, rec.pct_computed, rec.verified};
}

Result<TuneObjective> parse_tune_objective(std::string_view name) {
    if (name == "score") return TuneObjective::kScore;
    if (name == "answers") return TuneObjective::kAnswers;
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown tune objective '{}' (expected score or answers)", name);
}

std::string_view tune_objective_name(TuneObjective objective) {
    return objective == TuneObjective::kAnswers ? "answers" : "score";
}

Result<AnswersTuneEvaluator> AnswersTuneEvaluator::create(const Engine& engine,
                                                          std::vector<Sample> samples,
                                                          int n_tokens) {
    if (n_tokens < 1) {
        return make_error(ErrorCode::kInvalidArgument, "answer tokens must be >= 1, got {}",
                          n_tokens);
    }
    LAZYLLM_ASSIGN_OR_RETURN(std::vector<PreparedPrompt> prompts, prepare_all(engine, samples));
    return AnswersTuneEvaluator(engine, std::move(prompts), n_tokens);
}

Result<TuneSampleResult> AnswersTuneEvaluator::evaluate(const Schedule* schedule, int i) {
    if (i < 0 || i >= n_samples()) {
        return make_error(ErrorCode::kOutOfRange, "calibration sample {} of {}", i, n_samples());
    }
    const size_t k = static_cast<size_t>(i);
    FullAnswer& full = full_[k];
    // Full's own call runs it again (its first call may be the untimed warm-up); a schedule's
    // call compares with the kept answer.
    if (!full.done || schedule == nullptr) {
        LAZYLLM_ASSIGN_OR_RETURN(
            GenerateResult g,
            engine_->generate(prompts_[k].ids, greedy_run_options(PruneOptions{}, n_tokens_)));
        full = FullAnswer{true, std::move(g.tokens), g.ttft_ms};
    }
    if (schedule == nullptr) return TuneSampleResult{1.0, full.ttft_ms, 100.0};
    PruneOptions prune;
    prune.policy = Policy::kLazy;
    prune.schedule = *schedule;
    LAZYLLM_ASSIGN_OR_RETURN(
        GenerateResult g, engine_->generate(prompts_[k].ids, greedy_run_options(prune, n_tokens_)));
    const bool same = greedy_common_prefix(full.tokens, g.tokens, n_tokens_) == n_tokens_;
    return TuneSampleResult{same ? 1.0 : 0.0, g.ttft_ms, 100.0 * g.prefill_fraction_computed,
                            g.first_token_verified};
}

}  // namespace lazyllm::eval
