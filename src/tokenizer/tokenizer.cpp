// Tokenizer: vocabulary from GGUF, special-token splitting, and dispatch to the byte-level BPE
// (with its pre-tokenizer) or SentencePiece model; decoding to pieces.
//
// Behaviour follows HF tokenizers and llama.cpp (llama-vocab.cpp), which agree on these points:
// - Control (and unknown-type) token texts are split out of the input only with parse_special;
//   user-defined tokens are always split out, since HF stores them as non-special added tokens
//   that are matched in any input (tokenizers/src/tokenizer/added_vocabulary.rs) and llama.cpp's
//   tokenizer_st_partition does the same. Matching is leftmost, then longest.
// - SentencePiece text gets a leading space at the start and after every special token when
//   add_space_prefix (default true), and decode() drops that one leading space again (HF's
//   Strip(left=1) decoder), so decode(encode(s)) == s.
// - decode() never cleans up spaces before punctuation (clean_up_tokenization_spaces): the
//   output is exactly the bytes of the pieces.
#include "lazyllm/tokenizer.h"

#include <algorithm>
#include <array>

#include "base/check.h"
#include "lazyllm/gguf.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/spm.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"
#include "tokenizer/wpm.h"

namespace lazyllm {

using tokenizer::BpeModel;
using tokenizer::Piece;
using tokenizer::PreTokenizer;
using tokenizer::PreTypeInfo;
using tokenizer::SpmModel;
using tokenizer::TokenType;
using tokenizer::Vocab;
using tokenizer::WpmModel;

namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581

// Token texts that end a turn or a document in the chat formats we know, beyond eos/eot/eom:
// llama.cpp adds the same texts to its end-of-generation set (llama-vocab.cpp, load()).
constexpr std::array<std::string_view, 9> kEndOfGenerationTexts = {
    "<|eot_id|>",      "<|eom_id|>",    "<|im_end|>",
    "<|end|>",         "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>", "<EOT>",         "<｜end▁of▁sentence｜>",
};

// Bytes of a byte-level BPE token: each code point of its text stands for one byte. A code
// point outside the mapping (not produced by GPT-2's encoder) is kept as its UTF-8.
std::string byte_level_piece(const tokenizer::ByteUnicodeMap& map, const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        uint32_t cp = 0;
        const size_t n = tokenizer::decode_utf8(text, i, &cp);
        if (n == 0) {  // invalid UTF-8 in the vocabulary: keep the byte
            out += text[i++];
            continue;
        }
        const int b = map.cp_to_byte(cp);
        if (b >= 0) {
            out += static_cast<char>(b);
        } else {
            out.append(text, i, n);
        }
        i += n;
    }
    return out;
}

std::string spm_piece(const Vocab& vocab, TokenId id) {
    const std::string& text = vocab.tokens[id];
    if (vocab.types[id] == TokenType::kByte) {
        const int b = SpmModel::parse_byte_token(text);
        if (b >= 0) return std::string(1, static_cast<char>(b));
    }
    if (vocab.types[id] == TokenType::kUserDefined) return text;
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        if (text.compare(pos, kSpaceMarker.size(), kSpaceMarker) == 0) {
            out += ' ';
            pos += kSpaceMarker.size();
        } else {
            out += text[pos++];
        }
    }
    return out;
}

}  // namespace

struct Tokenizer::Impl {
    Vocab vocab;
    TokenizerKind kind = TokenizerKind::kBpe;
    std::string kind_name;
    PreTypeInfo pre_info;
    PreTokenizer pre;
    std::optional<BpeModel> bpe;
    std::optional<SpmModel> spm;
    std::optional<WpmModel> wpm;
    bool add_sep = false;  // WordPiece: [SEP] closes a sequence that add_bos opens with [CLS]
    bool add_bos = false;
    bool add_space_prefix = false;
    std::vector<std::string> pieces;  // [n_vocab] output bytes (control tokens: their text)
    std::vector<uint8_t> is_eog;      // [n_vocab]
    // Bytes a byte-level BPE vocabulary has no token for: encode drops them (unencodable_byte).
    std::array<bool, 256> byte_dropped{};

