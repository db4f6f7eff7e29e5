// SentencePiece-style BPE (tokenizer.ggml.model = "llama": Llama 1/2, Mistral, Gemma): spaces
// become U+2581, the text starts as one symbol per UTF-8 character, and the adjacent pair whose
// concatenation is the vocabulary token with the highest score is merged (leftmost on ties)
// until no pair forms a token. Symbols that are not tokens are re-split along the merges that
// built them, and what is left falls back to byte tokens <0xXX>. This is llama.cpp's
// llm_tokenizer_spm_session (originally from llama.cpp commit 074bea2).
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "lazyllm/tokenizer.h"
#include "tokenizer/vocab.h"

namespace lazyllm::tokenizer {

class SpmModel {
public:
    explicit SpmModel(const Vocab& vocab);

    // Appends the ids of `text` (raw text; spaces are escaped here). With `prefix_space`, a
    // space is put in front first (add_space_prefix at the start or after a special token).
    void encode(const Vocab& vocab, std::string_view text, bool prefix_space,
                std::vector<TokenId>& out) const;

    // The byte a <0xXX> token stands for, or -1.
    static int parse_byte_token(std::string_view text);

private:
    std::array<TokenId, 256> byte_token_{};  // -1: no <0xXX> token and no single-byte token
};

}  // namespace lazyllm::tokenizer
