#include "tokenizer/pretokenize.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <string>
#include <string_view>

#include "base/check.h"

namespace lazyllm::tokenizer {
namespace {

// GPT-2's pattern as HF tokenizers' ByteLevel pre-tokenizer writes it (byte_level.rs); openai's
// encoder.py has the same alternatives.
constexpr const char* kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Llama 3's tokenizer.json Split pattern (meta-llama/Meta-Llama-3-8B), also in llama.cpp's
// LLAMA_VOCAB_PRE_TYPE_LLAMA3 comment.
constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2's tokenizer.json Split pattern: Llama 3's with one digit per piece.
constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen3.5's tokenizer.json Split pattern (llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN35 comment):
// letter runs take combining marks, and the punctuation alternative excludes them.
constexpr const char* kQwen35Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N})"
    R"(| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Falcon (tiiuae/falcon-7b tokenizer.json): Punctuation(contiguous) first, whose character test
// is Rust's is_ascii_punctuation || general category P, i.e. \p{P} plus the nine ASCII symbols
// below; then ByteLevel's GPT-2 regex; then Split("[0-9][0-9][0-9]", isolated). The same
// sequence as llama.cpp's LLAMA_VOCAB_PRE_TYPE_FALCON.
constexpr const char* kFalconPunctRegex = R"([\p{P}$+<=>^~|`]+)";
constexpr const char* kThreeDigitsRegex = R"([0-9][0-9][0-9])";
// DeepSeek LLM (deepseek-ai/deepseek-llm-7b-base tokenizer.json), as llama.cpp's
// LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_LLM lists it: the letter class is the tokenizer's own list of
// Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee ... ranges. `\z`: the end of the piece
// (the tokenizer's `$`; newlines are already pieces of their own).
constexpr const char* kNewlineRegex = R"([\r\n])";
constexpr const char* kDeepseekLlmLetterRegex =
    R"(\s?[A-Za-z\x{b5}\x{c0}-\x{d6}\x{d8}-\x{f6}\x{f8}-\x{1ba}\x{1bc}-\x{1bf}\x{1c4}-\x{293})"
    R"(\x{295}-\x{2af}\x{370}-\x{373}\x{376}\x{377}\x{37b}-\x{37d}\x{37f}\x{386}\x{388}-\x{38a})"
    R"(\x{38c}\x{38e}-\x{3a1}\x{3a3}-\x{3f5}\x{3f7}-\x{481}\x{48a}-\x{52f}\x{531}-\x{556})"
    R"(\x{10a0}-\x{10c5}\x{13a0}-\x{13f5}\x{13f8}-\x{13fd}\x{1c90}-\x{1cba}\x{1cbd}-\x{1cbf})"
    R"(\x{1d00}-\x{1d2b}\x{1d6b}-\x{1d77}\x{1d79}-\x{1d9a}\x{1e00}-\x{1f15}\x{1f18}-\x{1f1d})"
    R"(\x{1f20}-\x{1f45}\x{1f48}-\x{1f4d}\x{1f50}-\x{1f57}\x{1f59}\x{1f5b}\x{1f5d})"
    R"(\x{1f5f}-\x{1f7d}\x{1f80}-\x{1fb4}\x{1fb6}-\x{1fbc}\x{1fbe}\x{1fc2}-\x{1fc4})"
    R"(\x{1fc6}-\x{1fcc}\x{1fd0}-\x{1fd3}\x{1fd6}-\x{1fdb}\x{1fe0}-\x{1fec}\x{1ff2}-\x{1ff4})"
    R"(\x{1ff6}-\x{1ffc}\x{2102}\x{2107}\x{210a}-\x{2113}\x{2115}\x{2119}-\x{211d}\x{2124})"
    R"(\x{2126}\x{2128}\x{212a}-\x{212d}\x{212f}-\x{2134}\x{2139}\x{213c}-\x{213f})"
    R"(\x{2145}-\x{2149}\x{214e}\x{2183}\x{2184}\x{2c00}-\x{2c7b}\x{2c7e}-\x{2ce4})"
    R"(\x{2ceb}-\x{2cee}\x{2cf2}\x{2cf3}\x{a640}-\x{a66d}\x{a680}-\x{a69b}\x{a722}-\x{a76f})"
    R"(\x{a771}-\x{a787}\x{a78b}-\x{a78e}\x{ab70}-\x{abbf}\x{fb00}-\x{fb06}\x{fb13}-\x{fb17})"
    R"(\x{ff21}-\x{ff3a}\x{ff41}-\x{ff5a}\x{10400}-\x{1044f}\x{104b0}-\x{104d3})"
    R"(\x{104d8}-\x{104fb}\x{10c80}-\x{10cb2}\x{10cc0}-\x{10cf2}\x{118a0}-\x{118df})"
    R"(\x{1e900}-\x{1e943}]+)";
