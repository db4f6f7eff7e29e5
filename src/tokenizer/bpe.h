// Byte-level BPE (GPT-2 style, tokenizer.ggml.model = "gpt2"): each pre-tokenized piece starts
// as one symbol per byte (the vocabulary token of the byte's GPT-2 code point), then the
// adjacent pair with the lowest merge rank is merged, leftmost first on ties, until no pair has
// a merge. Same result as HF tokenizers' BPE (word.rs merge_all) and llama.cpp's
// llm_tokenizer_bpe_session.
//
// The same merges run on raw UTF-8 for SentencePiece-style BPE vocabularies (Gemma 4,
// tokenizer.ggml.model = "gemma4"): a piece starts as one symbol per UTF-8 character, and a
// character without a token becomes its bytes' <0xXX> tokens (HF BPE byte_fallback). Such a
// character never merges (every merge is between tokens), so it splits the piece in two.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lazyllm/result.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace lazyllm::tokenizer {

// Open-addressing map from a token pair to its merge (rank and result), built once.
class MergeTable {
public:
    struct Merge {
        int32_t rank;
        TokenId result;
    };
    void reserve(size_t n);
    // Keeps the first (lowest-rank) entry when a pair occurs twice.
    void insert(TokenId left, TokenId right, Merge m);
    const Merge* find(TokenId left, TokenId right) const {
        const uint64_t key = pack(left, right);
        for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.key == key) return &s.merge;
            if (s.key == kEmpty) return nullptr;
        }
    }
    size_t size() const { return size_; }

private:
    static constexpr uint64_t kEmpty = ~uint64_t{0};
    struct Slot {
        uint64_t key = kEmpty;
        Merge merge{0, 0};
    };
    static uint64_t pack(TokenId l, TokenId r) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
    }
    static size_t hash(uint64_t k) {
        k ^= k >> 29;
        k *= 0xbf58476d1ce4e5b9ULL;
        k ^= k >> 32;
        return static_cast<size_t>(k);
    }
    void grow();
    std::vector<Slot> slots_ = std::vector<Slot>(16);
    size_t mask_ = 15;
    size_t size_ = 0;
};

class BpeModel {
public:
    // Resolves tokenizer.ggml.merges to ids: every merge is "A B" with A, B and AB tokens of the
    // vocabulary, else an error naming the entry. Bytes without a token are dropped when
    // encoding, as HF's BPE without byte_fallback or unk token does.
    // With byte_level false the symbols are UTF-8 characters (see above).
    static Result<BpeModel> create(const Vocab& vocab, bool ignore_merges, bool byte_level = true);

    // Appends the ids of one pre-tokenized piece (raw bytes). `vocab` is the one given to
    // create(). Scratch buffers are reused across calls.
    struct Scratch {
        std::vector<TokenId> syms;
        std::vector<int32_t> ranks;
        std::vector<int32_t> prev, next;
        std::string mapped;
        struct HeapEntry {
            int32_t rank, left, right;
            TokenId left_id, right_id;
        };
        std::vector<HeapEntry> heap;
    };
    void encode_piece(const Vocab& vocab, std::string_view bytes, Scratch& scratch,
                      std::vector<TokenId>& out) const;

    // The two merge strategies (exposed for tests; encode_piece picks by length): a linear scan
    // over pair ranks, quadratic in the symbol count, and a heap, O(n log n).
    void merge_linear(Scratch& s, std::vector<TokenId>& out) const;
    void merge_heap(Scratch& s, std::vector<TokenId>& out) const;
    // Loads scratch.syms with the byte tokens of `bytes` (dropping bytes without a token).
    void load_bytes(std::string_view bytes, Scratch& s) const;

    const ByteUnicodeMap& byte_map() const { return byte_map_; }

private:
    // Merges s.syms into `out` with the strategy that suits its length.
    void merge(Scratch& s, std::vector<TokenId>& out) const;
    void encode_chars(const Vocab& vocab, std::string_view text, Scratch& s,
                      std::vector<TokenId>& out) const;

    ByteUnicodeMap byte_map_;
    // Byte-level: the token of the byte's GPT-2 code point; else the <0xXX> fallback token.
    std::array<TokenId, 256> byte_token_{};  // -1: the byte has no token
    bool byte_level_ = true;
    MergeTable merges_;
    bool ignore_merges_ = false;
};

}  // namespace lazyllm::tokenizer