    // Splittable special tokens, sorted by text (bytes as unsigned), user-defined before control
    // where the texts are equal, at most one of each per text.
    struct Special {
        std::string_view text;
        TokenId id;
        bool control;  // needs parse_special
    };
    std::vector<Special> specials;
    std::array<bool, 256> special_first{}, user_first{};  // first bytes: of any; of user-defined

    // Finds the leftmost-longest special token in text[from..); returns its position or npos.
    // At each position a walk down the sorted texts, narrowing by binary search one byte at a
    // time: O(length of the longest match x log specials), whatever their number (Gemma 3 has
    // 6,321 starting with '<'; trying each against every '<' of a prompt took 38 us a byte).
    size_t find_special(std::string_view text, size_t from, bool parse_special,
                        const Special** found) const {
        const auto& first = parse_special ? special_first : user_first;
        for (size_t i = from; i < text.size(); ++i) {
            if (!first[static_cast<uint8_t>(text[i])]) continue;
            const Special* best = nullptr;
            auto lo = specials.begin(), hi = specials.end();
            for (size_t d = 0; i + d < text.size() && lo != hi; ++d) {
                // [lo, hi) share text[i, i + d); those that end there sort first.
                while (lo != hi && lo->text.size() == d) ++lo;
                const auto c = static_cast<uint8_t>(text[i + d]);
                lo = std::partition_point(
                    lo, hi, [&](const Special& s) { return static_cast<uint8_t>(s.text[d]) < c; });
                hi = std::partition_point(
                    lo, hi, [&](const Special& s) { return static_cast<uint8_t>(s.text[d]) == c; });
                for (auto it = lo; it != hi && it->text.size() == d + 1; ++it) {
                    if (parse_special || !it->control) {
                        best = &*it;
                        break;
                    }
                }
            }
            if (best) {
                *found = best;
                return i;
            }
        }
        return std::string_view::npos;
    }

    void encode_raw(std::string_view text, bool after_special, std::vector<TokenId>& out) const {
        // Offsets inside the models are 32-bit: feed texts over 1 GiB in chunks, cut after a
        // newline or space where there is one (a cut can change the tokens next to it).
        constexpr size_t kMaxChunk = size_t{1} << 30;
        while (text.size() > kMaxChunk) {
            size_t cut = text.find_last_of("\n ", kMaxChunk - 1);
            cut = cut == std::string_view::npos || cut == 0 ? kMaxChunk : cut + 1;
            encode_chunk(text.substr(0, cut), after_special, out);
            text.remove_prefix(cut);
            after_special = false;
        }
        encode_chunk(text, after_special, out);
    }

    void encode_chunk(std::string_view text, bool after_special, std::vector<TokenId>& out) const {
        if (spm) {
            spm->encode(vocab, text, add_space_prefix && after_special, out);
            return;
        }
        if (wpm) {
            wpm->encode(vocab, text, out);
            return;
        }
        std::string escaped;
        if (!pre_info.byte_level) {  // SentencePiece-style BPE: spaces are U+2581 in tokens
            escaped.reserve(text.size());
            for (char c : text) {
                if (c == ' ') {
                    escaped += kSpaceMarker;
                } else {
                    escaped += c;
                }
            }
            text = escaped;
        }
        std::vector<Piece> parts;
        pre.split(text, parts);
        BpeModel::Scratch scratch;
        for (const Piece& p : parts) {
            bpe->encode_piece(vocab, text.substr(p.begin, p.end - p.begin), scratch, out);
        }
    }
};

