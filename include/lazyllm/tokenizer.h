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
    // A byte the vocabulary has no token for is dropped, as llama.cpp drops it
    // (unencodable_byte finds one first).
    std::vector<TokenId> encode(std::string_view text, bool parse_special = false,
                                std::optional<bool> add_bos = std::nullopt) const;
    // The offset of the first byte of `text` that encode would drop: byte-level BPE vocabularies
    // trained on UTF-8 may lack some bytes (SmolLM2's: 0xC0, 0xC1, 0xF1, 0xF2, 0xF5-0xFF and six
    // control bytes). nullopt when every byte has a token (always for SentencePiece, which falls
    // back to byte tokens or <unk>).
    std::optional<size_t> unencodable_byte(std::string_view text) const;
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
    std::vector<TokenId> end_of_generation_ids() const;
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

// The chat formats we render (src/tokenizer/chat_template.cpp), each checked byte for byte
// against its models' own Jinja templates (tests/golden/chat_templates.json).
enum class ChatFormat {
    kChatMl,           // <|im_start|>role\n...<|im_end|>\n: SmolLM2, Qwen2, Qwen2.5
    kLlama2,           // Llama-2-chat: [INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST]
    kLlama3,           // Meta-Llama-3-Instruct
    kLlama31,          // Llama 3.1 / 3.2 / 3.3 Instruct: a system turn with the dates first
    kGemma,            // Gemma 2 / 3: the system message opens the first user turn
    kMistralV0,        // Mixtral-8x7B v0.1 (Mistral-7B v0.1 / v0.2 at first): "[INST] ... [/INST]"
    kMistralV1,        // Mistral-7B-Instruct v0.1 / v0.2: " [INST] ... [/INST]"
    kMistralV3,        // Mistral-7B-Instruct v0.3: "[INST] ...[/INST]", system on the last turn
    kMistralV3Tekken,  // Mistral-Nemo: as v3 without the spaces
    kPhi3,             // Phi-3 / Phi-3.5: <|user|>\n...<|end|>\n<|assistant|>\n
    kPhi3Medium,       // Phi-3-medium (and Phi-3-mini's first): phi3 without system messages
    kDeepSeekR1,       // DeepSeek-R1 and its distills: <｜User｜>...<｜Assistant｜>
    kQwen3,            // ChatML with Qwen3's <think> handling of assistant turns
};

// A format with the data its template adds to a chat.
struct ChatTemplate {
    ChatFormat format = ChatFormat::kChatMl;
    // ChatML: the system turn the template adds when a chat has none (SmolLM2's, Qwen2.5's).
    std::string default_system = {};
    // Llama 3.1: the "Today Date" it prints, "%d %b %Y"; empty: today's (as transformers'
    // strftime_now), which Llama 3.2 / 3.3 templates use.
    std::string date = {};
    // DeepSeek-R1: what the generation prompt writes after <｜Assistant｜>: "<think>\n" (the
    // current template), "" (the first one), "<think>\n</think>" (llama.cpp's copy, which closes
    // the block unless enable_thinking is given).
    std::string assistant_prefix = {};
};

// What the model's GGUF says about its chat format.
struct ChatTemplateChoice {
    ChatTemplate tmpl;
    // The format came from tokenizer.chat_template (or was asked for by name: Engine's
    // EngineOptions::chat_template). Otherwise `tmpl` is a fallback chosen from the vocabulary
    // and architecture, and `reason` says why.
    bool recognised = false;
    std::string reason;
};

// The format of a GGUF's tokenizer.chat_template text, from markers it contains (as llama.cpp's
// llm_chat_detect_template does); nullopt when it is none we render.
std::optional<ChatTemplate> chat_template_from_text(std::string_view jinja);
// The model's format: from its template, else by the vocabulary's markers and the architecture.
ChatTemplateChoice detect_chat_template(const Tokenizer& tok, std::string_view architecture);
// One line for stderr when the choice is a fallback (naming it and why), else "".
std::string chat_template_warning(const ChatTemplateChoice& choice);

// --chat-template NAME: a format name (chat_template_names()); an unknown one is an error that
// lists them.
Result<ChatTemplate> chat_template_from_name(std::string_view name);
// "chatml, gemma, ...": the names chat_template_from_name takes.
std::string chat_template_names();
std::string_view chat_format_name(ChatFormat f);
// For `info` and warnings: the name, with the default system message or date it carries.
std::string describe_chat_template(const ChatTemplate& t);

// Renders messages; with add_generation_prompt, ends with the assistant turn's opening. The text
// never starts with BOS (encode() adds it where the vocabulary asks); encode it with
// parse_special = true.
std::string apply_chat_template(const ChatTemplate& t, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt = true);

}  // namespace lazyllm
