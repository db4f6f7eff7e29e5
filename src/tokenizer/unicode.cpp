#include "tokenizer/unicode.h"

#include <algorithm>

namespace lazyllm::tokenizer {

size_t utf8_seq_len(uint8_t lead) {
    if (lead < 0x80) return 1;
    if ((lead & 0xE0) == 0xC0) return 2;
    if ((lead & 0xF0) == 0xE0) return 3;
    if ((lead & 0xF8) == 0xF0) return 4;
    return 1;
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

Utf8Prefix classify_utf8_prefix(std::string_view s, size_t* len) {
    *len = 1;
    if (s.empty()) return Utf8Prefix::kIncomplete;
    const auto b0 = static_cast<uint8_t>(s[0]);
    if (b0 < 0x80) return Utf8Prefix::kComplete;
    size_t n = 0;
    // Allowed range of the second byte (RFC 3629 table): excludes overlong forms, surrogates
    // and code points above U+10FFFF.
    uint8_t lo = 0x80;
    uint8_t hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        n = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        n = 3;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        n = 4;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    } else {
        return Utf8Prefix::kInvalid;
    }
    for (size_t i = 1; i < n; ++i) {
        if (i >= s.size()) return Utf8Prefix::kIncomplete;
        const auto b = static_cast<uint8_t>(s[i]);
        const uint8_t l = i == 1 ? lo : 0x80;
        const uint8_t h = i == 1 ? hi : 0xBF;
        if (b < l || b > h) {
            *len = i;  // the maximal valid prefix, replaced by one U+FFFD (Unicode 15, 3.9)
            return Utf8Prefix::kInvalid;
        }
    }
    *len = n;
    return Utf8Prefix::kComplete;
}

size_t decode_utf8(std::string_view s, size_t pos, uint32_t* cp) {
    size_t len = 0;
    if (classify_utf8_prefix(s.substr(pos), &len) != Utf8Prefix::kComplete) return 0;
    const auto* p = reinterpret_cast<const uint8_t*>(s.data() + pos);
    switch (len) {
        case 1:
            *cp = p[0];
            break;
        case 2:
            *cp = ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
            break;
        case 3:
            *cp = ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
            break;
        default:
            *cp = ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) |
                  (p[3] & 0x3Fu);
    }
    return len;
}

CharClass char_class(uint32_t cp) {
    using unicode_data::CategoryRun;
    const CategoryRun* end = unicode_data::kCategoryRuns + unicode_data::kNumCategoryRuns;
    const CategoryRun* it =
        std::upper_bound(unicode_data::kCategoryRuns, end, cp,
                         [](uint32_t c, const CategoryRun& r) { return c < r.first; });
    if (it == unicode_data::kCategoryRuns) return CharClass::kNone;
    --it;
    return cp <= it->last ? it->cls : CharClass::kNone;
}

bool is_white_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

void append_lower(uint32_t cp, std::vector<uint32_t>& out) {
    using unicode_data::CaseMap;
    const CaseMap* end = unicode_data::kLowercase + unicode_data::kNumLowercase;
    const CaseMap* it = std::lower_bound(unicode_data::kLowercase, end, cp,
                                         [](const CaseMap& m, uint32_t c) { return m.cp < c; });
    if (it == end || it->cp != cp) {
        out.push_back(cp);
        return;
    }
    out.push_back(it->lower[0]);
    if (it->lower[1] != 0) out.push_back(it->lower[1]);
}

void append_nfd_stripped(uint32_t cp, std::vector<uint32_t>& out) {
    // Hangul syllables decompose by arithmetic (Unicode 15, 3.12) into jamo, none of them Mn.
    constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
    constexpr uint32_t kTCount = 28, kNCount = 21 * 28, kSCount = 19 * 21 * 28;
    if (cp >= kSBase && cp < kSBase + kSCount) {
        const uint32_t s = cp - kSBase;
        out.push_back(kLBase + s / kNCount);
        out.push_back(kVBase + (s % kNCount) / kTCount);
        if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
        return;
    }
    using unicode_data::Decomposition;
    const Decomposition* end = unicode_data::kStripped + unicode_data::kNumStripped;
    const Decomposition* it =
        std::lower_bound(unicode_data::kStripped, end, cp,
                         [](const Decomposition& d, uint32_t c) { return d.cp < c; });
    if (it == end || it->cp != cp) {
        out.push_back(cp);
        return;
    }
    for (uint32_t k : it->kept) {
        if (k == 0) break;
        out.push_back(k);
    }
}

ByteUnicodeMap::ByteUnicodeMap() {
    cp_to_byte_.fill(-1);
    uint32_t next_extra = 0x100;
    for (uint32_t b = 0; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        const uint32_t cp = printable ? b : next_extra++;
        std::string s;
        append_utf8(s, cp);
        utf8_len_[b] = static_cast<uint8_t>(s.size());
        for (size_t i = 0; i < s.size(); ++i) utf8_[b][i] = s[i];
        cp_to_byte_[cp] = static_cast<int16_t>(b);
    }
}

}  // namespace lazyllm::tokenizer
