// Flags shared by run, bench and eval: model / threads, sampling, pruning policy and schedule.
#pragma once

#include <CLI/CLI.hpp>
#include <span>
#include <string>
#include <string_view>

#include "lazyllm/engine.h"

namespace lazyllm::cli {

struct EngineFlags {
    std::string model;
    int threads = 0;
    std::string precision = "auto";
    std::string decode = {};  // --decode-weights quant | gemm; empty: not given (quant; f32: gemm)
    std::string prefill_weights = "auto";
    bool check_tensors = false;
    std::string chat_template = {};  // --chat-template NAME; empty: the GGUF's
};
// -m (unless with_model is false: info and tokenize take the model as a positional argument
// too), -t, --precision, --decode-weights, --prefill-weights, --check-tensors.
void add_engine_flags(CLI::App& app, EngineFlags& f, bool with_model = true);
// What a load with these flags would refuse or silently change, checked before anything is
// loaded: Engine::check_options (the precision, LAZYLLM_ISA, LAZYLLM_GEMM), and
// --decode-weights quant with --precision f32 (the exact path, which decodes on the prefill
// weights). Errors name the flag or variable.
Status check_engine_flags(const EngineFlags& f);
// --precision bf16 on a CPU without AVX-512-BF16, where the bf16 GEMMs cannot run: an error
// naming `flag` and the missing feature.
Status check_precision(std::string_view precision, std::string_view flag = "--precision");
// --chat-template NAME, on the commands that render chats (run, eval, tune, serve); an unknown
// name is a usage error listing the names.
void add_chat_template_flag(CLI::App& app, EngineFlags& f);
// The one-line stderr warning when the engine's chat format is a fallback (the GGUF has no
// tokenizer.chat_template or one we do not know): which format and why.
void warn_chat_template(const Engine& e);
// A one-line warning when `ids` start with two BOS tokens (the text's own <bos> and the one the
// tokenizer adds), as llama.cpp warns.
void warn_double_bos(const Tokenizer& tok, std::span<const TokenId> ids);
// eval and tune: the chat-format warning where task prompts are wrapped (eval::wraps_chat),
// else a note that they go in as plain text.
void warn_task_prompts(const Engine& e);

// Flag validators whose messages read "must be >= 0, got -1" (CLI11's NonNegativeNumber prints
// its bound as a 300-digit double).
extern const CLI::Validator kNonNegative;
extern const CLI::Validator kPositive;
// Schedule::revive_weight: a number in (0, 1].
extern const CLI::Validator kReviveWeight;
// A value that may not be empty (an empty string would read as the flag not given).
extern const CLI::Validator kNonEmpty;

void add_sampling_flags(CLI::App& app, SamplingParams& s);
// --seed -1 (or no --seed): draws a random seed into s.seed, so that it can be printed.
void resolve_seed(SamplingParams& s);

struct PruneFlags {
    std::string lazy;    // --lazy[=safe|fast]: the preset; empty when not given
    std::string policy;  // full | lazy | lazy:safe | lazy:fast | static | random | gemfilter
    std::string layers, keep, schedule_file, lazy_decode;
    std::string revive_max;  // "N" or "all"; empty: the schedule's
    std::string repair;      // "on" | "off"; empty: the schedule's
    int keep_first = -1, keep_recent = -1, min_context = -1;
    int score_layers = -1, score_pool = -1;
    double verify_margin = -1.0;  // -1: the schedule's
    double revive_weight = -1.0;  // -1: the schedule's
    uint64_t seed = 1;
};
void add_prune_flags(CLI::App& app, PruneFlags& f);
// --lazy-decode, --lazy-revive-max, --lazy-revive-weight, --lazy-repair, --lazy-verify-margin,
// --lazy-keep-first, --lazy-keep-recent and --lazy-min-context (also on bench, which lists
// policies itself).
void add_decode_prune_flags(CLI::App& app, PruneFlags& f);
// The policies a list may name (bench --policy, eval --policies): lazy:safe and lazy:fast are
// lazy with that preset.
inline constexpr std::string_view kPolicyNames[] = {"full",   "lazy",   "lazy:safe", "lazy:fast",
                                                    "static", "random", "gemfilter"};
// --lazy-score-layers / --lazy-score-pool (prune::Schedule's score shaping); -1 when not given.
// `default_is` names what an absent flag means, for --help.
void add_score_flags(CLI::App& app, int& score_layers, int& score_pool,
                     std::string_view default_is = "the schedule's");
// --lazy / --policy and the schedule flags into PruneOptions for a model of n_layer layers
// (layer fractions and schedule files are resolved against it); errors for contradictions.
Result<PruneOptions> to_prune_options(const PruneFlags& f, int n_layer);
// The hyper-parameters of the model -m names, read from its file without loading weights.
Result<ModelSummary> inspect_model(const EngineFlags& e);
// Prompt lengths given by `flag` over the model's context of n_ctx tokens: an error naming the
// first, as bench's -p.
Status check_lengths_fit(std::span<const int64_t> lengths, int64_t n_ctx, std::string_view flag);
// to_prune_options for the model -m names (its n_layer read from the file, without loading weights).
Result<PruneOptions> to_prune_options(const PruneFlags& f, const EngineFlags& e);

// -t N within the cores this process may use (lazyllm::usable_cores): N, or those cores, with a
// warning when `warn`, where N is more (0, all cores, stays 0).
int threads_within_cores(int requested, bool warn);
// Resolves -m (default model, fetched if missing), checks the flags (check_engine_flags) and
// loads the engine with -t / --precision and --chat-template;
// -t above the cores this process may use warns and uses that many; --check-tensors checks
// the tensors for NaN / Inf first.
Result<std::unique_ptr<Engine>> load_engine(const EngineFlags& f);
// The engine options of the flags for the model at `path` (threads capped at the usable cores).
EngineOptions engine_options(const EngineFlags& f, const std::string& path);
// "a, b,,c" -> {"a", "b", "c"}: comma list items, spaces trimmed, empty items dropped.
std::vector<std::string> split_comma_list(const std::string& s);

}  // namespace lazyllm::cli
