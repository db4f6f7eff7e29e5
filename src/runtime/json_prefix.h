// Constrained decoding to a JSON object (the server's response_format json_object, as
// llama-server's and vLLM's JSON mode): a byte-at-a-time acceptor of JSON text (RFC 8259) whose
// top-level value is an object, and the per-step mask of the tokens whose bytes keep the text a
// prefix of such a document.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lazyllm/tokenizer.h"

namespace lazyllm {

// The text so far is a prefix of a JSON document whose top-level value is an object, with at
// most kMaxDepth nested arrays and objects and at most kMaxSpaces whitespace bytes in a row (a
// model can otherwise spin on newlines, as llama.cpp's JSON grammar also bounds). Strings hold
// valid UTF-8 and no control bytes. Trivially copyable: a token is tried on a copy.
class JsonPrefix {
public:
    static constexpr int kMaxDepth = 32;
    static constexpr int kMaxSpaces = 24;

    // Takes c when the text plus c is still such a prefix; false (and unchanged) otherwise.
    bool feed(uint8_t c);
    // All of `bytes`, or none (false, unchanged).
    bool feed(std::string_view bytes);
    // The top-level object has closed (only whitespace may follow).
    bool complete() const { return state_ == State::kDone; }
    // The bytes feed() would take now.
    std::bitset<256> next_bytes() const;
    // The whole state as bytes: equal keys accept the same continuations.
    std::string_view key() const {
        return {reinterpret_cast<const char*>(this), sizeof(JsonPrefix)};
    }

private:
    enum class State : uint8_t {
        kStart,        // before the top-level object: whitespace, '{'
        kKeyOrClose,   // after '{': whitespace, '"' (a key), '}'
        kKey,          // after ',' in an object: whitespace, '"'
        kColon,        // after a key: whitespace, ':'
        kValue,        // after ':' or ',' in an array: whitespace, a value
        kValueOrClose, // after '[': whitespace, a value, ']'
        kAfterValue,   // whitespace, ',' or the container's closing bracket
        kString,       // inside a string (key_ says which kind)
        kEscape,       // after '\' in a string
        kHex,          // in \uXXXX (hex_left digits to go)
        kUtf8,         // inside a multi-byte character (utf8_left continuation bytes to go)
        kMinus,        // after '-': a digit
        kZero,         // an integer part "0": '.', 'e', 'E' or the number's end
        kInt,          // integer digits: more, '.', 'e', 'E' or the end
        kFracStart,    // after '.': a digit
        kFrac,         // fraction digits: more, 'e', 'E' or the end
        kExpStart,     // after 'e': '+', '-' or a digit
        kExpSign,      // after the exponent's sign: a digit
        kExp,          // exponent digits: more or the end
        kLiteral,      // inside true / false / null (lit_, lit_at_)
        kDone,         // the top-level object closed: whitespace only
    };
    bool value_start(uint8_t c);         // c begins a value (state kValue / kValueOrClose)
    bool after_value(uint8_t c);         // c follows a complete value
    bool space(uint8_t c);               // whitespace within the kMaxSpaces bound
    void end_value();                    // a value closed: kAfterValue, or kDone at the top
    bool push(uint8_t bracket);          // '{' or '['
    void pop();                          // the innermost container closed
    bool to(State s);                    // state_ = s; true
    bool close();                        // '}' or ']' of the innermost container
    bool number_end(uint8_t c);          // c ends a number: as after any value
    // feed() by the kind of the current state, on a copy that feed() keeps only when they
    // return true: the structure (kStart to kAfterValue, kDone), a string (kString to kUtf8),
    // a number (kMinus to kExp), a literal.
    bool feed_structure(uint8_t c);
    bool feed_string(uint8_t c);
    bool feed_number(uint8_t c);
    bool feed_literal(uint8_t c);

    State state_ = State::kStart;
    bool key_ = false;        // the string in progress is an object key
    uint8_t hex_left_ = 0;
    uint8_t utf8_left_ = 0;
    uint8_t utf8_min_ = 0x80;  // the next continuation byte's range (overlongs, surrogates)
    uint8_t utf8_max_ = 0xBF;
    uint8_t spaces_ = 0;      // whitespace bytes in a row
    uint8_t lit_ = 0;         // 0 true, 1 false, 2 null
    uint8_t lit_at_ = 0;
    uint8_t depth_ = 0;
    std::array<uint8_t, kMaxDepth> stack_{};  // '{' or '[' per open container, 0 above depth_
};
static_assert(sizeof(JsonPrefix) == 10 + JsonPrefix::kMaxDepth, "key() has no padding bytes");

// Every token's bytes (Tokenizer::token_to_piece, control tokens none), bucketed by first byte,
// to mask the tokens a JsonPrefix would refuse. Built once per tokenizer.
class JsonTokenMask {
public:
    explicit JsonTokenMask(const Tokenizer& tok);
    // Sets to -inf the logits of the tokens whose bytes `at` refuses (and of the tokens without
    // bytes: control tokens, the end of generation). False when no token is left (logits kept).
    // The tokens of a state are computed once: a string's steps, say, share one state.
    bool apply(const JsonPrefix& at, std::span<float> logits);
    const std::string& piece(TokenId id) const { return pieces_[static_cast<size_t>(id)]; }

private:
    static constexpr size_t kMaxCached = 64;  // states; the cache starts over when full

    const std::vector<uint8_t>& allowed(const JsonPrefix& at);  // [n_vocab] 0/1

    std::vector<std::string> pieces_;                // [n_vocab]
    std::array<std::vector<TokenId>, 256> by_first_;  // tokens by their first byte
    std::unordered_map<std::string, std::vector<uint8_t>> cache_;  // key() -> allowed
};

}  // namespace lazyllm
