// Python string semantics for the metrics (see text_util.h). The Unicode tables here are small
// by design: the metrics' own normalization (ASCII punctuation, a|an|the) is exact, and text in
// other scripts only needs whitespace and letters to be told apart.
#include "eval/text_util.h"

#include <cstdint>

#include "tokenizer/unicode.h"

namespace lazyllm::eval::text {
namespace {

constexpr char32_t kReplacement = 0xFFFD;

bool in(char32_t c, char32_t lo, char32_t hi) { return c >= lo && c <= hi; }

// Length of the valid sequence at s[pos] (1..4) or, when ill-formed, -(length of its maximal
// subpart), at least 1 byte (Unicode 15, section 3.9, "U+FFFD substitution of maximal subparts").
int utf8_step(std::string_view s, size_t pos, char32_t* cp) {
    const auto b0 = static_cast<uint8_t>(s[pos]);
    if (b0 < 0x80) {
        *cp = b0;
        return 1;
    }
    int need = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    char32_t v = 0;
    if (in(b0, 0xC2, 0xDF)) {
        need = 1;
        v = b0 & 0x1F;
    } else if (in(b0, 0xE0, 0xEF)) {
        need = 2;
        v = b0 & 0x0F;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
    } else if (in(b0, 0xF0, 0xF4)) {
        need = 3;
        v = b0 & 0x07;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    } else {
        return -1;
    }
    size_t i = pos + 1;
    for (int k = 0; k < need; ++k, ++i) {
        if (i >= s.size()) return -static_cast<int>(i - pos);
        const auto b = static_cast<uint8_t>(s[i]);
        const uint8_t l = k == 0 ? lo : 0x80, h = k == 0 ? hi : 0xBF;
        if (b < l || b > h) return -static_cast<int>(i - pos);
        v = (v << 6) | (b & 0x3F);
    }
    *cp = v;
    return need + 1;
}

// UTF-8 encoding is the tokenizer's (src/tokenizer/unicode.h).
void append_utf8(std::string& out, char32_t cp) {
    tokenizer::append_utf8(out, static_cast<uint32_t>(cp));
}

// Python's str.lower() for the blocks listed in text_util.h; appends 1 or 2 code points.
void append_lower(std::u32string& out, char32_t c) {
    if (in(c, 'A', 'Z')) {
        out += c + 0x20;
    } else if (c < 0xC0) {
        out += c;
    } else if (in(c, 0xC0, 0xDE) && c != 0xD7) {
        out += c + 0x20;
    } else if (c == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE -> "i" + COMBINING DOT ABOVE
        out += U'i';
        out += char32_t{0x307};
    } else if ((in(c, 0x100, 0x137) || in(c, 0x14A, 0x177)) && c % 2 == 0) {
        out += c + 1;
    } else if ((in(c, 0x139, 0x148) || in(c, 0x179, 0x17E)) && c % 2 == 1) {
        out += c + 1;
    } else if (c == 0x178) {
        out += char32_t{0xFF};
    } else if (c == 0x386) {
        out += char32_t{0x3AC};
    } else if (in(c, 0x388, 0x38A)) {
        out += c + 37;
    } else if (c == 0x38C) {
        out += char32_t{0x3CC};
    } else if (c == 0x38E || c == 0x38F) {
        out += c + 63;
    } else if (in(c, 0x391, 0x3AB) && c != 0x3A2) {
        out += c + 0x20;
    } else if (in(c, 0x400, 0x40F)) {
        out += c + 0x50;
    } else if (in(c, 0x410, 0x42F)) {
        out += c + 0x20;
    } else {
        out += c;
    }
}

}  // namespace

std::u32string decode_utf8(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    for (size_t pos = 0; pos < s.size();) {
        char32_t cp = 0;
        const int n = utf8_step(s, pos, &cp);
        if (n > 0) {
            out += cp;
            pos += static_cast<size_t>(n);
        } else {
            out += kReplacement;
            pos += static_cast<size_t>(-n);
        }
    }
    return out;
}

std::string encode_utf8(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : s) append_utf8(out, c);
    return out;
}

std::string sanitize_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t pos = 0; pos < s.size();) {
        char32_t cp = 0;
        const int n = utf8_step(s, pos, &cp);
        if (n > 0) {
            out.append(s.substr(pos, static_cast<size_t>(n)));
            pos += static_cast<size_t>(n);
        } else {
            append_utf8(out, kReplacement);
            pos += static_cast<size_t>(-n);
        }
    }
    return out;
}

