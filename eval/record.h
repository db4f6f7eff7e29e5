// One evaluated (sample, policy) pair as a line of samples.jsonl: what the runner appends after
// every generation and what the reports aggregate. Lines are self-contained JSON objects so a
// run can be resumed, concatenated or inspected with jq.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lazyllm/result.h"

namespace lazyllm::eval {

struct SampleRecord {
    std::string task;
    std::string id;
    std::string prompt_sha256;  // SHA-256 (hex) of the prompt text after chat wrapping
    int64_t length = 0;         // length bucket: Sample::target_tokens
    int64_t n_prompt = 0;       // prompt tokens fed to the model
    double depth = -1.0;        // needle depth in [0, 1], -1 for tasks without one
    std::string policy;         // full | lazy | static | random | gemfilter
    std::string schedule;       // "layers=... keep=..." or "" for full
    std::string metric;
    std::string prediction;
    std::vector<std::string> answers;
    double score = 0.0;
    double ttft_ms = 0.0;
    double pct_computed = 100.0;  // % of prompt token-layers computed by the end of generation
    std::vector<int32_t> prefill_rows_per_layer;  // [n_layer]
    int64_t n_gen = 0;
    std::string stop_reason;
    bool truncated = false;  // the prompt was cut in the middle to fit the context
    // Schedule::verify_margin: the pruned prefill's first token was a near tie, so the prompt
    // was repaired before it (GenerateResult::first_token_verified).
    bool verified = false;
};

// The record as one line of JSON (no trailing newline).
std::string to_json_line(const SampleRecord& r);
// Parses a line written by to_json_line; fields other than task, id and policy may be missing.
Result<SampleRecord> parse_json_line(std::string_view line);

struct RecordFile {
    std::vector<SampleRecord> records;
    std::vector<std::string> warnings;  // lines skipped, with their line numbers
    bool ends_with_newline = true;      // false when the last line was cut short (a crash)
};
// Reads samples.jsonl; a missing file is an empty result. Lines that do not parse are skipped
// with a warning (a run killed mid-write leaves at most one such line at the end).
Result<RecordFile> read_records(const std::string& path);

}  // namespace lazyllm::eval
