// Shared pieces of the lazyllm CLI: default-model resolution, reading prompts, errors.
#pragma once

#include <string>

#include "lazyllm/result.h"

namespace lazyllm::cli {

// Exit codes (README, "Exit codes"): 0 ok; 1 the model or the run failed (model file missing
// or corrupt, I/O, non-finite logits); 2 usage: a flag, its value, or an input named on the
// command line other than the model (prompt file, schedule file) is wrong.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// -m MODEL if given, else the default model from the cache, fetched with
// scripts/fetch_model.py when missing.
Result<std::string> resolve_model_path(const std::string& flag_value);
Result<std::string> read_text_file(const std::string& path);
// Prints "lazyllm: error: <message>" and returns the exit code for the error's kind.
int report(const Error& e);
// Same message, exit code 2 whatever the error's kind (faults in the user's own input files).
int report_usage(const Error& e);

}  // namespace lazyllm::cli
