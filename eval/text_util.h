// Text helpers that reproduce the Python string operations LongBench's metrics.py, RULER's
// evaluator and LongBench's pred.py rely on: str.split(), str.strip(), str.lower(), re's \d and
// \b, and bytes.decode(errors="replace"). Strings are UTF-8; operations that Python does per code
// point are done per code point here too.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lazyllm::eval::text {

// UTF-8 -> code points. A byte that does not start a complete, valid sequence becomes U+FFFD
// (one per maximal ill-formed subpart, as Python's errors="replace").
std::u32string decode_utf8(std::string_view s);
std::string encode_utf8(std::u32string_view s);
// Replaces ill-formed UTF-8 with U+FFFD, as Python's bytes.decode("utf-8", errors="replace"):
// what HF tokenizers yield when a decoded token range splits a multi-byte character.
std::string sanitize_utf8(std::string_view s);

// Python's str.isspace() for one code point (ASCII \t\n\v\f\r, \x1c-\x1f, space, U+0085, U+00A0,
// U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000).
bool is_py_space(char32_t c);
// Python's \w for str patterns: alphanumerics and '_'. Exact for ASCII; for other code points
// an approximation that treats letters, digits and ideographs as word characters and the common
// punctuation, symbol and space blocks as non-word.
bool is_py_word(char32_t c);
// re's \d for str patterns (Unicode category Nd), for ASCII and the common digit blocks.
bool is_py_digit(char32_t c);

// str.split(): runs of whitespace separate, no empty fields.
std::vector<std::string> split_whitespace(std::string_view s);
// str.split(sep) with a non-empty separator: keeps empty fields.
std::vector<std::string> split(std::string_view s, std::string_view sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
// str.strip() with no argument (Python whitespace).
std::string strip(std::string_view s);
// str.lower(): exact for ASCII; Latin-1, Latin Extended-A, Greek and Cyrillic capitals are
// lowered too (final sigma is not special-cased); other scripts pass through.
std::string lower(std::string_view s);
// re.findall(r"\d+", s): maximal runs of digits, as they appear in the text.
std::vector<std::string> find_digit_runs(std::string_view s);
// Non-overlapping occurrences of `needle` (non-empty) in `hay`.
size_t count_occurrences(std::string_view hay, std::string_view needle);

}  // namespace lazyllm::eval::text
