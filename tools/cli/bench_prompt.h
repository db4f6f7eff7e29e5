// Prompts for `lazyllm bench`: a built-in passkey-retrieval prompt of exactly N tokens (varied
// synthetic prose, a pass key at half depth, the question at the end), or a user's text / token
// ids cut or repeated to N tokens. Pruning follows the attention of the last token, so the
// prompt must look like real text with a real question, not one token repeated.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lazyllm/result.h"
#include "lazyllm/tokenizer.h"

namespace lazyllm::cli {

// Deterministic prose of at least `min_chars` characters: paragraphs of sentences drawn from
// templates with varied names, places and numbers (no sentence-level period to the text).
std::string synthetic_prose(size_t min_chars, uint64_t seed);

// The passkey prompt (landmark-attention format, as scripts/make_passkey_prompt.py) of exactly
// `n_tokens` tokens: instruction, prose with "The pass key is K..." at half depth, then
// "What is the pass key? The pass key is". Prompts shorter than the fixed parts keep the tail.
std::vector<TokenId> passkey_prompt(const Tokenizer& tok, int64_t n_tokens, uint64_t seed = 1);

// The first `n` ids, the sequence repeated as often as needed when it is shorter.
std::vector<TokenId> fit_to_length(std::span<const TokenId> ids, int64_t n);

// Token id files: integers separated by white space, commas or JSON list brackets ("1 2 3",
// "[1, 2, 3]", one per line); any other byte is an error. Written as one line "id id id ...\n".
Result<std::vector<TokenId>> read_token_ids(const std::string& path);
Status write_token_ids(const std::string& path, std::span<const TokenId> ids);

}  // namespace lazyllm::cli
