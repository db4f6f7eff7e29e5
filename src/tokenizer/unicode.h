// UTF-8 helpers and GPT-2's byte <-> unicode mapping used by byte-level BPE vocabularies.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/unicode_data.h"

namespace lazyllm::tokenizer {

// Length of the UTF-8 sequence that `lead` starts (1 for ASCII, continuation and invalid bytes,
// so a scan always advances). Same rule as llama.cpp's unicode_len_utf8.
size_t utf8_seq_len(uint8_t lead);

// Appends the UTF-8 encoding of code point `cp` (which must be <= 0x10FFFF).
void append_utf8(std::string& out, uint32_t cp);

// Decodes one code point at s[pos]; returns the number of bytes it takes, or 0 when the bytes
// there are not a complete, valid (shortest-form, non-surrogate) UTF-8 sequence. `*cp` is set
// only on success.
size_t decode_utf8(std::string_view s, size_t pos, uint32_t* cp);

// Outcome of looking at the start of `s` for a whole UTF-8 sequence.
enum class Utf8Prefix {
    kComplete,    // a valid sequence of `len` bytes
    kIncomplete,  // a valid beginning that needs more bytes than `s` holds
    kInvalid,     // not valid: `len` bytes (>= 1) form the maximal ill-formed subpart
};
Utf8Prefix classify_utf8_prefix(std::string_view s, size_t* len);

// The general-category class of a code point (unicode_data.h); kOther above U+10FFFF.
CharClass char_class(uint32_t cp);

// Unicode's White_Space property (PropList.txt), which Rust's char::is_whitespace tests.
bool is_white_space(uint32_t cp);

// Appends the lowercase of `cp` (one code point, or two for U+0130).
void append_lower(uint32_t cp, std::vector<uint32_t>& out);

// Appends the canonical decomposition (NFD) of `cp` without its nonspacing marks, or `cp`
// itself when it has no decomposition (a nonspacing mark is then still appended).
void append_nfd_stripped(uint32_t cp, std::vector<uint32_t>& out);

// GPT-2's reversible byte -> printable code point mapping (bytes_to_unicode in openai/gpt-2
// encoder.py): printable Latin-1 bytes map to themselves, the other 68 bytes to U+0100.. in
// byte order. Byte-level BPE vocabularies store token text in this alphabet.
class ByteUnicodeMap {
public:
    ByteUnicodeMap();
    // UTF-8 text of the code point that stands for byte `b`.
    std::string_view byte_to_utf8(uint8_t b) const {
        return std::string_view(utf8_[b].data(), utf8_len_[b]);
    }
    // The byte a code point stands for, or -1 when it is not in the mapping.
    int cp_to_byte(uint32_t cp) const { return cp < kCpLimit ? cp_to_byte_[cp] : -1; }

private:
    static constexpr uint32_t kCpLimit = 0x144;  // every mapped code point is below U+0144
    std::array<std::array<char, 2>, 256> utf8_{};
    std::array<uint8_t, 256> utf8_len_{};
    std::array<int16_t, kCpLimit> cp_to_byte_{};
};

}  // namespace lazyllm::tokenizer
