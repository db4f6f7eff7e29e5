// Pre-tokenizers of byte-level BPE vocabularies: regex splits chosen by tokenizer.ggml.pre, run
// with PCRE2 (UTF + UCP, JIT-compiled). A pre-tokenizer is a sequence of regexes; each one splits
// every piece left by the previous one into matches and the text between matches, all kept in
// order (HF tokenizers' Split with behavior "Isolated"; llama.cpp's unicode_regex_split).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lazyllm/result.h"

namespace lazyllm::tokenizer {

enum class PreType {
    kGpt2,           // GPT-2's regex (HF ByteLevel(use_regex=True))
    kSmollm,         // each \p{N} on its own, then GPT-2's regex (HF Digits(individual_digits) +
                     // ByteLevel): SmolLM, StarCoder
    kLlama3,         // Llama 3's regex: letters with one leading non-letter, numbers in 1..3 digits
    kQwen2,          // Qwen2's regex: Llama 3's with single digits
    kQwen35,         // Qwen3.5's: Qwen2's with combining marks (\p{M}) kept in letter runs
    kFalcon,         // punctuation runs isolated first (HF Punctuation), then GPT-2's regex, then
                     // runs of three ASCII digits
    kDeepseekLlm,    // newlines, Latin/Greek/Cyrillic.. letter runs, ASCII and full-width
                     // punctuation runs, trailing spaces, CJK runs, number runs
    kDeepseekCoder,  // newlines, letter runs, punctuation runs, CJK runs, single digits
    kGemma4,         // runs of newlines and of other text only: Gemma 4 is SentencePiece-style BPE
                     // on raw UTF-8 with spaces escaped as U+2581 (no byte-level alphabet)
};

struct PreTypeInfo {
    PreType type = PreType::kGpt2;
    bool known = true;           // false when `pre` was not recognized (GPT-2 fallback)
    bool ignore_merges = false;  // a piece that is a whole vocabulary token is emitted as-is
    bool default_add_bos = false;
    // false: tokens are raw UTF-8 (SentencePiece style: spaces escaped as U+2581 before the
    // pre-tokenizer, bytes without a token fall back to <0xXX>), not GPT-2's byte alphabet.
    bool byte_level = true;
};
// Maps tokenizer.ggml.pre to a pre-tokenizer, as llama.cpp's llama_vocab::impl::load does for
// the names listed there. Absent (""), "default" and unknown names get GPT-2's regex: the
// pre-tokenizer of HF's ByteLevel default, so an unknown vocabulary still tokenizes every input
// reversibly, though not necessarily as its own tokenizer.json would; `known` says so.
PreTypeInfo pre_type_from_name(std::string_view pre);
std::string_view pre_type_name(PreType t);

// A piece of the input: bytes [begin, end).
struct Piece {
    uint32_t begin;
    uint32_t end;
};

class PreTokenizer {
public:
    static Result<PreTokenizer> create(PreType type);

    PreTokenizer();
    PreTokenizer(PreTokenizer&&) noexcept;
    PreTokenizer& operator=(PreTokenizer&&) noexcept;
    ~PreTokenizer();

    // Splits `text` (at most 4 GiB) into pieces covering it exactly, in order. Invalid UTF-8
    // never matches a regex, so it ends up in pieces of its own. Thread-safe.
    void split(std::string_view text, std::vector<Piece>& out) const;

private:
    struct Regex;
    std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace lazyllm::tokenizer
