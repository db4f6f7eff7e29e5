// lazyllm eval [-m MODEL] [--tasks ...] [--lengths ...] [--depths N] [--policies ...] [-o DIR]
//   Runs built-in retrieval tasks (and LongBench files with --data) under each pruning policy,
//   appending one JSON line per (sample, policy) to DIR/samples.jsonl (resumable), then writes
//   DIR/summary.md, summary.csv and report.html.
// lazyllm eval --report-only DIR      rewrites the reports of an earlier run without running.
// lazyllm eval --fidelity [--policies lazy] [--fidelity-reference-weights copy|quant]
//                         [--fidelity-reference-precision f32|bf16|auto]
//   First-token top-1 agreement, KL(full || policy) and greedy agreement over a fixed prompt set
//   (full on a second engine with other prefill weights or precision where asked).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/options.h"
#include "eval/fidelity.h"
#include "eval/report.h"
#include "eval/runner.h"
#include "lazyllm/engine.h"

namespace lazyllm::cli {

namespace {

struct EvalArgs {
    EngineFlags engine;
    PruneFlags prune;
    std::string tasks = "passkey,niah_single,niah_multikey,niah_multivalue,vt,mdqa";
    std::string lengths = "1024,2048,4096";
    int n_depths = 10;
    int samples = 1;
    uint64_t seed = 1;
    std::string policies = "full,lazy,static,random,gemfilter";
    std::vector<std::string> data;
    int64_t max_len = 0;
    std::string out_dir;
    int64_t limit = 0;
    std::string report_only;
    bool fidelity = false;
    int greedy_tokens = 64;
    int greedy_every = 1;
    std::string reference_weights;    // --fidelity-reference-weights
    std::string reference_precision;  // --fidelity-reference-precision
    CLI::Option* tasks_opt = nullptr;
    CLI::Option* lengths_opt = nullptr;
    CLI::Option* depths_opt = nullptr;
    CLI::Option* seed_opt = nullptr;
    CLI::Option* policies_opt = nullptr;
};


Result<std::vector<int64_t>> parse_lengths(const std::string& s) {
    std::vector<int64_t> out;
    for (const std::string& item : split_comma_list(s)) {
        char* end = nullptr;
        const long long v = std::strtoll(item.c_str(), &end, 10);
        if (end == item.c_str() || *end != '\0' || v < 16) {
            return make_error(ErrorCode::kInvalidArgument,
                              "--lengths item '{}' is not a token count >= 16", item);
        }
        if (std::find(out.begin(), out.end(), v) != out.end()) {
            return make_error(ErrorCode::kInvalidArgument, "--lengths lists {} twice", v);
        }
        out.push_back(v);
    }
    if (out.empty()) return make_error(ErrorCode::kInvalidArgument, "--lengths is empty");
    return out;
}

std::string timestamped(const char* prefix) {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
    return fmt::format("results/{}-{}", prefix, buf);
}

void log_line(std::string_view s) {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(s.size()), s.data());
}


int print_reports(const std::string& dir) {
    auto summary = eval::write_reports(dir, [](std::string_view w) {
        std::fprintf(stderr, "lazyllm: warning: %.*s\n", static_cast<int>(w.size()), w.data());
    });
    if (!summary.ok()) return report(summary.error());
    std::printf("%-10s %6s %7s %13s %11s %9s\n", "policy", "n", "score", "TTFT speedup",
                "% computed", "TTFT ms");
    for (const eval::SummaryRow& r : summary->overall) {
        std::printf(
            "%-10s %6lld %7.3f %13s %10.1f%% %9.1f\n", r.policy.c_str(),
            static_cast<long long>(r.n), r.mean_score,
            std::isfinite(r.mean_speedup) ? fmt::format("{:.2f}x", r.mean_speedup).c_str() : "-",
            r.mean_pct_computed, r.mean_ttft_ms);
    }
    std::printf("\nreports: %s/summary.md, %s/summary.csv, %s/report.html\n", dir.c_str(),
                dir.c_str(), dir.c_str());
    return kExitOk;
}

int run_fidelity_cmd(const EvalArgs& a, const Engine& e,
                     const std::vector<eval::PolicyRun>& policies) {
    eval::FidelityOptions fo;
    fo.policies = policies;
    fo.greedy_tokens = a.greedy_tokens;
    fo.greedy_every = a.greedy_every;
    fo.limit = a.limit;
    fo.log = log_line;
    if (a.tasks_opt->count() > 0) fo.tasks = split_comma_list(a.tasks);
    if (a.lengths_opt->count() > 0) {
        auto l = parse_lengths(a.lengths);
        if (!l.ok()) return report(l.error());
        fo.lengths = *l;
    }
    if (a.depths_opt->count() > 0) {
        fo.n_depths = a.n_depths;
    } else {
        // At least 16 prompts per length over the tasks.
        const size_t n_tasks = std::max<size_t>(1, fo.tasks.size());
        fo.n_depths = static_cast<int>(std::max<size_t>(3, (16 + n_tasks - 1) / n_tasks));
    }
    if (a.seed_opt->count() > 0) fo.seed = a.seed;
    std::unique_ptr<Engine> reference;
    if (!a.reference_weights.empty() || !a.reference_precision.empty()) {
        EngineFlags rf = a.engine;
        if (!a.reference_weights.empty()) rf.prefill_weights = a.reference_weights;
        if (!a.reference_precision.empty()) rf.precision = a.reference_precision;
        // --decode-weights is the policies' engine's: the exact reference decodes as f32 does.
        if (rf.precision == "f32") rf.decode.clear();
        auto r = load_engine(rf);
        if (!r.ok()) return report(r.error().with_context("the --fidelity-reference-* engine"));
        reference = std::move(r).value();
        fo.reference = reference.get();
        std::fprintf(stderr,
                     "lazyllm eval: full runs on prefill weights %s, precision %s; policies on "
                     "%s, precision %s\n",
                     reference->summary().prefill_weights.c_str(), rf.precision.c_str(),
                     e.summary().prefill_weights.c_str(), a.engine.precision.c_str());
    }
    const std::string dir = a.out_dir.empty() ? timestamped("fidelity") : a.out_dir;
    if (auto st = prepare_output_dir(dir, "-o"); !st.ok()) return report(st.error());
    auto rep = eval::run_fidelity(e, fo);
    if (!rep.ok()) return report(rep.error());
    // The table first: it stays on the screen if the file cannot be written after all.
    std::printf("%s\n", eval::fidelity_table(*rep).c_str());
    std::fflush(stdout);
    const std::string path = dir + "/fidelity.json";
    if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
        const std::string json = eval::fidelity_json(*rep);
        const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
        std::fclose(f);
        if (!ok) return report(make_error(ErrorCode::kIo, "cannot write '{}'", path));
    } else {
        return report(make_error(ErrorCode::kIo, "cannot write '{}'", path));
    }
    std::printf("written: %s\n", path.c_str());
    return kExitOk;
}

