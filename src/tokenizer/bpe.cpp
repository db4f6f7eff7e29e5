#include "tokenizer/bpe.h"

#include <algorithm>
#include <climits>

namespace lazyllm::tokenizer {
namespace {

constexpr int32_t kNoMerge = INT32_MAX;
// Pieces up to this many symbols use the linear scan: almost every word of natural text. Long
// pieces (runs of spaces, long numbers in non-digit-split vocabularies, base64) use the heap.
constexpr size_t kLinearMaxSymbols = 48;
constexpr const char* kKeyMerges = "tokenizer.ggml.merges";

}  // namespace

void MergeTable::reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    if (cap > slots_.size()) {
        std::vector<Slot> old = std::move(slots_);
        slots_.assign(cap, Slot{});
        mask_ = cap - 1;
        size_ = 0;
        for (const Slot& s : old) {
            if (s.key == kEmpty) continue;
            insert(static_cast<TokenId>(s.key >> 32), static_cast<TokenId>(s.key & 0xFFFFFFFFu),
                   s.merge);
        }
    }
}

void MergeTable::grow() { reserve(slots_.size()); }

void MergeTable::insert(TokenId left, TokenId right, Merge m) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const uint64_t key = pack(left, right);
    for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
        Slot& s = slots_[i];
        if (s.key == key) return;  // keep the lower rank
        if (s.key == kEmpty) {
            s.key = key;
            s.merge = m;
            ++size_;
            return;
        }
    }
}

Result<BpeModel> BpeModel::create(const Vocab& vocab, bool ignore_merges, bool byte_level) {
    BpeModel m;
    m.ignore_merges_ = ignore_merges;
    m.byte_level_ = byte_level;
    for (int b = 0; b < 256; ++b) {
        auto id = byte_level ? vocab.find(m.byte_map_.byte_to_utf8(static_cast<uint8_t>(b)))
                             : vocab.find(fmt::format("<0x{:02X}>", b));
        m.byte_token_[b] = id ? *id : -1;
    }
    m.merges_.reserve(vocab.merges.size());
    std::string joined;
    for (size_t i = 0; i < vocab.merges.size(); ++i) {
        const std::string& entry = vocab.merges[i];
        // Split at the first space after the first byte, as llama.cpp does (a token may itself
        // start with a space in non-byte-level vocabularies).
        const size_t sp = entry.size() > 1 ? entry.find(' ', 1) : std::string::npos;
        if (sp == std::string::npos || sp + 1 >= entry.size()) {
            return make_error(ErrorCode::kCorrupt,
                              "key '{}'[{}] = '{}' is not two tokens separated by a space",
                              kKeyMerges, i, entry);
        }
        const std::string_view left(entry.data(), sp);
        const std::string_view right(entry.data() + sp + 1, entry.size() - sp - 1);
        auto l = vocab.find(left);
        auto r = vocab.find(right);
        joined.assign(left);
        joined.append(right);
        auto res = vocab.find(joined);
        if (!l || !r || !res) {
            const std::string_view missing = !l ? left : (!r ? right : std::string_view(joined));
            return make_error(ErrorCode::kCorrupt,
                              "key '{}'[{}] = '{}' refers to '{}', which is not in the vocabulary",
                              kKeyMerges, i, entry, missing);
        }
        m.merges_.insert(*l, *r, {static_cast<int32_t>(i), *res});
    }
    return m;
}

void BpeModel::load_bytes(std::string_view bytes, Scratch& s) const {
    s.syms.clear();
    for (char c : bytes) {
        const TokenId id = byte_token_[static_cast<uint8_t>(c)];
        if (id >= 0) s.syms.push_back(id);
    }
}

void BpeModel::merge(Scratch& s, std::vector<TokenId>& out) const {
    if (s.syms.size() <= kLinearMaxSymbols) {
        merge_linear(s, out);
    } else {
        merge_heap(s, out);
    }
}

void BpeModel::encode_chars(const Vocab& vocab, std::string_view text, Scratch& s,
                            std::vector<TokenId>& out) const {
    // A run of newlines that is a token stays whole (llama.cpp, for Gemma 4: its merges would
    // build another split of such runs than its tokenizer.json does).
    if (text.find_first_not_of('\n') == std::string_view::npos) {
        if (auto id = vocab.find(text)) {
            out.push_back(*id);
            return;
        }
    }
    s.syms.clear();
    for (size_t pos = 0; pos < text.size();) {
        const size_t n = std::min(utf8_seq_len(static_cast<uint8_t>(text[pos])), text.size() - pos);
        const std::string_view ch = text.substr(pos, n);
        pos += n;
        if (auto id = vocab.find(ch)) {
            s.syms.push_back(*id);
            continue;
        }
        merge(s, out);  // the symbols before it
        s.syms.clear();
        for (char c : ch) {
            const TokenId b = byte_token_[static_cast<uint8_t>(c)];
            if (b >= 0) out.push_back(b);
        }
    }
    merge(s, out);
}

