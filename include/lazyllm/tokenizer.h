// Tokenizers built from GGUF metadata: byte-level BPE (tokenizer.ggml.model = "gpt2") with the
// pre-tokenizer chosen by tokenizer.ggml.pre, BPE on UTF-8 ("gemma4"), SentencePiece-style BPE
// ("llama") and WordPiece ("bert").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lazyllm/result.h"

namespace lazyllm {

class GgufFile;
using TokenId = int32_t;

enum class TokenizerKind {
    kBpe,  // "gpt2" (byte-level) and "gemma4" (UTF-8 with <0xXX> byte fallback)
    kSpm,  // "llama"
    kWpm,  // "bert" (WordPiece); encode's add_bos adds [CLS] and [SEP], as llama.cpp and HF do
};

class Tokenizer {
public:
    static Result<Tokenizer> from_gguf(const GgufFile& gguf);

    Tokenizer();
    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    ~Tokenizer();

    TokenizerKind kind() const;
    std::string_view kind_name() const;   // "gpt2 (smollm)", "llama (spm)"
    std::string_view pre() const;         // tokenizer.ggml.pre, or "" when absent
    int32_t n_vocab() const;

    // Encodes text. With parse_special, control token texts in `text` become their ids;
    // otherwise they are encoded as plain text. User-defined tokens are always matched (as HF
    // added tokens and llama.cpp do). add_bos follows tokenizer.ggml.add_bos_token when unset.
    std::vector<TokenId> encode(std::string_view text, bool parse_special = false,
                                std::optional<bool> add_bos = std::nullopt) const;
    // Bytes of one token as it appears in the output (byte tokens give their single byte, which
    // may be part of a UTF-8 sequence). Control tokens give "" unless render_special.
    std::string token_to_piece(TokenId id, bool render_special = false) const;
    // The vocabulary string of a token as stored in GGUF (for --verbose).
    const std::string& token_text(TokenId id) const;
    std::string decode(const std::vector<TokenId>& ids, bool render_special = false) const;

    std::optional<TokenId> bos() const;
    std::optional<TokenId> eos() const;
    // Tokens that end generation: eos, eot/eom when present, and templates' end markers.
    bool is_end_of_generation(TokenId id) const;
    std::optional<TokenId> find_token(std::string_view text) const;
    // tokenizer.chat_template from GGUF, or "" when absent.
    const std::string& chat_template() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Streams token pieces to text that is always whole UTF-8: bytes of an unfinished sequence are
// held back until it completes (or flushed as U+FFFD when it cannot). Unlike decode(), it keeps
// SentencePiece's leading space, since a stream continues earlier text.
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tok) : tok_(&tok) {}
    std::string push(TokenId id);  // returns the newly complete text (may be empty)
    std::string flush();           // whatever is pending, invalid bytes as U+FFFD

private:
    const Tokenizer* tok_;
    std::string pending_;
};

struct ChatMessage {
    std::string role;  // "system", "user", "assistant"
    std::string content;
};

enum class ChatFormat { kChatMl, kLlama2, kLlama3, kGemma };
// Picks the format from the GGUF's chat template text (markers it contains) and architecture.
ChatFormat detect_chat_format(const Tokenizer& tok, std::string_view architecture);
std::string_view chat_format_name(ChatFormat f);
// Renders messages; with add_generation_prompt, ends with the assistant turn's opening.
std::string apply_chat_template(ChatFormat format, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt = true);

}  // namespace lazyllm