Tokenizer::Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Result<Tokenizer> Tokenizer::from_gguf(const GgufFile& gguf) {
    auto impl = std::make_unique<Impl>();
    LAZYLLM_ASSIGN_OR_RETURN(impl->vocab, tokenizer::load_vocab(gguf));
    Vocab& v = impl->vocab;
    const int32_t n_vocab = v.n_vocab();

    if (v.model == "gpt2" || v.model == "gemma4") {
        impl->kind = TokenizerKind::kBpe;
        // "gemma4" fixes its pre-tokenizer whatever tokenizer.ggml.pre says (as llama.cpp).
        impl->pre_info = tokenizer::pre_type_from_name(v.model == "gemma4" ? "gemma4" : v.pre);
        LAZYLLM_ASSIGN_OR_RETURN(impl->pre, PreTokenizer::create(impl->pre_info.type));
        LAZYLLM_ASSIGN_OR_RETURN(
            auto bpe, BpeModel::create(v, impl->pre_info.ignore_merges, impl->pre_info.byte_level));
        impl->bpe.emplace(std::move(bpe));
        impl->add_bos = v.add_bos.value_or(impl->pre_info.default_add_bos);
        if (v.model == "gemma4") impl->add_bos = true;  // llama.cpp overrides a false key
        impl->add_space_prefix = false;  // BPE spells spaces itself (or escapes them)
        const std::string_view pre_name = tokenizer::pre_type_name(impl->pre_info.type);
        impl->kind_name = v.model == "gemma4" ? std::string("gemma4 (bpe, utf-8)")
                          : impl->pre_info.known
                              ? fmt::format("gpt2 ({})", pre_name)
                              : fmt::format("gpt2 (gpt-2 regex; unknown pre '{}')", v.pre);
    } else if (v.model == "bert") {
        impl->kind = TokenizerKind::kWpm;
        impl->wpm.emplace(v);
        impl->add_bos = v.add_bos.value_or(true);
        impl->add_sep = v.add_sep.value_or(true) && v.sep.has_value();
        // Word-initial pieces decode with their leading space; decode() drops the first one.
        impl->add_space_prefix = true;
        impl->kind_name = "bert (wordpiece)";
    } else {
        impl->kind = TokenizerKind::kSpm;
        impl->spm.emplace(v);
        impl->add_bos = v.add_bos.value_or(true);
        impl->add_space_prefix = v.add_space_prefix.value_or(true);
        impl->kind_name = "llama (spm)";
    }
    if (impl->add_bos && !v.bos) {
        if (v.add_bos.value_or(false)) {
            return make_error(ErrorCode::kCorrupt,
                              "key 'tokenizer.ggml.add_bos_token' is true but there is no "
                              "'tokenizer.ggml.bos_token_id'");
        }
        impl->add_bos = false;  // a default only: nothing to add
    }

    impl->pieces.resize(n_vocab);
    tokenizer::ByteUnicodeMap byte_map;
    for (TokenId id = 0; id < n_vocab; ++id) {
        const TokenType t = v.types[id];
        if (t == TokenType::kControl || t == TokenType::kUnknown) {
            impl->pieces[id] = v.tokens[id];  // rendered only on request
        } else if (impl->kind != TokenizerKind::kBpe || !impl->pre_info.byte_level) {
            impl->pieces[id] = spm_piece(v, id);
        } else if (t == TokenType::kUserDefined) {
            impl->pieces[id] = v.tokens[id];
        } else {
            impl->pieces[id] = byte_level_piece(byte_map, v.tokens[id]);
        }
        if ((t == TokenType::kControl || t == TokenType::kUnknown ||
             t == TokenType::kUserDefined) &&
            !v.tokens[id].empty()) {
            const bool control = t != TokenType::kUserDefined;
            impl->specials.push_back({v.tokens[id], id, control});
            const auto first = static_cast<uint8_t>(v.tokens[id][0]);
            impl->special_first[first] = true;
            if (!control) impl->user_first[first] = true;
        }
    }
    // Equal texts: the lowest id of each kind, user-defined first (a hostile vocabulary may
    // repeat one text many times).
    auto& sp = impl->specials;
    std::stable_sort(sp.begin(), sp.end(), [](const auto& a, const auto& b) {
        return a.text != b.text ? a.text < b.text : a.control < b.control;
    });
    sp.erase(std::unique(sp.begin(), sp.end(),
                         [](const auto& a, const auto& b) {
                             return a.text == b.text && a.control == b.control;
                         }),
             sp.end());

    impl->is_eog.assign(n_vocab, 0);
    for (const auto& id : {v.eos, v.eot, v.eom}) {
        if (id) impl->is_eog[*id] = 1;
    }
    for (std::string_view text : kEndOfGenerationTexts) {
        if (auto id = v.find(text)) impl->is_eog[*id] = 1;
    }

    Tokenizer tok;
    tok.impl_ = std::move(impl);
    if (tok.impl_->kind == TokenizerKind::kBpe) {  // SentencePiece: byte fallback or <unk>
        for (int b = 0; b < 256; ++b) {
            const char c = static_cast<char>(b);
            tok.impl_->byte_dropped[b] = tok.encode(std::string_view(&c, 1), false, false).empty();
        }
    }
    return tok;
}

