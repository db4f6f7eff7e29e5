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
                    s.score_layers = space.score_layers;
                    s.score_pool = space.score_pool;
                    if (!seen.emplace(std::pair(s.boundaries, s.keep), true).second) continue;
                    out.push_back({s, predicted_prefill_fraction(s, n_layer)});
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

Result<TuneResult> tune_schedule(TuneEvaluator& evaluator,
                                 const std::vector<TuneCandidate>& candidates, int n_layer,
                                 const TuneOptions& opts) {
    auto log = [&opts](const std::string& s) {
        if (opts.log) opts.log(s);
    };
    const int n = evaluator.n_samples();
    if (n <= 0) return make_error(ErrorCode::kInvalidArgument, "the calibration suite is empty");
    if (!(opts.target > 0.0 && opts.target <= 1.0)) {
        return make_error(ErrorCode::kInvalidArgument, "target must be in (0, 1], got {}",
                          opts.target);
    }
    if (opts.budget < 1) {
        return make_error(ErrorCode::kInvalidArgument, "budget must be >= 1, got {}", opts.budget);
    }
    TuneResult result;
    result.n_samples = n;
    result.n_candidates = static_cast<int>(candidates.size());
    double full_sum = 0.0;
    for (int i = 0; i < n; ++i) {
        LAZYLLM_ASSIGN_OR_RETURN(TuneSampleResult r, evaluator.evaluate(nullptr, i));
        full_sum += r.score;
        result.full_scores.push_back(r.score);
        result.full_ttft_ms.push_back(r.ttft_ms);
    }
    result.full_score = full_sum / n;
    // Judged samples: those full scores > 0 on, best first (ties in suite order).
    std::vector<int> judged;
    for (int i = 0; i < n; ++i) {
        if (result.full_scores[i] > 0.0) judged.push_back(i);
    }
    std::stable_sort(judged.begin(), judged.end(),
                     [&](int a, int b) { return result.full_scores[a] > result.full_scores[b]; });
    if (judged.empty()) {
        log("tune: warning: full scores 0 on every calibration sample, so accuracy cannot "
            "constrain the search (every candidate passes)");
        for (int i = 0; i < n; ++i) judged.push_back(i);
    }
    result.n_judged = static_cast<int>(judged.size());
    const double needed = opts.target * full_sum;
    const bool uniform = std::adjacent_find(result.full_scores.begin(), result.full_scores.end(),
                                            std::not_equal_to<>()) == result.full_scores.end();
    log(fmt::format(
        "tune: full scores {:.3f} on {} samples{}; candidates are judged on the {} full scores "
        "> 0 on and need >= {:.3f} of full's {:.3f} there; {} candidates, budget {}",
        result.full_score, n,
        uniform ? std::string()
                : fmt::format(" (per sample: {:.2g})", fmt::join(result.full_scores, " ")),
        judged.size(), needed, full_sum, candidates.size(), opts.budget));

    auto eval_sample = [&](CandidateResult& c, int i) -> Status {
        LAZYLLM_ASSIGN_OR_RETURN(TuneSampleResult r, evaluator.evaluate(&c.candidate.schedule, i));
        ++c.n_evaluated;
        c.score_sum += r.score;
        c.pct_sum += r.pct_computed;
        c.ttft_ms[static_cast<size_t>(i)] = r.ttft_ms;
        return {};
    };
    // Judged samples in order, stopping once the outcome is certain.
    auto judge = [&](CandidateResult& c) -> Status {
        c.ttft_ms.assign(static_cast<size_t>(n), std::numeric_limits<double>::quiet_NaN());
        for (size_t k = 0; k < judged.size(); ++k) {
            LAZYLLM_TRY(eval_sample(c, judged[k]));
            const auto remaining = static_cast<double>(judged.size() - 1 - k);
            if (remaining == 0) break;
            // Scores are in [0, 1]: the best the rest can add is `remaining`.
            if (c.score_sum + remaining < needed - kEps || c.score_sum >= needed - kEps) {
                c.stopped_early = true;
                break;
            }
        }
        c.passed = c.score_sum >= needed - kEps;
        return {};
    };

    std::vector<bool> tried(candidates.size(), false);
    std::vector<size_t> failed;
    std::optional<size_t> best;
    auto ruled_out = [&](size_t i) {
        for (size_t f : failed) {
            if (at_most_as_wide(candidates[i].schedule, candidates[f].schedule, n_layer))
                return true;
        }
        return false;
    };
    for (int round = 0; round < opts.budget; ++round) {
        std::vector<size_t> open;
        for (size_t i = 0; i < candidates.size(); ++i) {
            if (tried[i]) continue;
            if (best && candidates[i].cost >= candidates[*best].cost - kEps) continue;
            if (ruled_out(i)) continue;
            open.push_back(i);
        }
        if (open.empty()) break;
        const size_t pick = open[open.size() / 2];
        tried[pick] = true;
        CandidateResult c;
        c.candidate = candidates[pick];
        LAZYLLM_TRY(judge(c));
        log(
            fmt::format("tune: [{}/{}] {} (predicted {:.1f}% computed): {} after {}/{} judged "
                        "samples, score {:.2f} of {:.2f} needed; {} open",
                        round + 1, opts.budget, describe(c.candidate.schedule),
                        100.0 * c.candidate.cost, c.passed ? "pass" : "fail", c.n_evaluated,
                        judged.size(), c.score_sum, needed, open.size() - 1));
        if (c.passed) {
            best = pick;
        } else {
            failed.push_back(pick);
        }
        result.evaluated.push_back(std::move(c));
    }
    for (size_t i = 0; i < candidates.size(); ++i) {
        if (!tried[i] && ruled_out(i)) ++result.n_skipped;
    }
    if (!best) return result;

    // Complete the winner on every sample for its score, % computed and TTFT.
    auto it = std::find_if(
        result.evaluated.begin(), result.evaluated.end(), [&](const CandidateResult& c) {
            return c.passed &&
                   c.candidate.schedule.boundaries == candidates[*best].schedule.boundaries &&
                   c.candidate.schedule.keep == candidates[*best].schedule.keep;
        });
    CandidateResult winner = *it;
    for (int i = 0; i < n; ++i) {
        if (std::isnan(winner.ttft_ms[static_cast<size_t>(i)])) LAZYLLM_TRY(eval_sample(winner, i));
    }
    double sp = 0.0;
    for (int i = 0; i < n; ++i) {
        sp += result.full_ttft_ms[static_cast<size_t>(i)] /
              std::max(winner.ttft_ms[static_cast<size_t>(i)], 1e-9);
    }
    result.ttft_speedup = sp / n;
    result.best = std::move(winner);
    return result;
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
    return TuneSampleResult{rec.score, rec.ttft_ms, rec.pct_computed};
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
    if (!full.done) {
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
    return TuneSampleResult{same ? 1.0 : 0.0, g.ttft_ms, 100.0 * g.prefill_fraction_computed};
}

}  // namespace lazyllm::eval
