// lazyllm tune [-m MODEL] [--target 0.99] [--budget N] [-o FILE]
//   Searches boundary layers and keep fractions for the cheapest LazyLLM schedule whose score on
//   a calibration suite (built-in tasks, seeds offset from the reporting suites') stays >= target
//   x full's score, and writes it as a schedule file for run / bench / eval --schedule.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/options.h"
#include "eval/tune.h"
#include "lazyllm/engine.h"
#include "lazyllm/schedule.h"

namespace lazyllm::cli {

namespace {

struct TuneArgs {
    EngineFlags engine;
    double target = 0.99;
    int budget = 24;
    std::string out = "schedule.json";
    std::string tasks = "passkey,niah_multivalue,vt,mdqa";
    std::string lengths = "2048";
    int n_depths = 5;
    uint64_t seed = 1;
    std::string first = "0.1,0.2,0.3,0.4,0.5";
    std::string later = "0.3,0.4,0.5,0.6,0.7,0.8,0.9";
    std::string keep = "0.7,0.5,0.4,0.35,0.25,0.2,0.15,0.1";
    int max_boundaries = 3;
    std::string preset = "safe";  // the protection and score shaping the search keeps
    int keep_first = -1, keep_recent = -1, min_context = -1;  // -1: the preset's
    int score_layers = -1, score_pool = -1;                   // -1: the preset's
    std::string lazy_decode;                                  // empty: the preset's
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

int run_tune(const TuneArgs& a) {
    eval::TuneSpace space;
    auto first = parse_numbers<double>(a.first, "--first-boundaries", 0.01, 0.99);
    if (!first.ok()) return report(first.error());
    auto later = parse_numbers<double>(a.later, "--later-boundaries", 0.01, 0.99);
    if (!later.ok()) return report(later.error());
    auto keep = parse_numbers<float>(a.keep, "--keep-grid", 0.001, 1.0);
    if (!keep.ok()) return report(keep.error());
    auto lengths = parse_numbers<int64_t>(a.lengths, "--lengths", 16, 1e9);
    if (!lengths.ok()) return report(lengths.error());
    if (a.max_boundaries < 1) {
        return report(make_error(ErrorCode::kInvalidArgument, "--max-boundaries must be >= 1"));
    }
    space.first_boundary = *first;
    space.later_boundary = *later;
    space.keep = *keep;
    space.max_boundaries = a.max_boundaries;

    auto engine = load_engine(a.engine);
    if (!engine.ok()) return report(engine.error());
    const Engine& e = **engine;
    warn_task_prompts(e);
    const ModelSummary& sum = e.summary();
    const int n_layer = sum.n_layer;
    // The protection (prefix, recent window, context floor, decode steps) and the score shaping
    // come from the preset the search targets, unless given: the search is over boundaries and
    // keep fractions.
    auto preset = parse_preset(a.preset);
    if (!preset.ok()) return report(preset.error());
    auto base_or = e.resolve_schedule(PruneOptions{Policy::kLazy, *preset, {}, {}, 1});
    if (!base_or.ok()) return report(base_or.error());
    const Schedule& base = *base_or;
    auto pick = [](int flag, int preset_value) { return flag >= 0 ? flag : preset_value; };
    space.keep_first = pick(a.keep_first, base.keep_first);
    space.keep_recent = pick(a.keep_recent, base.keep_recent);
    space.min_context = pick(a.min_context, base.min_context);
    space.prune_decode = a.lazy_decode.empty() ? base.prune_decode : a.lazy_decode == "on";
    space.score_layers = pick(a.score_layers, base.score_layers);
    space.score_pool = pick(a.score_pool, base.score_pool);
    space.global_layers = sum.global_layers;

    eval::SuiteSpec suite;
    suite.tasks = split_comma_list(a.tasks);
    suite.lengths = *lengths;
    suite.n_depths = a.n_depths;
    suite.seed = a.seed + eval::kCalibrationSeedOffset;
    suite.max_prompt_tokens = e.summary().n_ctx_train - eval::kContextHeadroom;
    auto samples = eval::make_suite(suite, e.tokenizer());
    if (!samples.ok()) return report(samples.error());
    const std::string calibration =
        fmt::format("{} at {} tokens x {} depths, seed {} (reporting seed {} + {})",
                    fmt::join(suite.tasks, ","), fmt::join(suite.lengths, ","), suite.n_depths,
                    suite.seed, a.seed, eval::kCalibrationSeedOffset);
    auto evaluator = eval::EngineTuneEvaluator::create(e, std::move(samples).value());
    if (!evaluator.ok()) return report(evaluator.error());

    const auto candidates = eval::enumerate_candidates(space, n_layer);
    if (candidates.empty()) {
        return report(make_error(ErrorCode::kInvalidArgument,
                                 "the search space is empty for a {}-layer model", n_layer));
    }
    std::fprintf(stderr, "lazyllm: tuning for %s (%d layers): %s\n", e.summary().path.c_str(),
                 n_layer, calibration.c_str());
    eval::TuneOptions to;
    to.target = a.target;
    to.budget = a.budget;
    to.log = log_line;
    auto result = eval::tune_schedule(*evaluator, candidates, n_layer, to);
    if (!result.ok()) return report(result.error());
    if (!result->best) {
        return report(make_error(ErrorCode::kNotFound,
                                 "no schedule evaluated within the budget of {} keeps {} x full's "
                                 "score {:.3f}; raise --budget, lower --target or widen the grids",
                                 a.budget, a.target, result->full_score));
    }
    const eval::CandidateResult& best = *result->best;
    ScheduleFileInfo info;
    info.model = e.summary().name;
    info.n_layer = n_layer;
    info.meta_json = eval::tune_meta_json(*result, a.target, calibration);
    if (auto st = save_schedule_file(a.out, best.candidate.schedule, info); !st.ok()) {
        return report(st.error());
    }
    std::printf("schedule: %s\n", to_string(best.candidate.schedule).c_str());
    std::printf(
        "score %.3f (full %.3f, target %.2f x full), TTFT speedup %.2fx, %.1f%% of prompt "
        "token-layers computed (predicted prefill %.1f%%)\n",
        best.mean_score(), result->full_score, a.target, result->ttft_speedup,
        best.mean_pct_computed(), 100.0 * best.candidate.cost);
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
    app.add_option("--target", a->target,
                   "Keep at least this fraction of full's score (default 0.99)")
        ->check(CLI::Range(0.0, 1.0));
    app.add_option("--budget", a->budget, "Candidates evaluated at most (default 24)")
        ->check(kPositive);
    app.add_option("-o,--out", a->out, "Schedule file to write (default schedule.json)");
    app.add_option("--tasks", a->tasks, "Calibration tasks (default passkey,niah_multivalue,vt,mdqa)");
    app.add_option("--lengths", a->lengths, "Calibration prompt lengths (default 2048)");
    app.add_option("--depths", a->n_depths, "Calibration needle depths (default 5)")
        ->check(kPositive);
    app.add_option("--seed", a->seed,
                   "Reporting-suite seed; calibration uses seed + 1000000 (default 1)");
    app.add_option("--first-boundaries", a->first,
                   "Grid of first-boundary depth fractions (default 0.1,...,0.5)");
    app.add_option("--later-boundaries", a->later,
                   "Grid of later-boundary depth fractions (default 0.3,...,0.9)");
    app.add_option("--keep-grid", a->keep,
                   "Grid of cumulative keep fractions (default 0.7,0.5,0.4,0.35,0.25,0.2,0.15,0.1)");
    app.add_option("--max-boundaries", a->max_boundaries, "1 to N boundaries (default 3)");
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
    return [a] { return run_tune(*a); };
}

}  // namespace lazyllm::cli