int run_eval_cmd(EvalArgs& a) {
    if (!a.report_only.empty()) return print_reports(a.report_only);
    if (a.samples < 1 || a.n_depths < 1) {
        return report(make_error(ErrorCode::kInvalidArgument,
                                 "--samples and --depths must be >= 1 (got {} and {})", a.samples,
                                 a.n_depths));
    }
    // The schedule flags apply to every non-full policy; --policies replaces --policy/--lazy.
    PruneFlags pf = a.prune;
    pf.lazy.clear();
    pf.policy = "lazy";
    auto schedule = to_prune_options(pf, a.engine);
    if (!schedule.ok()) return report(schedule.error());
    std::string policy_list = a.policies;
    if (a.fidelity && a.policies_opt->count() == 0) policy_list = "lazy";
    const std::vector<std::string> policy_names = split_comma_list(policy_list);
    // The model's sizes, read without its weights: schedule files (POLICY@FILE) are read for
    // its layer count, and --lengths checked against its context before the load.
    auto model = inspect_model(a.engine);
    if (!model.ok()) return report(model.error());
    auto policies = eval::make_policy_runs(policy_names, *schedule, model->n_layer);
    if (!policies.ok()) return report_usage(policies.error());  // names and schedule files

    if (a.lengths_opt->count() > 0) {
        auto lengths = parse_lengths(a.lengths);
        if (!lengths.ok()) return report(lengths.error());
        if (auto st = check_lengths_fit(*lengths, model->n_ctx_train, "--lengths"); !st.ok()) {
            return report(st.error());
        }
    }
    if (auto st = check_engine_flags(a.engine); !st.ok()) return report(st.error());
    if (auto st = check_precision(a.reference_precision, "--fidelity-reference-precision");
        !st.ok()) {
        return report(st.error());
    }
    const std::vector<std::string> known = eval::builtin_task_names();
    const std::vector<std::string> tasks = split_comma_list(a.tasks);
    for (size_t i = 0; i < tasks.size(); ++i) {
        if (std::find(known.begin(), known.end(), tasks[i]) == known.end()) {
            return report(make_error(ErrorCode::kInvalidArgument,
                                     "--tasks: unknown built-in task '{}' (known: {})", tasks[i],
                                     fmt::join(known, ", ")));
        }
        if (std::find(tasks.begin(), tasks.begin() + static_cast<ptrdiff_t>(i), tasks[i]) !=
            tasks.begin() + static_cast<ptrdiff_t>(i)) {
            return report(
                make_error(ErrorCode::kInvalidArgument, "--tasks lists '{}' twice", tasks[i]));
        }
    }
    auto engine = load_engine(a.engine);
    if (!engine.ok()) return report(engine.error());
    const Engine& e = **engine;
    warn_task_prompts(e);
    const ModelSummary& s = e.summary();
    std::fprintf(stderr, "lazyllm: %s (%d layers), isa %s, gemm %s, %d thread%s\n", s.path.c_str(),
                 s.n_layer, s.isa.c_str(), s.gemm.c_str(), s.n_threads,
                 s.n_threads == 1 ? "" : "s");
    if (a.fidelity) return run_fidelity_cmd(a, e, *policies);

    std::vector<eval::Sample> samples;
    if (a.data.empty() || a.tasks_opt->count() > 0) {
        auto lengths = parse_lengths(a.lengths);
        if (!lengths.ok()) return report(lengths.error());
        eval::SuiteSpec spec;
        spec.tasks = split_comma_list(a.tasks);
        spec.lengths = *lengths;
        spec.n_depths = a.n_depths;
        spec.samples_per_cell = a.samples;
        spec.seed = a.seed;
        spec.max_prompt_tokens = s.n_ctx_train - eval::kContextHeadroom;
        auto suite = eval::make_suite(spec, e.tokenizer());
        if (!suite.ok()) return report(suite.error());
        samples = std::move(suite).value();
    }
    for (const std::string& path : a.data) {
        // Default: the model's context; the runner then cuts each prompt to the context minus
        // its own max new tokens (LongBench pred.py's rule).
        const int64_t max_len = a.max_len > 0 ? a.max_len : s.n_ctx_train;
        auto lb = eval::load_longbench(path, max_len, e.tokenizer());
        if (!lb.ok()) return report(lb.error());
        for (auto& sample : *lb) samples.push_back(std::move(sample));
    }
    if (samples.empty()) return report(Error(ErrorCode::kInvalidArgument, "no samples to run"));

    eval::RunnerOptions ro;
    ro.out_dir = a.out_dir.empty() ? timestamped("eval") : a.out_dir;
    if (auto st = prepare_output_dir(ro.out_dir, "-o"); !st.ok()) return report(st.error());
    ro.policies = *policies;
    ro.limit = a.limit;
    ro.log = log_line;
    auto stats = eval::run_eval(e, samples, ro);
    if (!stats.ok()) {
        const int rc = report(stats.error());
        // A run that failed on the way (not on its inputs) resumes where it stopped.
        std::error_code ec;
        const ErrorCode code = stats.error().code();
        const bool inputs = code == ErrorCode::kInvalidArgument ||
                            code == ErrorCode::kOutOfRange || code == ErrorCode::kNotFound;
        if (!inputs && std::filesystem::exists(ro.out_dir + "/samples.jsonl", ec)) {
            std::fprintf(stderr,
                         "lazyllm: finished records are kept in %s/samples.jsonl; rerun the "
                         "same command with -o %s to resume\n",
                         ro.out_dir.c_str(), ro.out_dir.c_str());
        }
        return rc;
    }
    std::fprintf(stderr, "lazyllm: %lld runs in %s (%lld already done)\n",
                 static_cast<long long>(stats->ran),
                 eval::format_duration(stats->elapsed_s).c_str(),
                 static_cast<long long>(stats->skipped));
    return print_reports(ro.out_dir);
}

}  // namespace