constexpr const char* kDeepseekLlmPunctRegex =
    R"(\s?[!-/:-~\x{ff01}-\x{ff0f}\x{ff1a}-\x{ff5e}\x{2018}-\x{201f}\x{3000}-\x{3002}]+)";
constexpr const char* kTrailingSpaceRegex = R"(\s+\z)";
constexpr const char* kCjkRegex = R"([\x{4e00}-\x{9fa5}\x{800}-\x{4e00}\x{ac00}-\x{d7ff}]+)";
constexpr const char* kNumberRunRegex = R"(\p{N}+)";
// DeepSeek Coder (deepseek-ai/deepseek-coder-6.7b-base), llama.cpp's
// LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_CODER.
constexpr const char* kLetterRunRegex = R"(\s?\p{L}+)";
constexpr const char* kPunctRunRegex = R"(\s?\p{P}+)";
// Gemma 4: llama.cpp's LLAMA_VOCAB_PRE_TYPE_GEMMA4 (merges never cross a newline).
constexpr const char* kNewlineRunsRegex = R"([^\n]+|\n+)";
// HF Digits(individual_digits=true): Rust char::is_numeric, i.e. general category N.
constexpr const char* kDigitRegex = R"(\p{N})";

// HF's regexes run on Oniguruma, whose Unicode \s is U+0009-000D, U+0085 and category Z; PCRE2's
// (with UCP) also takes U+180E (MONGOLIAN VOWEL SEPARATOR, Cf), which split "\u180e'll" apart
// where HF keeps "\u180e'" whole. \s and \S are written out as Oniguruma's class.
std::string with_onig_spaces(std::string_view pattern) {
    constexpr std::string_view kSpace = R"(\t-\r\x{85}\p{Z})";
    std::string out;
    bool in_class = false;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const char e = pattern[++i];
            if (e == 's') {
                out += in_class ? std::string(kSpace) : "[" + std::string(kSpace) + "]";
            } else if (e == 'S') {
                LAZYLLM_CHECK_MSG(!in_class, "\\S inside a character class");
                out += "[^" + std::string(kSpace) + "]";
            } else {
                out += c;
                out += e;
            }
            continue;
        }
        if (c == '[') in_class = true;
        if (c == ']') in_class = false;
        out += c;
    }
    return out;
}

}  // namespace

struct PreTokenizer::Regex {
    pcre2_code* code = nullptr;
    bool jit = false;

    ~Regex() {
        if (code != nullptr) pcre2_code_free(code);
    }

    static Result<std::unique_ptr<Regex>> compile(const char* pattern) {
        auto r = std::make_unique<Regex>();
        int err = 0;
        PCRE2_SIZE err_off = 0;
        // UCP: \s, \p{..} and caseless matching by Unicode properties, as HF's onig regexes.
        // MATCH_INVALID_UTF: invalid UTF-8 in the input is never matched instead of an error.
        const uint32_t opts = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
        const std::string onig = with_onig_spaces(pattern);
        r->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(onig.c_str()), PCRE2_ZERO_TERMINATED,
                                opts, &err, &err_off, nullptr);
        if (r->code == nullptr) {
            std::array<PCRE2_UCHAR, 256> msg{};
            pcre2_get_error_message(err, msg.data(), msg.size());
            return make_error(ErrorCode::kInternal, "pre-tokenizer regex '{}' at {}: {}", pattern,
                              err_off, reinterpret_cast<const char*>(msg.data()));
        }
        r->jit = pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE) == 0;
        return r;
    }

    int match(const char* subject, size_t len, size_t offset, pcre2_match_data* md) const {
        const auto* s = reinterpret_cast<PCRE2_SPTR>(subject);
        if (jit) {
            int rc = pcre2_jit_match(code, s, len, offset, 0, md, nullptr);
            if (rc != PCRE2_ERROR_JIT_STACKLIMIT) return rc;
            // Very long runs can exhaust JIT's 32 KiB machine stack; the interpreter keeps its
            // backtracking state on the heap instead.
        }
        return pcre2_match(code, s, len, offset, PCRE2_NO_JIT, md, nullptr);
    }

    // Appends the pieces of text[piece]: matches and the gaps between them.
    void split(std::string_view text, Piece piece, pcre2_match_data* md,
               std::vector<Piece>& out) const {
        const char* subject = text.data() + piece.begin;
        const size_t len = piece.end - piece.begin;
        size_t gap_begin = 0;
        size_t offset = 0;
        while (offset < len) {
            const int rc = match(subject, len, offset, md);
            // No match, or a matching error (limits): the rest stays one piece.
            if (rc < 0) break;
            const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
            const size_t s = ov[0];
            const size_t e = ov[1];
            if (e == s) {  // an empty match (none of our patterns has one): step past it
                offset = s + 1;
                continue;
            }
            if (s > gap_begin) {
                out.push_back({piece.begin + static_cast<uint32_t>(gap_begin),
                               piece.begin + static_cast<uint32_t>(s)});
            }
            out.push_back(
                {piece.begin + static_cast<uint32_t>(s), piece.begin + static_cast<uint32_t>(e)});
            gap_begin = offset = e;
        }
        if (gap_begin < len) {
            out.push_back({piece.begin + static_cast<uint32_t>(gap_begin), piece.end});
        }
    }
};

