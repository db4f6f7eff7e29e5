#include "runtime/json_prefix.h"

#include <algorithm>
#include <limits>

namespace lazyllm {

namespace {

constexpr std::string_view kLiterals[] = {"true", "false", "null"};

bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_hex(uint8_t c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

}  // namespace

bool JsonPrefix::space(uint8_t c) {
    if (!is_space(c) || spaces_ >= kMaxSpaces) return false;
    ++spaces_;
    return true;
}

bool JsonPrefix::push(uint8_t bracket) {
    if (depth_ >= kMaxDepth) return false;
    stack_[depth_++] = bracket;
    return true;
}

void JsonPrefix::pop() { stack_[--depth_] = 0; }

void JsonPrefix::end_value() {
    state_ = depth_ == 0 ? State::kDone : State::kAfterValue;
    key_ = false;  // fields of the value just read: cleared, so that equal states have equal keys
    lit_ = lit_at_ = 0;
}

bool JsonPrefix::value_start(uint8_t c) {
    switch (c) {
        case '{':
            state_ = State::kKeyOrClose;
            return push('{');
        case '[':
            state_ = State::kValueOrClose;
            return push('[');
        case '"':
            key_ = false;
            state_ = State::kString;
            return true;
        case '-':
            state_ = State::kMinus;
            return true;
        case '0':
            state_ = State::kZero;
            return true;
        case 't':
        case 'f':
        case 'n':
            lit_ = c == 't' ? 0 : c == 'f' ? 1 : 2;
            lit_at_ = 1;
            state_ = State::kLiteral;
            return true;
        default:
            if (c >= '1' && c <= '9') {
                state_ = State::kInt;
                return true;
            }
            return false;
    }
}

bool JsonPrefix::after_value(uint8_t c) {
    state_ = State::kAfterValue;
    if (is_space(c)) return space(c);
    const uint8_t top = depth_ > 0 ? stack_[depth_ - 1] : 0;
    if (c == ',' && top != 0) {
        state_ = top == '{' ? State::kKey : State::kValue;
        return true;
    }
    if ((c == '}' && top == '{') || (c == ']' && top == '[')) return close();
    return false;
}

bool JsonPrefix::to(State s) {
    state_ = s;
    return true;
}

bool JsonPrefix::close() {
    pop();
    end_value();
    return true;
}

bool JsonPrefix::number_end(uint8_t c) {
    end_value();
    return after_value(c);
}

bool JsonPrefix::feed_structure(uint8_t c) {
    switch (state_) {
        case State::kStart:
            return c == '{' ? to(State::kKeyOrClose) && push('{') : space(c);
        case State::kKeyOrClose:
        case State::kKey:
            if (c == '}' && state_ == State::kKeyOrClose) return close();
            if (c == '"') {
                key_ = true;
                return to(State::kString);
            }
            return space(c);
        case State::kColon:
            return c == ':' ? to(State::kValue) : space(c);
        case State::kValueOrClose:
        case State::kValue:
            if (c == ']' && state_ == State::kValueOrClose) return close();
            return is_space(c) ? space(c) : value_start(c);
        case State::kAfterValue:
            return after_value(c);
        default:  // kDone
            return space(c);
    }
}

bool JsonPrefix::feed_string(uint8_t c) {
    switch (state_) {
        case State::kString:
            if (c == '"') {
                const bool key = key_;
                key_ = false;
                return key ? to(State::kColon) : (end_value(), true);
            }
            if (c == '\\') return to(State::kEscape);
            if (c >= 0x20 && c < 0x80) return true;
            if (c >= 0xC2 && c <= 0xF4) {
                // Lead bytes of 2-, 3- and 4-byte characters, with the first continuation's range
                // that rules out overlong forms, surrogates and code points over U+10FFFF.
                utf8_left_ = c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
                utf8_min_ = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
                utf8_max_ = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
                return to(State::kUtf8);
            }
            return false;
        case State::kEscape:
            if (c == 'u') {
                hex_left_ = 4;
                return to(State::kHex);
            }
            return std::string_view("\"\\/bfnrt").find(static_cast<char>(c)) !=
                       std::string_view::npos &&
                   to(State::kString);
        case State::kHex:
            return is_hex(c) && (--hex_left_ != 0 || to(State::kString));
        default:  // kUtf8
            if (c < utf8_min_ || c > utf8_max_) return false;
            utf8_min_ = 0x80;
            utf8_max_ = 0xBF;
            return --utf8_left_ != 0 || to(State::kString);
    }
}

bool JsonPrefix::feed_number(uint8_t c) {
    const bool exp = c == 'e' || c == 'E';
    switch (state_) {
        case State::kMinus:
            return is_digit(c) && to(c == '0' ? State::kZero : State::kInt);
        case State::kInt:
        case State::kZero:
            if (is_digit(c) && state_ == State::kInt) return true;
            if (c == '.') return to(State::kFracStart);
            return exp ? to(State::kExpStart) : number_end(c);
        case State::kFracStart:
            return is_digit(c) && to(State::kFrac);
        case State::kFrac:
            if (is_digit(c)) return true;
            return exp ? to(State::kExpStart) : number_end(c);
        case State::kExpStart:
            if (c == '+' || c == '-') return to(State::kExpSign);
            return is_digit(c) && to(State::kExp);
        case State::kExpSign:
            return is_digit(c) && to(State::kExp);
        default:  // kExp
            return is_digit(c) || number_end(c);
    }
}

bool JsonPrefix::feed_literal(uint8_t c) {
    const std::string_view lit = kLiterals[lit_];
    if (c != static_cast<uint8_t>(lit[lit_at_])) return false;
    if (++lit_at_ == lit.size()) end_value();
    return true;
}

bool JsonPrefix::feed(uint8_t c) {
    JsonPrefix next = *this;  // all or nothing
    if (!is_space(c)) next.spaces_ = 0;
    bool ok = false;
    switch (state_) {
        case State::kString:
        case State::kEscape:
        case State::kHex:
        case State::kUtf8:
            ok = next.feed_string(c);
            break;
        case State::kMinus:
        case State::kZero:
        case State::kInt:
        case State::kFracStart:
        case State::kFrac:
        case State::kExpStart:
        case State::kExpSign:
        case State::kExp:
            ok = next.feed_number(c);
            break;
        case State::kLiteral:
            ok = next.feed_literal(c);
            break;
        default:
            ok = next.feed_structure(c);
            break;
    }
    if (!ok) return false;
    *this = next;
    return true;
}

bool JsonPrefix::feed(std::string_view bytes) {
    JsonPrefix next = *this;
    for (char ch : bytes) {
        if (!next.feed(static_cast<uint8_t>(ch))) return false;
    }
    *this = next;
    return true;
}

std::bitset<256> JsonPrefix::next_bytes() const {
    std::bitset<256> out;
    for (int c = 0; c < 256; ++c) {
        JsonPrefix p = *this;
        if (p.feed(static_cast<uint8_t>(c))) out.set(static_cast<size_t>(c));
    }
    return out;
}

JsonTokenMask::JsonTokenMask(const Tokenizer& tok) {
    const int32_t n = tok.n_vocab();
    pieces_.resize(static_cast<size_t>(n));
    for (TokenId id = 0; id < n; ++id) {
        std::string piece = tok.token_to_piece(id);
        if (tok.is_end_of_generation(id)) piece.clear();
        if (!piece.empty()) by_first_[static_cast<uint8_t>(piece[0])].push_back(id);
        pieces_[static_cast<size_t>(id)] = std::move(piece);
    }
}

const std::vector<uint8_t>& JsonTokenMask::allowed(const JsonPrefix& at) {
    const std::string key(at.key());
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    if (cache_.size() >= kMaxCached) cache_.clear();
    std::vector<uint8_t> ok(pieces_.size(), 0);
    const std::bitset<256> first = at.next_bytes();
    for (size_t b = 0; b < first.size(); ++b) {
        if (!first[b]) continue;
        for (TokenId id : by_first_[b]) {
            JsonPrefix p = at;
            if (p.feed(pieces_[static_cast<size_t>(id)])) ok[static_cast<size_t>(id)] = 1;
        }
    }
    return cache_.emplace(key, std::move(ok)).first->second;
}

bool JsonTokenMask::apply(const JsonPrefix& at, std::span<float> logits) {
    const std::vector<uint8_t>& ok = allowed(at);
    if (std::find(ok.begin(), ok.end(), uint8_t{1}) == ok.end()) return false;
    const size_t n = std::min(logits.size(), ok.size());
    for (size_t i = 0; i < n; ++i) {
        if (!ok[i]) logits[i] = -std::numeric_limits<float>::infinity();
    }
    return true;
}

}  // namespace lazyllm