Runner add_eval(CLI::App& app) {
    auto a = std::make_shared<EvalArgs>();
    add_engine_flags(app, a->engine);
    add_chat_template_flag(app, a->engine);
    a->tasks_opt = app.add_option("--tasks", a->tasks,
                                  "Built-in tasks, comma list (default passkey,niah_single,"
                                  "niah_multikey,niah_multivalue,vt,mdqa)");
    a->lengths_opt = app.add_option("--lengths", a->lengths,
                                    "Prompt lengths in tokens, comma list (default 1024,2048,4096; "
                                    "--fidelity: 128,512,1024,2048,4096,8192)");
    a->depths_opt = app.add_option("--depths", a->n_depths,
                                   "Number of needle depths, evenly spread in [0, 1] (default 10; "
                                   "--fidelity: enough for 16 prompts per length over the tasks, "
                                   "at least 3)");
    CLI::Option* samples_opt =
        app.add_option("--samples", a->samples, "Samples per (task, length, depth) (default 1)");
    a->seed_opt = app.add_option("--seed", a->seed,
                                 "Seed of the built-in samples (default 1; --fidelity: 2000000)")
                      ->check(kNonNegative);
    a->policies_opt = app.add_option("--policies", a->policies,
                                     "Policies, comma list; full runs first (default full,lazy,"
                                     "static,random,gemfilter; --fidelity: lazy); lazy:safe "
                                     "and lazy:fast name a preset, POLICY@FILE runs POLICY with "
                                     "that schedule file (lazy@a.json,lazy@b.json compares two)");
    add_prune_flags(app, a->prune);
    // --policies replaces the single-policy switches of `run`.
    app.remove_option(app.get_option("--lazy"));
    app.remove_option(app.get_option("--policy"));
    CLI::Option* data_opt = app.add_option("--data", a->data, "LongBench JSONL file (repeatable)")
                                ->check(CLI::ExistingFile);
    CLI::Option* max_len_opt =
        app.add_option(
               "--max-len", a->max_len,
               "LongBench: middle-truncate prompts to N tokens (default: the model's context "
               "minus the sample's new tokens)")
            ->check(kPositive);
    app.add_option("-o,--out", a->out_dir,
                   "Results folder (default results/eval-<timestamp>; --fidelity: "
                   "results/fidelity-<timestamp>)");
    app.add_option("--limit", a->limit,
                   "Only the first N samples (quick runs; --fidelity: the first N per length; 0: "
                   "all, the default)")
        ->check(kNonNegative);
    app.add_option("--report-only", a->report_only,
                   "Write summary.md, summary.csv and report.html of an existing results folder")
        ->check(CLI::ExistingDirectory);
    app.add_flag("--fidelity", a->fidelity,
                 "Fidelity check: first-token top-1 agreement and KL(full || policy), greedy "
                 "agreement and TTFT speedup, on a fixed set of >= 16 chat-wrapped prompts per "
                 "length; writes fidelity.json (its prompts are its own: no --samples, --data "
                 "or --max-len)")
        ->excludes(samples_opt)
        ->excludes(data_opt)
        ->excludes(max_len_opt);
    app.add_option("--greedy-tokens", a->greedy_tokens,
                   "--fidelity: greedy tokens compared (default 64; 0 = off)")
        ->check(kNonNegative);
    app.add_option("--greedy-every", a->greedy_every,
                   "--fidelity: greedy comparison on every k-th prompt (default 1)")
        ->check(kPositive);
    app.add_option("--fidelity-reference-weights", a->reference_weights,
                   "--fidelity: run full on a second engine with these prefill weights (copy, "
                   "quant) and compare every policy with it, full on --prefill-weights "
                   "included: e.g. --policies full --prefill-weights quant "
                   "--fidelity-reference-weights copy")
        ->check(CLI::IsMember({"auto", "copy", "quant"}));
    app.add_option("--fidelity-reference-precision", a->reference_precision,
                   "--fidelity: run full on a second engine with this precision and compare "
                   "every policy with it: e.g. --policies full --fidelity-reference-precision "
                   "f32 (what bf16 GEMMs and attention change)")
        ->check(CLI::IsMember({"auto", "f32", "bf16"}));
    return [a] { return run_eval_cmd(*a); };
}

}  // namespace lazyllm::cli
