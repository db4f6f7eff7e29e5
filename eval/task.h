// Evaluation samples and metrics (design.md section 4). A Sample is one prompt with its gold
// answers and how to score it; built-in tasks generate them from a seed at a target length in
// tokens, LongBench's JSONL supplies them from files the user gives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lazyllm/result.h"
#include "lazyllm/tokenizer.h"

namespace lazyllm::eval {

// How a prediction is scored against the gold answers; names follow LongBench's metrics.py and
// RULER's string-match metrics.
enum class Metric {
    kPasskey,          // first integer in the prediction equals the key
    kStringMatchAll,   // RULER string_match_all: share of gold strings contained (any case)
    kStringMatchPart,  // RULER string_match_part: 1 if any gold string is contained
    kExactMatch,       // normalized exact match
    kQaF1,             // LongBench qa_f1_score with normalize_answer
    kRougeL,           // LongBench rouge_score (ROUGE-L F)
    kClassification,   // LongBench classification_score (all_classes)
    kRetrieval,        // LongBench retrieval_score ("Paragraph N")
    kCount,            // LongBench count_score
    kCodeSim,          // LongBench code_sim_score (edit similarity, first code line)
};
std::string_view metric_name(Metric m);
Result<Metric> parse_metric(std::string_view name);

struct Sample {
    std::string task;       // "passkey", "niah_single", "hotpotqa", ...
    std::string id;         // stable within the task (seed/length/depth or the file's _id)
    std::string prompt;     // the text fed to the model (already templated, before chat wrapping)
    bool chat = true;       // wrap in the model's chat template
    // Text that starts the model's answer (RULER's answer_prefix): appended after the chat
    // wrapping, i.e. after the assistant turn's opening, or right after `prompt` when !chat.
    // Empty for LongBench and passkey.
    std::string answer_prefix;
    std::vector<std::string> answers;
    std::vector<std::string> all_classes;  // classification tasks
    Metric metric = Metric::kExactMatch;
    int max_new_tokens = 32;
    bool first_line_only = false;  // LongBench: trec, triviaqa, samsum, lsht score the first line
    // A text whose last token ends the answer when sampled, but never as the first new token
    // (LongBench samsum: "\n", pred.py's second eos_token_id with min_length one token past the
    // prompt); "" for none.
    std::string stop_token;
    // Length bucket: built-in, the requested length; LongBench, its `length` field.
    int64_t target_tokens = 0;
    double depth = -1.0;        // needle depth in [0, 1] for retrieval tasks, -1 otherwise
};

// Score of one prediction in [0, 1]: max over the gold answers where the metric says so.
double score(const Sample& s, const std::string& prediction);

// Built-in synthetic tasks, generated deterministically from `seed`, sized with `tok` so the
// prompt (before chat wrapping) is close to `n_tokens` (within 2%), with the needle at `depth`.
// "Prompt" here is prompt + answer_prefix, counted without BOS; the sizing aims at
// [n_tokens - 1%, n_tokens] and never gives more than 2% over. `depth` in [0, 1] is the fraction
// of the filler's tokens (other needles not counted, as RULER counts haystack sentences) before
// the needle: the asked-for needle where there are several, the first assignment for vt, the gold
// document for mdqa. The same seed gives the same keys and values at every length and depth.
//   passkey            the landmark-attention format
//   niah_single        RULER single needle (a 7-digit number for a key word) in essay-like text
//   niah_multikey      RULER multi-key: several needles, one asked for
//   niah_multivalue    RULER multi-value: one key with several values, all asked for
//   vt                 RULER variable tracking (chains of assignments)
//   mdqa               synthetic multi-document QA: facts about invented people among distractors
std::vector<std::string> builtin_task_names();
Result<Sample> make_builtin(std::string_view task, int64_t n_tokens, double depth, uint64_t seed,
                            const Tokenizer& tok);

// LongBench v1 JSONL (fields input, context, answers, length, all_classes, dataset, _id): applies
// the dataset's prompt template (config/dataset2prompt.json) and max new tokens
// (dataset2maxlen.json), the chat rule (no chat template for trec, triviaqa, samsum, lsht, lcc,
// repobench-p), and truncates the middle to `max_prompt_tokens` (first half + last half of the
// tokens, decoded and joined). Errors name the file, line and field.
Result<std::vector<Sample>> load_longbench(const std::string& path, int64_t max_prompt_tokens,
                                           const Tokenizer& tok);

}  // namespace lazyllm::eval