void BpeModel::encode_piece(const Vocab& vocab, std::string_view bytes, Scratch& s,
                            std::vector<TokenId>& out) const {
    if (!byte_level_) {
        encode_chars(vocab, bytes, s, out);
        return;
    }
    if (ignore_merges_) {
        // Llama 3 (HF BPE ignore_merges): a piece that is itself a token is not merged.
        s.mapped.clear();
        for (char c : bytes) s.mapped.append(byte_map_.byte_to_utf8(static_cast<uint8_t>(c)));
        if (auto id = vocab.find(s.mapped)) {
            out.push_back(*id);
            return;
        }
    }
    load_bytes(bytes, s);
    merge(s, out);
}

void BpeModel::merge_linear(Scratch& s, std::vector<TokenId>& out) const {
    std::vector<TokenId>& syms = s.syms;
    if (syms.size() > 1) {
        // ranks[i] / results (kept in s.next) describe the pair (syms[i], syms[i + 1]).
        std::vector<int32_t>& ranks = s.ranks;
        std::vector<int32_t>& results = s.next;
        const size_t n = syms.size();
        ranks.resize(n - 1);
        results.resize(n - 1);
        auto set_pair = [&](size_t i) {
            const MergeTable::Merge* m = merges_.find(syms[i], syms[i + 1]);
            ranks[i] = m ? m->rank : kNoMerge;
            results[i] = m ? m->result : -1;
        };
        for (size_t i = 0; i + 1 < n; ++i) set_pair(i);
        while (!ranks.empty()) {
            size_t best = 0;
            for (size_t i = 1; i < ranks.size(); ++i) {
                if (ranks[i] < ranks[best]) best = i;
            }
            if (ranks[best] == kNoMerge) break;
            syms[best] = results[best];
            syms.erase(syms.begin() + static_cast<ptrdiff_t>(best) + 1);
            ranks.erase(ranks.begin() + static_cast<ptrdiff_t>(best));
            results.erase(results.begin() + static_cast<ptrdiff_t>(best));
            if (best > 0) set_pair(best - 1);
            if (best + 1 < syms.size()) set_pair(best);
        }
    }
    out.insert(out.end(), syms.begin(), syms.end());
}

void BpeModel::merge_heap(Scratch& s, std::vector<TokenId>& out) const {
    std::vector<TokenId>& syms = s.syms;
    const auto n = static_cast<int32_t>(syms.size());
    if (n == 0) return;
    s.prev.resize(n);
    s.next.resize(n);
    for (int32_t i = 0; i < n; ++i) {
        s.prev[i] = i - 1;
        s.next[i] = i + 1 < n ? i + 1 : -1;
    }
    using Entry = Scratch::HeapEntry;
    auto& heap = s.heap;
    heap.clear();
    // Min-heap on (rank, left position): the leftmost of equal-rank pairs merges first.
    auto later = [](const Entry& a, const Entry& b) {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    };
    auto push = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const MergeTable::Merge* m = merges_.find(syms[left], syms[right]);
        if (m == nullptr) return;
        heap.push_back({m->rank, left, right, syms[left], syms[right]});
        std::push_heap(heap.begin(), heap.end(), later);
    };
    for (int32_t i = 0; i + 1 < n; ++i) push(i, i + 1);
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const Entry e = heap.back();
        heap.pop_back();
        // Stale when either side has merged since the entry was pushed (a merged symbol's id
        // is a longer token, so it never equals the id recorded here).
        if (syms[e.left] != e.left_id || syms[e.right] != e.right_id || s.next[e.left] != e.right) {
            continue;
        }
        const MergeTable::Merge* m = merges_.find(e.left_id, e.right_id);
        syms[e.left] = m->result;
        syms[e.right] = -1;
        const int32_t after = s.next[e.right];
        s.next[e.left] = after;
        if (after >= 0) s.prev[after] = e.left;
        push(s.prev[e.left], e.left);
        push(e.left, after);
    }
    for (int32_t i = 0; i >= 0; i = s.next[i]) out.push_back(syms[i]);
}

}  // namespace lazyllm::tokenizer
