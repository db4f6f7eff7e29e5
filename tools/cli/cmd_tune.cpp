// lazyllm tune [-m MODEL] [--objective answers|score] [--target T] [--budget N] [-o FILE]
//   Searches boundary layers and keep fractions for the cheapest LazyLLM schedule that, on a
//   calibration suite (built-in tasks, seeds offset from the reporting suites'), keeps full's
//   greedy answers on >= T of the prompts (answers, the safe preset's objective) or >= T x
//   full's task score (score, the fast preset's), and writes it as a schedule file for run /
//   bench / eval --schedule.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/options.h"
#include "eval/fidelity.h"
#include "eval/runner.h"
#include "eval/tune.h"
#include "lazyllm/engine.h"
#include "lazyllm/schedule.h"

namespace lazyllm::cli {

namespace {

// Defaults per objective. Answers: the fidelity suite's tasks (every built-in one, chat-wrapped)
// at 1k-4k, and 80% of the prompts answered as full answers them over 32 tokens (the reporting
// bar, docs/evaluation.md, is 75%: the margin covers calibration-to-report noise). Score: every
// built-in task at 2k, 99% of full's score.
constexpr double kAnswersTarget = 0.8, kScoreTarget = 0.99;
constexpr const char* kAnswersLengths = "1024,2048,4096";
constexpr const char* kScoreTasks = "passkey,niah_single,niah_multikey,niah_multivalue,vt,mdqa";
constexpr const char* kScoreLengths = "2048";
constexpr int kAnswersDepths = 3, kScoreDepths = 5;
// The boundary grids. Answers: cuts from 20% to 80% of the depth, at most two (on both measured
// models, cuts before ~60% of the depth changed about half the answers whatever they kept, and
// the schedules that kept them had one cut, docs/lazyllm.md "Presets"). Score: the paper's
// early cuts, up to three.
constexpr const char* kAnswersFirst = "0.2,0.3,0.4,0.5,0.6,0.7,0.8";
constexpr const char* kAnswersLater = "0.4,0.5,0.6,0.7,0.8,0.9";
constexpr const char* kScoreFirst = "0.1,0.2,0.3,0.4,0.5";
constexpr const char* kScoreLater = "0.3,0.4,0.5,0.6,0.7,0.8,0.9";
constexpr int kAnswersMaxBoundaries = 2, kScoreMaxBoundaries = 3;

struct TuneArgs {
    EngineFlags engine;
    std::string objective;  // empty: answers with the safe preset, score with the fast one
    double target = -1;     // < 0: the objective's (kAnswersTarget, kScoreTarget)
    int answer_tokens = 32;
    int budget = 24;
    std::string out = "schedule.json";
    std::string tasks, lengths;  // empty: the objective's
    int n_depths = 0;            // 0: the objective's
    std::optional<uint64_t> seed;
    std::string first, later;  // empty: the objective's
    std::string keep = "0.7,0.5,0.4,0.35,0.25,0.2,0.15,0.1";
    int max_boundaries = 0;       // 0: the objective's
    std::string preset = "safe";  // the protection and score shaping the search keeps
    int keep_first = -1, keep_recent = -1, min_context = -1;  // -1: the preset's
    int score_layers = -1, score_pool = -1;                   // -1: the preset's
    std::string lazy_decode;                                  // empty: the preset's
    std::string repair;                                       // empty: the preset's
    double verify_margin = -1.0;                              // -1: the preset's
    double revive_weight = -1.0;                              // -1: the preset's
};


template <typename T>
Result<std::vector<T>> parse_numbers(const std::string& s, const char* flag, double lo, double hi) {
    std::vector<T> out;
    for (const std::string& item : split_comma_list(s)) {
        char* end = nullptr;
        const double v = std::strtod(item.c_str(), &end);
        if (end == item.c_str() || *end != '\0' || !(v >= lo && v <= hi)) {
            return make_error(ErrorCode::kInvalidArgument,
                              "{} item '{}' is not a number in [{}, {}]", flag, item, lo, hi);
        }
        out.push_back(static_cast<T>(v));
    }
    if (out.empty()) return make_error(ErrorCode::kInvalidArgument, "{} is empty", flag);
    return out;
}

void log_line(std::string_view s) {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(s.size()), s.data());
}

// The calibration suite of the objective: the fidelity suite's prompts (answers) or the task
// suite's (score), at seeds offset from the reporting suite's.
struct Calibration {
    std::vector<eval::Sample> samples;
    std::string text;  // for the log and the schedule file's meta
};

// Prompts under the searched schedules' context floor run as full whatever the candidate, so
// they would pass every candidate: they are dropped, and a suite left empty is an error.
Result<int> drop_under_floor(std::vector<eval::Sample>& samples, int min_context, const Engine& e) {
    if (min_context <= 0) return 0;
    std::vector<eval::Sample> kept;
    for (eval::Sample& s : samples) {
        LAZYLLM_ASSIGN_OR_RETURN(const eval::PreparedPrompt p, eval::prepare_prompt(e, s));
        if (std::ssize(p.ids) >= min_context) kept.push_back(std::move(s));
    }
    const int dropped = static_cast<int>(samples.size() - kept.size());
    if (kept.empty()) {
        return make_error(ErrorCode::kInvalidArgument,
                          "every calibration prompt is shorter than the context floor "
                          "(min_context {}), under which every schedule runs as full: give "
                          "--lengths of at least {} or a lower --lazy-min-context",
                          min_context, min_context);
    }
    samples = std::move(kept);
    return dropped;
}

Result<Calibration> make_calibration(const TuneArgs& a, eval::TuneObjective objective,
                                     int min_context, const Engine& e) {
    const bool answers = objective == eval::TuneObjective::kAnswers;
    LAZYLLM_ASSIGN_OR_RETURN(
        std::vector<int64_t> lengths,
        parse_numbers<int64_t>(
            a.lengths.empty() ? (answers ? kAnswersLengths : kScoreLengths) : a.lengths,
            "--lengths", 16, 1e9));
    if (!a.lengths.empty()) {
        LAZYLLM_TRY(check_lengths_fit(lengths, e.summary().n_ctx_train, "--lengths"));
    }
    std::vector<std::string> tasks =
        a.tasks.empty() ? (answers ? eval::default_tasks() : split_comma_list(kScoreTasks))
                        : split_comma_list(a.tasks);
    const int depths = a.n_depths > 0 ? a.n_depths : answers ? kAnswersDepths : kScoreDepths;
    const uint64_t seed = a.seed.value_or(answers ? eval::FidelityOptions{}.seed : 1);
    const uint64_t calibration_seed = seed + eval::kCalibrationSeedOffset;
    Calibration c;
    if (answers) {
        eval::FidelityOptions fo;
        fo.tasks = tasks;
        fo.lengths = lengths;
        fo.n_depths = depths;
        fo.seed = calibration_seed;
        LAZYLLM_ASSIGN_OR_RETURN(c.samples, eval::fidelity_suite(e, fo));
    } else {
        eval::SuiteSpec suite;
        suite.tasks = tasks;
        suite.lengths = lengths;
        suite.n_depths = depths;
        suite.seed = calibration_seed;
        suite.max_prompt_tokens = e.summary().n_ctx_train - eval::kContextHeadroom;
        LAZYLLM_ASSIGN_OR_RETURN(c.samples, eval::make_suite(suite, e.tokenizer()));
    }
    LAZYLLM_ASSIGN_OR_RETURN(const int dropped, drop_under_floor(c.samples, min_context, e));
    c.text =
        fmt::format("{} prompts: {} at {} tokens x {} depths{}, seed {} (reporting seed {} + {})",
                    c.samples.size(), fmt::join(tasks, ","), fmt::join(lengths, ","), depths,
                    answers ? " (more at a length some tasks do not fit)" : "", calibration_seed,
                    seed, eval::kCalibrationSeedOffset);
    if (dropped > 0) {
        c.text +=
            fmt::format(", {} shorter than the context floor of {} left out", dropped, min_context);
    }
    if (answers) c.text += fmt::format(", same first {} greedy tokens as full", a.answer_tokens);
    return c;
}

// The search space: the boundary and keep grids (flags or the objective's defaults), with the
// protection (prefix, recent window, context floor, decode steps) and score shaping of the
// preset the search targets unless given: the search is over boundaries and keep fractions.
Result<eval::TuneSpace> make_space(const TuneArgs& a, bool answers, Preset preset,
                                   const Engine& e) {
    auto or_default = [answers](const std::string& flag, const char* ans, const char* score) {
        return flag.empty() ? std::string(answers ? ans : score) : flag;
    };
    eval::TuneSpace space;
    LAZYLLM_ASSIGN_OR_RETURN(space.first_boundary,
                             parse_numbers<double>(or_default(a.first, kAnswersFirst, kScoreFirst),
                                                   "--first-boundaries", 0.01, 0.99));
    LAZYLLM_ASSIGN_OR_RETURN(space.later_boundary,
                             parse_numbers<double>(or_default(a.later, kAnswersLater, kScoreLater),
                                                   "--later-boundaries", 0.01, 0.99));
    LAZYLLM_ASSIGN_OR_RETURN(space.keep, parse_numbers<float>(a.keep, "--keep-grid", 0.001, 1.0));
    space.max_boundaries = a.max_boundaries > 0 ? a.max_boundaries
                           : answers            ? kAnswersMaxBoundaries
                                                : kScoreMaxBoundaries;
    LAZYLLM_ASSIGN_OR_RETURN(const Schedule base,
                             e.resolve_schedule(PruneOptions{Policy::kLazy, preset, {}, {}, 1}));
    auto pick = [](int flag, int preset_value) { return flag >= 0 ? flag : preset_value; };
    space.keep_first = pick(a.keep_first, base.keep_first);
    space.keep_recent = pick(a.keep_recent, base.keep_recent);
    space.min_context = pick(a.min_context, base.min_context);
    space.prune_decode = a.lazy_decode.empty() ? base.prune_decode : a.lazy_decode == "on";
    // As for run: decode steps that select turn the preset's repair off unless asked for.
    space.repair = a.repair.empty() ? base.repair && !space.prune_decode : a.repair == "on";
    if (space.repair && space.prune_decode) {
        return make_error(ErrorCode::kInvalidArgument,
                          "--lazy-repair on needs decode steps that do not select "
                          "(--lazy-decode off)");
    }
    // The weight goes with decode steps that select, as for run.
    space.revive_weight = a.revive_weight >= 0.0 ? static_cast<float>(a.revive_weight)
                          : space.prune_decode   ? base.revive_weight
                                                 : 1.0f;
    if (space.revive_weight != 1.0f && !space.prune_decode) {
        return make_error(ErrorCode::kInvalidArgument,
                          "--lazy-revive-weight needs decode steps that select (--lazy-decode on)");
    }
    space.verify_margin = a.verify_margin >= 0.0 ? static_cast<float>(a.verify_margin)
                          : space.repair         ? base.verify_margin
                                                 : 0.0f;
    if (space.verify_margin > 0.0f && !space.repair) {
        return make_error(ErrorCode::kInvalidArgument,
                          "--lazy-verify-margin needs repair (--lazy-repair on)");
    }
    space.score_layers = pick(a.score_layers, base.score_layers);
    space.score_pool = pick(a.score_pool, base.score_pool);
    space.global_layers = e.summary().global_layers;
    return space;
}

int run_tune(const TuneArgs& a) {
    auto preset = parse_preset(a.preset);
    if (!preset.ok()) return report(preset.error());
    auto objective =
        a.objective.empty()
            ? Result<eval::TuneObjective>(*preset == Preset::kSafe ? eval::TuneObjective::kAnswers
                                                                   : eval::TuneObjective::kScore)
            : eval::parse_tune_objective(a.objective);
    if (!objective.ok()) return report(objective.error());
    const bool answers = *objective == eval::TuneObjective::kAnswers;
    if (std::isnan(a.target)) {  // CLI11's range lets NaN through
        return report_usage(
            Error(ErrorCode::kInvalidArgument, "--target: must be a finite number, got nan"));
    }
    const double target = a.target >= 0 ? a.target : answers ? kAnswersTarget : kScoreTarget;
    // The schedule file is written after the whole search: where it goes is checked first (a
    // file or nothing yet, in a folder that takes files; a missing folder is made, as eval's).
    std::error_code ec;
    if (a.out.empty() || std::filesystem::exists(std::filesystem::symlink_status(a.out, ec))) {
        if (Status st = check_schedule_path(a.out); !st.ok()) {
            return report_usage(st.error().with_context("-o"));
        }
    }
    const std::filesystem::path out_dir = std::filesystem::path(a.out).parent_path();
    if (auto st = prepare_output_dir(out_dir.empty() ? "." : out_dir.string(), "-o"); !st.ok()) {
        return report(st.error());
    }

    auto engine = load_engine(a.engine);
    if (!engine.ok()) return report(engine.error());
    const Engine& e = **engine;
    warn_task_prompts(e);
    const int n_layer = e.summary().n_layer;
    auto space = make_space(a, answers, *preset, e);
    if (!space.ok()) return report(space.error());
    auto calibration = make_calibration(a, *objective, space->min_context, e);
    if (!calibration.ok()) return report(calibration.error());
    std::unique_ptr<eval::TuneEvaluator> evaluator;
    if (answers) {
        auto ev =
            eval::AnswersTuneEvaluator::create(e, std::move(calibration->samples), a.answer_tokens);
        if (!ev.ok()) return report(ev.error());
        evaluator = std::make_unique<eval::AnswersTuneEvaluator>(std::move(ev).value());
    } else {
        auto ev = eval::EngineTuneEvaluator::create(e, std::move(calibration->samples));
        if (!ev.ok()) return report(ev.error());
        evaluator = std::make_unique<eval::EngineTuneEvaluator>(std::move(ev).value());
    }

    const auto candidates = eval::enumerate_candidates(*space, n_layer);
    if (candidates.empty()) {
        return report(make_error(ErrorCode::kInvalidArgument,
                                 "the search space is empty for this model's {} layers", n_layer));
    }
    std::fprintf(stderr, "lazyllm: tuning for %s (%d layers), objective %s: %s\n",
                 e.summary().path.c_str(), n_layer,
                 std::string(eval::tune_objective_name(*objective)).c_str(),
                 calibration->text.c_str());
    eval::TuneOptions to;
    to.target = target;
    to.budget = a.budget;
    to.log = log_line;
    auto result = eval::tune_schedule(*evaluator, candidates, n_layer, to);
    if (!result.ok()) return report(result.error());
    if (!result->best) {
        return report(make_error(
            ErrorCode::kNotFound,
            "no schedule evaluated within the budget of {} keeps {}; raise --budget, lower "
            "--target or widen the grids",
            a.budget,
            answers ? fmt::format("full's answers on {:g} of the prompts", target)
                    : fmt::format("{:g} x full's score {:.3f}", target, result->full_score)));
    }
    const eval::CandidateResult& best = *result->best;
    ScheduleFileInfo info;
    info.model = e.summary().name;
    info.n_layer = n_layer;
    info.meta_json =
        eval::tune_meta_json(*result, target, calibration->text, *objective, a.answer_tokens);
    if (auto st = save_schedule_file(a.out, best.candidate.schedule, info); !st.ok()) {
        return report(st.error());
    }
    std::printf("schedule: %s\n", to_string(best.candidate.schedule).c_str());
    if (answers) {
        std::printf("same %d-token answers as full on %.0f of %d prompts (target %.2f), ",
                    a.answer_tokens, best.score_sum, best.n_evaluated, target);
    } else {
        std::printf("score %.3f (full %.3f, target %.2f x full), ", best.mean_score(),
                    result->full_score, target);
    }
    std::printf(
        "TTFT speedup %.2fx, %.1f%% of prompt token-layers computed (predicted prefill "
        "%.1f%%",
        result->ttft_speedup, best.mean_pct_computed(), 100.0 * best.candidate.cost);
    if (best.candidate.repair_cost > 0.0) {
        std::printf("; %d of %d prompts verified, %.1f%% with their repairs", best.n_verified,
                    best.n_evaluated, 100.0 * best.effective_cost());
    }
    std::printf(")\n");
    std::printf(
        "%zu of %d candidates evaluated, %d ruled out by failures\nwritten: %s  (use: "
        "lazyllm run --schedule %s ...)\n",
        result->evaluated.size(), result->n_candidates, result->n_skipped, a.out.c_str(),
        a.out.c_str());
    return kExitOk;
}

}  // namespace

