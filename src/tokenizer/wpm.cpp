#include "tokenizer/wpm.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace lazyllm::tokenizer {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581
// HF WordPiece's max_input_chars_per_word default.
constexpr size_t kMaxWordChars = 100;

// BERT's _is_chinese_char: the CJK Unified Ideographs blocks (not Hiragana, Katakana, Hangul).
bool is_cjk_ideograph(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// BertPreTokenizer's is_bert_punc: ASCII punctuation (symbols such as $ + < included) or P*.
bool is_bert_punctuation(uint32_t cp) {
    if (cp < 0x80) {
        return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) ||
               (cp >= 0x5B && cp <= 0x60) || (cp >= 0x7B && cp <= 0x7E);
    }
    return char_class(cp) == CharClass::kPunctuation;
}

}  // namespace

WpmModel::WpmModel(const Vocab& vocab) {
    lowercase_ = vocab.lowercase.value_or(true);
    strip_accents_ = vocab.strip_accents.value_or(lowercase_);
    unk_ = vocab.unk.value_or(-1);
    for (const std::string& t : vocab.tokens)
        max_token_bytes_ = std::max(max_token_bytes_, t.size());
}

std::vector<std::vector<uint32_t>> WpmModel::words(std::string_view text) const {
    std::vector<std::vector<uint32_t>> out(1);
    auto end_word = [&] {
        if (!out.back().empty()) out.emplace_back();
    };
    std::vector<uint32_t> norm;
    for (size_t pos = 0; pos < text.size();) {
        uint32_t cp = 0xFFFD;
        const size_t n = decode_utf8(text, pos, &cp);
        pos += n == 0 ? 1 : n;  // an invalid byte is U+FFFD, which clean_text drops
        // clean_text: drop NUL, U+FFFD and control characters (category C other than the
        // whitespace \t \n \r); any whitespace splits words.
        if (is_white_space(cp)) {
            end_word();
            continue;
        }
        if (cp == 0 || cp == 0xFFFD || char_class(cp) == CharClass::kOther) continue;
        norm.clear();
        if (strip_accents_) {
            append_nfd_stripped(cp, norm);
        } else {
            norm.push_back(cp);
        }
        for (uint32_t c : norm) {
            if (strip_accents_ && char_class(c) == CharClass::kNonspacingMark) continue;
            if (is_cjk_ideograph(c) || is_bert_punctuation(c)) {
                end_word();
                out.back().push_back(c);
                out.emplace_back();
                continue;
            }
            if (lowercase_) {
                append_lower(c, out.back());
            } else {
                out.back().push_back(c);
            }
        }
    }
    if (out.back().empty()) out.pop_back();
    return out;
}

void WpmModel::encode_word(const Vocab& vocab, const std::vector<uint32_t>& word, std::string& s,
                           std::vector<TokenId>& out) const {
    if (word.size() > kMaxWordChars) {
        if (unk_ >= 0) out.push_back(unk_);
        return;
    }
    // s = "▁" + word in UTF-8; bounds[i] is the byte offset of character i (from the word's
    // start, after the marker).
    s.assign(kSpaceMarker);
    std::vector<size_t> bounds;
    bounds.reserve(word.size() + 1);
    for (uint32_t cp : word) {
        bounds.push_back(s.size());
        append_utf8(s, cp);
    }
    bounds.push_back(s.size());
    const size_t n_before = out.size();
    size_t start = 0;  // character index
    while (start < word.size()) {
        // The first piece is looked up with its marker ("▁" + piece), the others as they are.
        const size_t from = start == 0 ? 0 : bounds[start];
        bool found = false;
        for (size_t end = word.size(); end > start; --end) {
            if (bounds[end] - from > max_token_bytes_) continue;
            if (auto id = vocab.find(std::string_view(s).substr(from, bounds[end] - from))) {
                out.push_back(*id);
                start = end;
                found = true;
                break;
            }
        }
        if (!found) {
            out.resize(n_before);
            if (unk_ >= 0) out.push_back(unk_);
            return;
        }
    }
}

void WpmModel::encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) const {
    std::string scratch;
    for (const auto& word : words(text)) encode_word(vocab, word, scratch, out);
}

}  // namespace lazyllm::tokenizer
