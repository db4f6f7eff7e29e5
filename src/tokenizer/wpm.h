// WordPiece (tokenizer.ggml.model = "bert"), as HF tokenizers' BertNormalizer,
// BertPreTokenizer and WordPiece model run it (normalizers/bert.rs, pre_tokenizers/bert.rs,
// models/wordpiece): the text is cleaned (control characters dropped, whitespace made spaces),
// CJK ideographs are isolated, accents stripped (NFD without nonspacing marks) and letters
// lowercased; words split at whitespace with each punctuation character a word of its own; each
// word is then cut greedily into the longest vocabulary pieces from its start, and a word with
// no such cut (or over 100 characters) becomes [UNK].
//
// GGUF spells the vocabulary as llama.cpp's converter writes it: a word-initial piece with a
// leading U+2581 ("▁hello"), a continuation without BERT's "##" ("llo").
#pragma once

#include <string_view>
#include <vector>

#include "lazyllm/tokenizer.h"
#include "tokenizer/vocab.h"

namespace lazyllm::tokenizer {

class WpmModel {
public:
    // lowercase and strip_accents default to true, as in BertNormalizer (llama.cpp: strip_accents
    // follows lowercase unless its own key is present).
    explicit WpmModel(const Vocab& vocab);

    // Appends the ids of `text` (raw text between special tokens).
    void encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) const;

    // Normalizes and pre-tokenizes `text` into words of code points (exposed for tests).
    std::vector<std::vector<uint32_t>> words(std::string_view text) const;

private:
    void encode_word(const Vocab& vocab, const std::vector<uint32_t>& word, std::string& scratch,
                     std::vector<TokenId>& out) const;

    bool lowercase_ = true;
    bool strip_accents_ = true;
    TokenId unk_ = -1;
    size_t max_token_bytes_ = 0;
};

}  // namespace lazyllm::tokenizer
