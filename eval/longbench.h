// LongBench helpers beyond task.h's load_longbench, for tools that build LongBench-style prompts.
#pragma once

#include <cstdint>
#include <string>

#include "lazyllm/tokenizer.h"

namespace lazyllm::eval {

// pred.py's middle truncation: when `prompt` encodes (with BOS as the tokenizer adds it) to more
// than `max_length` tokens, keeps the first and last int(max_length / 2) tokens, decodes each
// half without special tokens and joins them. `max_length` <= 0 disables it.
std::string truncate_middle(const std::string& prompt, int64_t max_length, const Tokenizer& tok);

// LongBench-E's bucket of a sample's `length` (words; eval.py scorer_e), by its lower end: 0
// (0-4k), 4000 (4-8k), 8000 (8k+). Samples are grouped by it in the reports.
int64_t length_bucket(int64_t words);

}  // namespace lazyllm::eval
