// The vocabulary and tokenizer settings read from GGUF metadata (tokenizer.ggml.*), validated:
// every error names the key at fault. Keys and token types follow llama.cpp's GGUF writer
// (gguf-py/gguf/constants.py: Keys.Tokenizer, TokenType).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lazyllm/result.h"
#include "lazyllm/tokenizer.h"

namespace lazyllm {
class GgufFile;
}

namespace lazyllm::tokenizer {

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
    kUndefined = 0,
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6,
};

// Hash for unordered maps keyed by std::string that also accept string_view lookups.
struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

struct Vocab {
    std::string model;                // tokenizer.ggml.model: "gpt2", "llama", "gemma4", "bert"
    std::string pre;                  // tokenizer.ggml.pre, "" when absent
    std::vector<std::string> tokens;  // [n_vocab]
    std::vector<float> scores;        // [n_vocab]; zeros when absent
    std::vector<TokenType> types;     // [n_vocab]; kNormal when absent
    std::vector<std::string> merges;  // gpt2 and gemma4 only, in rank order
    TokenMap token_to_id;             // a text that occurs twice maps to its last id (as HF)

    std::optional<TokenId> bos, eos, eot, eom, unk, pad;
    std::optional<TokenId> sep;            // bert: [SEP]; its [CLS] (cls_token_id) is `bos`
    std::optional<bool> add_bos;           // tokenizer.ggml.add_bos_token when present
    std::optional<bool> add_space_prefix;  // tokenizer.ggml.add_space_prefix when present
    std::optional<bool> add_sep;           // tokenizer.ggml.add_sep_token when present
    // tokenizer.ggml.normalizer.lowercase / .strip_accents (bert), when present.
    std::optional<bool> lowercase, strip_accents;
    std::string chat_template;  // tokenizer.chat_template, "" when absent

    int32_t n_vocab() const { return static_cast<int32_t>(tokens.size()); }
    bool is_control_like(TokenId id) const {
        return types[id] == TokenType::kControl || types[id] == TokenType::kUnknown;
    }
    std::optional<TokenId> find(std::string_view text) const {
        auto it = token_to_id.find(text);
        if (it == token_to_id.end()) return std::nullopt;
        return it->second;
    }
};

// Reads and validates the tokenizer.* keys. Does not look at merges' contents (the BPE model
// does, since it needs them resolved to ids anyway).
Result<Vocab> load_vocab(const GgufFile& gguf);

}  // namespace lazyllm::tokenizer