bool is_py_space(char32_t c) {
    return c == ' ' || in(c, 0x09, 0x0D) || in(c, 0x1C, 0x1F) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || in(c, 0x2000, 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

bool is_py_digit(char32_t c) {
    return in(c, '0', '9') || in(c, 0x660, 0x669) || in(c, 0x6F0, 0x6F9) || in(c, 0x966, 0x96F) ||
           in(c, 0xFF10, 0xFF19);
}

bool is_py_word(char32_t c) {
    if (c < 0x80) {
        return in(c, '0', '9') || in(c, 'a', 'z') || in(c, 'A', 'Z') || c == '_';
    }
    if (is_py_space(c)) return false;
    if (in(c, 0x80, 0xBF)) {
        // Latin-1 punctuation and symbols, except the letters and numbers among them:
        // ª ² ³ µ ¹ º ¼ ½ ¾ are alphanumeric in Python.
        return c == 0xAA || c == 0xB2 || c == 0xB3 || c == 0xB5 || c == 0xB9 || c == 0xBA ||
               in(c, 0xBC, 0xBE);
    }
    if (c == 0xD7 || c == 0xF7) return false;  // × ÷
    if (in(c, 0x2000, 0x206F) || in(c, 0x20A0, 0x20CF) || in(c, 0x2190, 0x23FF) ||
        in(c, 0x2500, 0x27BF) || in(c, 0x2E00, 0x2E7F) || in(c, 0x3000, 0x3004) ||
        in(c, 0x3008, 0x3020) || in(c, 0xFE30, 0xFE4F) || in(c, 0xFF00, 0xFF0F) ||
        in(c, 0xFF1A, 0xFF20) || in(c, 0xFF3B, 0xFF40) || in(c, 0xFF5B, 0xFF65) ||
        in(c, 0x1F000, 0x1FAFF) || c == kReplacement) {
        return false;
    }
    return true;
}

std::vector<std::string> split_whitespace(std::string_view s) {
    std::vector<std::string> out;
    std::string cur;
    bool in_word = false;
    for (size_t pos = 0; pos < s.size();) {
        char32_t cp = kReplacement;
        int n = utf8_step(s, pos, &cp);
        if (n < 0) {
            cp = kReplacement;
            n = -n;
        }
        if (is_py_space(cp)) {
            if (in_word) out.push_back(std::move(cur));
            cur.clear();
            in_word = false;
        } else {
            cur.append(s.substr(pos, static_cast<size_t>(n)));
            in_word = true;
        }
        pos += static_cast<size_t>(n);
    }
    if (in_word) out.push_back(std::move(cur));
    return out;
}

std::vector<std::string> split(std::string_view s, std::string_view sep) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        const size_t at = s.find(sep, start);
        if (at == std::string_view::npos) break;
        out.emplace_back(s.substr(start, at - start));
        start = at + sep.size();
    }
    out.emplace_back(s.substr(start));
    return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (i > 0) out.append(sep);
        out.append(parts[i]);
    }
    return out;
}

std::string strip(std::string_view s) {
    const std::u32string u = decode_utf8(s);
    size_t b = 0, e = u.size();
    while (b < e && is_py_space(u[b])) ++b;
    while (e > b && is_py_space(u[e - 1])) --e;
    return encode_utf8(std::u32string_view(u).substr(b, e - b));
}

std::string lower(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    for (char32_t c : decode_utf8(s)) append_lower(out, c);
    return encode_utf8(out);
}

std::vector<std::string> find_digit_runs(std::string_view s) {
    std::vector<std::string> out;
    std::u32string cur;
    for (char32_t c : decode_utf8(s)) {
        if (is_py_digit(c)) {
            cur += c;
        } else if (!cur.empty()) {
            out.push_back(encode_utf8(cur));
            cur.clear();
        }
    }
    if (!cur.empty()) out.push_back(encode_utf8(cur));
    return out;
}

size_t count_occurrences(std::string_view hay, std::string_view needle) {
    if (needle.empty()) return 0;
    size_t n = 0;
    for (size_t at = hay.find(needle); at != std::string_view::npos;
         at = hay.find(needle, at + needle.size())) {
        ++n;
    }
    return n;
}

}  // namespace lazyllm::eval::text
