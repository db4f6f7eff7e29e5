#include "tokenizer/spm.h"

#include <fmt/format.h>

#include <queue>

#include "tokenizer/unicode.h"

namespace lazyllm::tokenizer {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

struct Symbol {
    int32_t prev;
    int32_t next;
    uint32_t pos;  // byte offset in the escaped text
    uint32_t len;  // bytes; 0 once merged into its left neighbour
};

struct Bigram {
    int32_t left;
    int32_t right;
    float score;
    uint32_t len;
};

// Highest score first; the leftmost of equal scores first (llm_bigram_spm::comparator).
struct BigramOrder {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

}  // namespace

int SpmModel::parse_byte_token(std::string_view text) {
    if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    const int hi = hex(text[3]);
    const int lo = hex(text[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

SpmModel::SpmModel(const Vocab& vocab) {
    for (int b = 0; b < 256; ++b) {
        // llama_vocab::byte_to_token: "<0xXX>", else the byte as a one-character token.
        auto id = vocab.find(fmt::format("<0x{:02X}>", b));
        if (!id) id = vocab.find(std::string(1, static_cast<char>(b)));
        byte_token_[b] = id ? *id : -1;
    }
}

void SpmModel::encode(const Vocab& vocab, std::string_view text, bool prefix_space,
                      std::vector<TokenId>& out) const {
    std::string s;
    s.reserve(text.size() + 8);
    if (prefix_space) s.append(kSpaceMarker);
    for (char c : text) {
        if (c == ' ') {
            s.append(kSpaceMarker);
        } else {
            s += c;
        }
    }
    if (s.empty()) return;

    std::vector<Symbol> syms;
    syms.reserve(s.size());
    for (size_t pos = 0; pos < s.size();) {
        // A whole valid character, else one byte: an invalid or cut sequence must not take the
        // next character's bytes (a following space marker would decode as U+2581, not ' ').
        uint32_t cp = 0;
        const size_t len = std::max<size_t>(decode_utf8(s, pos, &cp), 1);
        const auto i = static_cast<int32_t>(syms.size());
        syms.push_back({i - 1, pos + len < s.size() ? i + 1 : -1, static_cast<uint32_t>(pos),
                        static_cast<uint32_t>(len)});
        pos += len;
    }

    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
    auto try_add = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const uint32_t len = syms[left].len + syms[right].len;
        auto id = vocab.find(std::string_view(s).substr(syms[left].pos, len));
        if (!id) return;
        queue.push({left, right, vocab.scores[*id], len});
    };
    for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& l = syms[b.left];
        Symbol& r = syms[b.right];
        // Stale: one side was merged away, or has grown since.
        if (l.len == 0 || r.len == 0 || l.len + r.len != b.len) continue;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) syms[r.next].prev = b.left;
        try_add(l.prev, b.left);
        try_add(b.left, l.next);
    }

    // Every merged symbol is a token (a pair is queued only if it forms one), so llama.cpp's
    // re-split of non-token symbols only ever reaches single characters: those become bytes.
    for (int32_t i = 0; i >= 0; i = syms[i].next) {
        const std::string_view piece = std::string_view(s).substr(syms[i].pos, syms[i].len);
        if (auto id = vocab.find(piece)) {
            out.push_back(*id);
            continue;
        }
        for (char c : piece) {
            const TokenId bt = byte_token_[static_cast<uint8_t>(c)];
            if (bt >= 0) {
                out.push_back(bt);
            } else if (vocab.unk) {
                out.push_back(*vocab.unk);
            }
        }
    }
}

}  // namespace lazyllm::tokenizer