PreTypeInfo pre_type_from_name(std::string_view pre) {
    PreTypeInfo info;
    // Names from llama.cpp's llama-vocab.cpp (load) for the regexes implemented here.
    if (pre == "smollm" || pre == "starcoder" || pre == "refact" || pre == "command-r" ||
        pre == "codeshell" || pre == "exaone" || pre == "minerva-7b") {
        info.type = PreType::kSmollm;
    } else if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" ||
               pre == "pixtral") {
        info.type = PreType::kLlama3;
        info.ignore_merges = true;
        info.default_add_bos = true;
    } else if (pre == "dbrx" || pre == "smaug-bpe") {
        info.type = PreType::kLlama3;
    } else if (pre == "qwen2" || pre == "deepseek-r1-qwen" || pre == "stablelm2" ||
               pre == "megrez") {
        info.type = PreType::kQwen2;
    } else if (pre == "qwen35") {
        info.type = PreType::kQwen35;
    } else if (pre == "falcon") {
        info.type = PreType::kFalcon;
    } else if (pre == "deepseek-llm") {
        info.type = PreType::kDeepseekLlm;
    } else if (pre == "deepseek-coder") {
        info.type = PreType::kDeepseekCoder;
    } else if (pre == "gemma4") {
        // tokenizer.ggml.model = "gemma4" implies this pre whatever the key says (llama.cpp
        // sets it so); BOS is always added (llama.cpp overrides add_bos_token=false for it).
        info.type = PreType::kGemma4;
        info.byte_level = false;
        info.default_add_bos = true;
    } else if (pre == "gpt-2" || pre == "phi-2" || pre == "mpt" || pre == "olmo" || pre == "jais" ||
               pre == "default" || pre.empty()) {
        info.type = PreType::kGpt2;
    } else {
        info.type = PreType::kGpt2;
        info.known = false;
    }
    return info;
}

std::string_view pre_type_name(PreType t) {
    switch (t) {
        case PreType::kGpt2:
            return "gpt-2";
        case PreType::kSmollm:
            return "smollm";
        case PreType::kLlama3:
            return "llama3";
        case PreType::kQwen2:
            return "qwen2";
        case PreType::kQwen35:
            return "qwen35";
        case PreType::kFalcon:
            return "falcon";
        case PreType::kDeepseekLlm:
            return "deepseek-llm";
        case PreType::kDeepseekCoder:
            return "deepseek-coder";
        case PreType::kGemma4:
            return "gemma4";
    }
    return "?";
}

PreTokenizer::PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

Result<PreTokenizer> PreTokenizer::create(PreType type) {
    std::vector<const char*> patterns;
    switch (type) {
        case PreType::kGpt2:
            patterns = {kGpt2Regex};
            break;
        case PreType::kSmollm:
            patterns = {kDigitRegex, kGpt2Regex};
            break;
        case PreType::kLlama3:
            patterns = {kLlama3Regex};
            break;
        case PreType::kQwen2:
            patterns = {kQwen2Regex};
            break;
        case PreType::kQwen35:
            patterns = {kQwen35Regex};
            break;
        case PreType::kFalcon:
            patterns = {kFalconPunctRegex, kGpt2Regex, kThreeDigitsRegex};
            break;
        case PreType::kDeepseekLlm:
            patterns = {kNewlineRegex,       kDeepseekLlmLetterRegex, kDeepseekLlmPunctRegex,
                        kTrailingSpaceRegex, kCjkRegex,               kNumberRunRegex};
            break;
        case PreType::kDeepseekCoder:
            patterns = {kNewlineRegex, kLetterRunRegex, kPunctRunRegex, kCjkRegex, kDigitRegex};
            break;
        case PreType::kGemma4:
            patterns = {kNewlineRunsRegex};
            break;
    }
    PreTokenizer p;
    for (const char* pattern : patterns) {
        LAZYLLM_ASSIGN_OR_RETURN(auto r, Regex::compile(pattern));
        p.regexes_.push_back(std::move(r));
    }
    return p;
}

void PreTokenizer::split(std::string_view text, std::vector<Piece>& out) const {
    out.clear();
    if (text.empty()) return;
    out.push_back({0, static_cast<uint32_t>(text.size())});
    std::vector<Piece> next;
    for (const auto& r : regexes_) {
        pcre2_match_data* md = pcre2_match_data_create_from_pattern(r->code, nullptr);
        LAZYLLM_CHECK_MSG(md != nullptr, "out of memory for PCRE2 match data");
        next.clear();
        next.reserve(out.size() + text.size() / 4);
        for (Piece p : out) r->split(text, p, md, next);
        pcre2_match_data_free(md);
        out.swap(next);
    }
}

}  // namespace lazyllm::tokenizer
