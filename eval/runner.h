// `lazyllm eval`'s engine loop (design.md section 4): every sample under every policy, full
// first and back to back so TTFT speedups compare like with like; one JSONL record appended per
// (sample, policy) as soon as it is scored, so an interrupted run resumes where it stopped.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "eval/record.h"
#include "eval/task.h"
#include "lazyllm/engine.h"

namespace lazyllm::eval {

// The reporting suite of built-in tasks: every task x length x depth x sample.
struct SuiteSpec {
    std::vector<std::string> tasks;
    std::vector<int64_t> lengths;
    int n_depths = 10;
    int samples_per_cell = 1;
    uint64_t seed = 1;
    // If > 0: prompts are generated at most this long, so a length at the model's context
    // still leaves room for the chat template and the answer (instead of being cut in the
    // middle, needle and all). The cell keeps its requested length as its label.
    int64_t max_prompt_tokens = 0;
};

// Room kept free at the model's context for the chat template and the answer: the suite's
// prompts are sized to at most n_ctx - kContextHeadroom tokens.
inline constexpr int64_t kContextHeadroom = 128;

// passkey, niah_single, niah_multikey, niah_multivalue, vt, mdqa.
std::vector<std::string> default_tasks();
// n depths evenly spread over [0, 1] (both ends included); n == 1 gives {0.5}.
std::vector<double> depth_grid(int n_depths);
// The seed of one sample: a SplitMix64 mix of the base seed, task name, length, depth index and
// sample index, so cells differ and every cell is reproducible on its own.
uint64_t sample_seed(uint64_t base, std::string_view task, int64_t length, int depth_index,
                     int sample_index);
// Generates the suite in task, length, depth, sample order. Errors name the cell at fault.
Result<std::vector<Sample>> make_suite(const SuiteSpec& spec, const Tokenizer& tok);

struct PolicyRun {
    std::string name;    // full | lazy | static | random | gemfilter
    PruneOptions prune;  // the policy and schedule `name` stands for
};
// One run per name, in the given order but with "full" moved first. Non-full policies take the
// schedule fields of `schedule` (all of PruneOptions: layers, keep, schedule file, keep_first,
// prune_decode, score shaping, revive_max, seed);
// full takes none. "lazy:safe" / "lazy:fast" are lazy with that preset; "POLICY@FILE" is the
// policy with that schedule file (to compare schedules in one run). Errors for unknown or
// repeated names. Schedule files are read for a model of n_layer layers.
Result<std::vector<PolicyRun>> make_policy_runs(const std::vector<std::string>& names,
                                                const PruneOptions& schedule, int n_layer);

struct PreparedPrompt {
    std::string text;          // after chat wrapping
    std::vector<TokenId> ids;  // after middle truncation
    bool truncated = false;
};
// Whether chat samples are wrapped in the chat format: the GGUF has tokenizer.chat_template,
// or the format was named (--chat-template). Otherwise the model is taken for a base model,
// which continues the plain task text (it ends in the answer's lead-in).
bool wraps_chat(const Engine& engine);
// Chat-wraps the sample (engine.chat_prompt, encoded with parse_special) when sample.chat and
// wraps_chat(engine), else encodes the text plainly; then, if the prompt and the sample's new
// tokens do not fit the model's context, keeps the first and last halves of the room
// (LongBench's middle truncation).
Result<PreparedPrompt> prepare_prompt(const Engine& engine, const Sample& sample);

// Greedy generation of one prepared sample under one policy, scored.
Result<SampleRecord> evaluate_one(const Engine& engine, const Sample& sample,
                                  const PreparedPrompt& prompt, const PolicyRun& policy);

struct RunnerOptions {
    std::string out_dir;  // created if missing; holds samples.jsonl and run.json
    std::vector<PolicyRun> policies;
    int64_t limit = 0;   // only the first N samples; 0: all
    bool warmup = true;  // one short generation per policy first, so the first sample's TTFT
                         // does not carry page faults and kernel set-up
    std::function<void(std::string_view)> log;  // progress lines (stderr in the CLI)
};

struct RunnerStats {
    int64_t total = 0;    // (sample, policy) pairs in scope
    int64_t skipped = 0;  // already in samples.jsonl
    int64_t ran = 0;
    double elapsed_s = 0.0;
};

// Runs every (sample, policy) pair not yet in out_dir/samples.jsonl, keyed by (task, id,
// policy). Writes out_dir/run.json (model, threads, ISA, policies) for the reports.
Result<RunnerStats> run_eval(const Engine& engine, std::span<const Sample> samples,
                             const RunnerOptions& opts);

// "45s", "4m10s", "1h02m".
std::string format_duration(double seconds);

}  // namespace lazyllm::eval