Runner add_tune(CLI::App& app) {
    auto a = std::make_shared<TuneArgs>();
    add_engine_flags(app, a->engine);
    add_chat_template_flag(app, a->engine);
    app.add_option("--objective", a->objective,
                   "What a candidate must keep: answers (full's greedy answers, over "
                   "--answer-tokens tokens, on --target of the prompts) or score (--target x "
                   "full's task score). Default: answers with --preset safe, score with fast")
        ->check(CLI::IsMember({"answers", "score"}));
    app.add_option("--target", a->target,
                   "Fraction of the prompts whose answers stay full's (answers; default 0.8) or "
                   "of full's score (score; default 0.99)")
        ->check(CLI::Range(0.0, 1.0));
    app.add_option("--answer-tokens", a->answer_tokens,
                   "Greedy tokens compared with full's answer (answers; default 32)")
        ->check(kPositive);
    app.add_option("--budget", a->budget, "Candidates evaluated at most (default 24)")
        ->check(kPositive);
    app.add_option("-o,--out", a->out, "Schedule file to write (default schedule.json)");
    app.add_option("--tasks", a->tasks,
                   "Calibration tasks (default: every built-in task)");
    app.add_option("--lengths", a->lengths,
                   "Calibration prompt lengths (default 1024,2048,4096 for answers, 2048 for "
                   "score); prompts shorter than the context floor (--lazy-min-context) run "
                   "as full under every schedule and are left out");
    app.add_option("--depths", a->n_depths,
                   "Calibration needle depths (default 3 for answers, 5 for score)")
        ->check(kPositive);
    app.add_option("--seed", a->seed,
                   "Reporting-suite seed; calibration uses seed + 1000000 (default: eval "
                   "--fidelity's 2000000 for answers, 1 for score)")
        ->check(kNonNegative);
    app.add_option("--first-boundaries", a->first,
                   "Grid of first-boundary depth fractions (default 0.2,...,0.8 for answers, "
                   "0.1,...,0.5 for score)");
    app.add_option("--later-boundaries", a->later,
                   "Grid of later-boundary depth fractions (default 0.4,...,0.9 for answers, "
                   "0.3,...,0.9 for score)");
    app.add_option("--keep-grid", a->keep,
                   "Grid of cumulative keep fractions (default 0.7,0.5,0.4,0.35,0.25,0.2,0.15,0.1)");
    app.add_option("--max-boundaries", a->max_boundaries,
                   "1 to N boundaries (default 2 for answers, 3 for score)")
        ->check(kPositive);
    app.add_option("--preset", a->preset,
                   "The preset whose protection and score shaping every candidate keeps: safe "
                   "(default) or fast")
        ->check(CLI::IsMember({"safe", "fast"}));
    app.add_option("--lazy-keep-first", a->keep_first,
                   "Never prune the first N tokens (default: the preset's)")
        ->check(kNonNegative);
    app.add_option("--lazy-keep-recent", a->keep_recent,
                   "Never prune the last N tokens (default: the preset's)")
        ->check(kNonNegative);
    app.add_option("--lazy-min-context", a->min_context,
                   "No pruning in steps over fewer tokens (default: the preset's)")
        ->check(kNonNegative);
    add_score_flags(app, a->score_layers, a->score_pool, "the preset's");
    app.add_option("--lazy-decode", a->lazy_decode,
                   "on: prune in decode steps too; off: only revive (default: the preset's)")
        ->check(CLI::IsMember({"on", "off"}));
    app.add_option("--lazy-revive-weight", a->revive_weight,
                   "With decode steps that select: every candidate weighs the scores of tokens "
                   "a decode step would revive by X, in (0, 1] (default: the preset's)")
        ->check(kReviveWeight);
    app.add_option("--lazy-repair", a->repair,
                   "on: every candidate repairs after the first token (the answer after it is "
                   "full's whenever the first token is); off: revives (default: the preset's)")
        ->check(CLI::IsMember({"on", "off"}));
    app.add_option("--lazy-verify-margin", a->verify_margin,
                   "With repair: every candidate runs the repair before a first token that "
                   "leads the second by less than X in logits, and takes full's (default: the "
                   "preset's; 0: off)")
        ->check(kNonNegative);
    return [a] { return run_tune(*a); };
}

}  // namespace lazyllm::cli
