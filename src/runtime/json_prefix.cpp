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
    if ((c == '}' && top == '{') || (c == ']' && top == '[')) {
        pop();
        end_value();
        return true;
    }
    return false;
}

bool JsonPrefix::feed(uint8_t c) {
    JsonPrefix next = *this;  // all or nothing
    if (!is_space(c)) next.spaces_ = 0;
    const auto to = [&next](State s) {
        next.state_ = s;
        return true;
    };
    const auto close = [&next] {  // '}' or ']' of the innermost container
        next.pop();
        next.end_value();
        return true;
    };
    const auto number_end = [&next, c] {  // c ends a number: as after any value
        next.end_value();
        return next.after_value(c);
    };
    bool ok = false;
    switch (state_) {
        case State::kStart:
            ok = c == '{' ? to(State::kKeyOrClose) && next.push('{') : next.space(c);
            break;
        case State::kKeyOrClose:
        case State::kKey:
            if (c == '}' && state_ == State::kKeyOrClose) {
                ok = close();
            } else if (c == '"') {
                next.key_ = true;
                ok = to(State::kString);
            } else {
                ok = next.space(c);
            }
            break;
        case State::kColon:
            ok = c == ':' ? to(State::kValue) : next.space(c);
            break;
        case State::kValueOrClose:
        case State::kValue:
            if (c == ']' && state_ == State::kValueOrClose) {
                ok = close();
            } else {
                ok = is_space(c) ? next.space(c) : next.value_start(c);
            }
            break;
        case State::kAfterValue:
            ok = next.after_value(c);
            break;
        case State::kString:
            if (c == '"') {
                ok = key_ ? to(State::kColon) : (next.end_value(), true);
                next.key_ = false;
            } else if (c == '\\') {
                ok = to(State::kEscape);
            } else if (c >= 0x20 && c < 0x80) {
                ok = true;
            } else if (c >= 0xC2 && c <= 0xF4) {
                // Lead bytes of 2-, 3- and 4-byte characters, with the first continuation's range
                // that rules out overlong forms, surrogates and code points over U+10FFFF.
                next.utf8_left_ = c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
                next.utf8_min_ = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
                next.utf8_max_ = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
                ok = to(State::kUtf8);
            }
            break;
        case State::kEscape:
            if (c == 'u') {
                next.hex_left_ = 4;
                ok = to(State::kHex);
            } else if (std::string_view("\"\\/bfnrt").find(static_cast<char>(c)) !=
                       std::string_view::npos) {
                ok = to(State::kString);
            }
            break;
        case State::kHex:
            if (is_hex(c)) ok = --next.hex_left_ == 0 ? to(State::kString) : true;
            break;
        case State::kUtf8:
            if (c >= utf8_min_ && c <= utf8_max_) {
                next.utf8_min_ = 0x80;
                next.utf8_max_ = 0xBF;
                ok = --next.utf8_left_ == 0 ? to(State::kString) : true;
            }
            break;
        case State::kMinus:
            if (is_digit(c)) ok = to(c == '0' ? State::kZero : State::kInt);
            break;
        case State::kInt:
        case State::kZero:
            if (is_digit(c) && state_ == State::kInt) {
                ok = true;
            } else if (c == '.') {
                ok = to(State::kFracStart);
            } else if (c == 'e' || c == 'E') {
                ok = to(State::kExpStart);
            } else {
                ok = number_end();
            }
            break;
        case State::kFracStart:
            if (is_digit(c)) ok = to(State::kFrac);
            break;
        case State::kFrac:
            if (is_digit(c)) {
                ok = true;
            } else if (c == 'e' || c == 'E') {
                ok = to(State::kExpStart);
            } else {
                ok = number_end();
            }
            break;
        case State::kExpStart:
            if (c == '+' || c == '-') {
                ok = to(State::kExpSign);
            } else if (is_digit(c)) {
                ok = to(State::kExp);
            }
            break;
        case State::kExpSign:
            if (is_digit(c)) ok = to(State::kExp);
            break;
        case State::kExp:
            ok = is_digit(c) || number_end();
            break;
        case State::kLiteral: {
            const std::string_view lit = kLiterals[lit_];
            if (c == static_cast<uint8_t>(lit[lit_at_])) {
                if (++next.lit_at_ == lit.size()) next.end_value();
                ok = true;
            }
            break;
        }
        case State::kDone:
            ok = next.space(c);
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
