#include "tokenizer/pretokenize.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>

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
// HF Digits(individual_digits=true): Rust char::is_numeric, i.e. general category N.
constexpr const char* kDigitRegex = R"(\p{N})";

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
        r->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED, opts,
                                &err, &err_off, nullptr);
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