std::optional<size_t> Tokenizer::unencodable_byte(std::string_view text) const {
    if (!impl_) return std::nullopt;
    for (size_t i = 0; i < text.size(); ++i) {
        if (impl_->byte_dropped[static_cast<uint8_t>(text[i])]) return i;
    }
    return std::nullopt;
}

TokenizerKind Tokenizer::kind() const { return impl_ ? impl_->kind : TokenizerKind::kBpe; }
std::string_view Tokenizer::kind_name() const {
    return impl_ ? std::string_view(impl_->kind_name) : std::string_view();
}
std::string_view Tokenizer::pre() const {
    return impl_ ? std::string_view(impl_->vocab.pre) : std::string_view();
}
int32_t Tokenizer::n_vocab() const { return impl_ ? impl_->vocab.n_vocab() : 0; }

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool parse_special,
                                       std::optional<bool> add_bos) const {
    LAZYLLM_CHECK_MSG(impl_ != nullptr, "encode on an empty Tokenizer");
    const Impl& im = *impl_;
    std::vector<TokenId> out;
    out.reserve(text.size() / 3 + 2);
    const bool bos = add_bos.value_or(im.add_bos) && im.vocab.bos;
    if (bos) out.push_back(*im.vocab.bos);
    bool after_special = true;  // the start counts as "after a special token" (SPM prefix)
    size_t start = 0;
    while (start < text.size()) {
        const Impl::Special* sp = nullptr;
        const size_t at = im.find_special(text, start, parse_special, &sp);
        const size_t raw_end = at == std::string_view::npos ? text.size() : at;
        if (raw_end > start) {
            im.encode_raw(text.substr(start, raw_end - start), after_special, out);
            after_special = false;
        }
        if (sp == nullptr) break;
        out.push_back(sp->id);
        after_special = true;
        start = at + sp->text.size();
    }
    if (bos && im.add_sep) out.push_back(*im.vocab.sep);
    return out;
}

std::string Tokenizer::token_to_piece(TokenId id, bool render_special) const {
    if (!impl_ || id < 0 || id >= impl_->vocab.n_vocab()) return std::string();
    if (!render_special && impl_->vocab.is_control_like(id)) return std::string();
    return impl_->pieces[id];
}

const std::string& Tokenizer::token_text(TokenId id) const {
    static const std::string kEmpty;
    if (!impl_ || id < 0 || id >= impl_->vocab.n_vocab()) return kEmpty;
    return impl_->vocab.tokens[id];
}

std::string Tokenizer::decode(const std::vector<TokenId>& ids, bool render_special) const {
    std::string out;
    bool first = true;
    for (TokenId id : ids) {
        if (!impl_ || id < 0 || id >= impl_->vocab.n_vocab()) continue;
        const bool control = impl_->vocab.is_control_like(id);
        if (control && !render_special) continue;
        const std::string& piece = impl_->pieces[id];
        if (piece.empty()) continue;
        if (first && !control && impl_->add_space_prefix && piece[0] == ' ') {
            out.append(piece, 1);
        } else {
            out += piece;
        }
        first = false;
    }
    return out;
}

std::optional<TokenId> Tokenizer::bos() const { return impl_ ? impl_->vocab.bos : std::nullopt; }
std::optional<TokenId> Tokenizer::eos() const { return impl_ ? impl_->vocab.eos : std::nullopt; }

bool Tokenizer::is_end_of_generation(TokenId id) const {
    return impl_ && id >= 0 && id < impl_->vocab.n_vocab() && impl_->is_eog[id] != 0;
}

std::vector<TokenId> Tokenizer::end_of_generation_ids() const {
    std::vector<TokenId> ids;
    if (!impl_) return ids;
    for (size_t i = 0; i < impl_->is_eog.size(); ++i) {
        if (impl_->is_eog[i]) ids.push_back(static_cast<TokenId>(i));
    }
    return ids;
}

std::optional<TokenId> Tokenizer::find_token(std::string_view text) const {
    return impl_ ? impl_->vocab.find(text) : std::nullopt;
}

const std::string& Tokenizer::chat_template() const {
    static const std::string kEmpty;
    return impl_ ? impl_->vocab.chat_template : kEmpty;
}

}  // namespace lazyllm
