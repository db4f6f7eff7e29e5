#include "tokenizer/vocab.h"

#include <cmath>

#include "lazyllm/gguf.h"

namespace lazyllm::tokenizer {
namespace {

// Keys (llama.cpp gguf-py constants.py, Keys.Tokenizer).
constexpr const char* kKeyModel = "tokenizer.ggml.model";
constexpr const char* kKeyPre = "tokenizer.ggml.pre";
constexpr const char* kKeyTokens = "tokenizer.ggml.tokens";
constexpr const char* kKeyScores = "tokenizer.ggml.scores";
constexpr const char* kKeyTokenType = "tokenizer.ggml.token_type";
constexpr const char* kKeyMerges = "tokenizer.ggml.merges";
constexpr const char* kKeyAddBos = "tokenizer.ggml.add_bos_token";
constexpr const char* kKeyAddSpacePrefix = "tokenizer.ggml.add_space_prefix";
constexpr const char* kKeyChatTemplate = "tokenizer.chat_template";

Error key_error(const char* key, const Error& e) {
    return e.with_context(fmt::format("key '{}'", key));
}

Result<std::string> optional_string(const GgufFile& gguf, const char* key) {
    const GgufValue* v = gguf.find(key);
    if (v == nullptr) return std::string();
    auto s = v->as_string();
    if (!s.ok()) return key_error(key, s.error());
    return std::move(s).value();
}

Result<std::optional<bool>> optional_bool(const GgufFile& gguf, const char* key) {
    const GgufValue* v = gguf.find(key);
    if (v == nullptr) return std::optional<bool>();
    auto b = v->as_bool();
    if (!b.ok()) return key_error(key, b.error());
    return std::optional<bool>(*b);
}

// A special token id key: absent is fine; present must be a valid id.
Result<std::optional<TokenId>> optional_id(const GgufFile& gguf, const char* key, int32_t n_vocab) {
    const GgufValue* v = gguf.find(key);
    if (v == nullptr) return std::optional<TokenId>();
    auto id = v->as_uint();
    if (!id.ok()) return key_error(key, id.error());
    if (*id >= static_cast<uint64_t>(n_vocab)) {
        return make_error(ErrorCode::kCorrupt,
                          "key '{}' = {} is out of range: the vocabulary has {} tokens", key, *id,
                          n_vocab);
    }
    return std::optional<TokenId>(static_cast<TokenId>(*id));
}

Error length_error(const char* key, size_t n, size_t n_vocab) {
    return make_error(ErrorCode::kCorrupt, "key '{}' has {} entries but '{}' has {}", key, n,
                      kKeyTokens, n_vocab);
}

// tokenizer.ggml.scores and token_type: optional, one entry per token when present.
Status read_scores_and_types(const GgufFile& gguf, Vocab& vocab) {
    const size_t n = vocab.tokens.size();
    vocab.scores.assign(n, 0.0f);
    if (const GgufValue* scores = gguf.find(kKeyScores)) {
        auto s = scores->as_float_array();
        if (!s.ok()) return key_error(kKeyScores, s.error());
        if (s->size() != n) return length_error(kKeyScores, s->size(), n);
        for (size_t i = 0; i < n; ++i) {
            vocab.scores[i] = static_cast<float>((*s)[i]);
            // SentencePiece merges by score in a heap: NaN has no order there.
            if (std::isnan(vocab.scores[i])) {
                return make_error(ErrorCode::kCorrupt, "{}[{}] is NaN", kKeyScores, i);
            }
        }
    }

    vocab.types.assign(n, TokenType::kNormal);
    if (const GgufValue* types = gguf.find(kKeyTokenType)) {
        auto t = types->as_int_array();
        if (!t.ok()) return key_error(kKeyTokenType, t.error());
        if (t->size() != n) return length_error(kKeyTokenType, t->size(), n);
        for (size_t i = 0; i < n; ++i) {
            const int64_t v = (*t)[i];
            if (v < 0 || v > static_cast<int64_t>(TokenType::kByte)) {
                return make_error(ErrorCode::kCorrupt, "key '{}'[{}] = {} is not a token type",
                                  kKeyTokenType, i, v);
            }
            vocab.types[i] = static_cast<TokenType>(v);
        }
    }
    return {};
}

// The special token ids: the tokenizer's defaults, then the file's keys.
Status read_special_ids(const GgufFile& gguf, int32_t n_vocab, Vocab& vocab) {
    // llama.cpp's defaults for SentencePiece vocabularies (llama-vocab.cpp, load()): <unk> = 0,
    // <s> = 1, </s> = 2, used when the keys are absent; BPE vocabularies have no defaults.
    if (vocab.model == "llama") {
        vocab.unk = 0;
        if (n_vocab > 1) vocab.bos = 1;
        if (n_vocab > 2) vocab.eos = 2;
    }
    // And for WordPiece: [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102 (BERT's uncased vocabulary).
    if (vocab.model == "bert" && n_vocab > 102) {
        vocab.pad = 0;
        vocab.unk = 100;
        vocab.bos = 101;
        vocab.sep = 102;
    }
    struct IdKey {
        const char* key;
        std::optional<TokenId>* dst;
    };
    const IdKey id_keys[] = {
        {"tokenizer.ggml.bos_token_id", &vocab.bos},
        {"tokenizer.ggml.eos_token_id", &vocab.eos},
        {"tokenizer.ggml.eot_token_id", &vocab.eot},
        {"tokenizer.ggml.eom_token_id", &vocab.eom},
        {"tokenizer.ggml.unknown_token_id", &vocab.unk},
        {"tokenizer.ggml.padding_token_id", &vocab.pad},
        {"tokenizer.ggml.seperator_token_id", &vocab.sep},  // sic, llama.cpp's spelling
        {"tokenizer.ggml.cls_token_id", &vocab.bos},        // llama.cpp reads [CLS] as BOS
    };
    for (const IdKey& k : id_keys) {
        LAZYLLM_ASSIGN_OR_RETURN(auto id, optional_id(gguf, k.key, n_vocab));
        if (id) *k.dst = id;
    }
    return {};
}

}  // namespace

Result<Vocab> load_vocab(const GgufFile& gguf) {
    Vocab vocab;
    const GgufValue* model = gguf.find(kKeyModel);
    if (model == nullptr) return make_error(ErrorCode::kNotFound, "missing key '{}'", kKeyModel);
    auto model_s = model->as_string();
    if (!model_s.ok()) return key_error(kKeyModel, model_s.error());
    vocab.model = *model_s;
    if (vocab.model != "gpt2" && vocab.model != "llama" && vocab.model != "gemma4" &&
        vocab.model != "bert") {
        return make_error(ErrorCode::kUnsupported,
                          "key '{}' = '{}': only 'gpt2' (byte-level BPE), 'llama' "
                          "(SentencePiece BPE), 'gemma4' (BPE on UTF-8) and 'bert' (WordPiece) "
                          "tokenizers are supported",
                          kKeyModel, vocab.model);
    }
    LAZYLLM_ASSIGN_OR_RETURN(vocab.pre, optional_string(gguf, kKeyPre));

    const GgufValue* tokens = gguf.find(kKeyTokens);
    if (tokens == nullptr) return make_error(ErrorCode::kNotFound, "missing key '{}'", kKeyTokens);
    auto tokens_v = tokens->as_string_array();
    if (!tokens_v.ok()) return key_error(kKeyTokens, tokens_v.error());
    vocab.tokens = std::move(tokens_v).value();
    const size_t n = vocab.tokens.size();
    if (n == 0) return make_error(ErrorCode::kCorrupt, "key '{}' is empty", kKeyTokens);
    if (n > static_cast<size_t>(INT32_MAX)) {
        return make_error(ErrorCode::kCorrupt, "key '{}' has {} entries (too many)", kKeyTokens, n);
    }
    const auto n_vocab = static_cast<int32_t>(n);

    LAZYLLM_TRY(read_scores_and_types(gguf, vocab));

    if (vocab.model == "gpt2" || vocab.model == "gemma4") {
        const GgufValue* merges = gguf.find(kKeyMerges);
        if (merges == nullptr) {
            return make_error(ErrorCode::kNotFound, "missing key '{}' (required by '{}' = {})",
                              kKeyMerges, kKeyModel, vocab.model);
        }
        auto m = merges->as_string_array();
        if (!m.ok()) return key_error(kKeyMerges, m.error());
        vocab.merges = std::move(m).value();
    }

    vocab.token_to_id.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        if (!vocab.tokens[i].empty()) vocab.token_to_id[vocab.tokens[i]] = static_cast<TokenId>(i);
    }

    LAZYLLM_TRY(read_special_ids(gguf, n_vocab, vocab));

    LAZYLLM_ASSIGN_OR_RETURN(vocab.add_bos, optional_bool(gguf, kKeyAddBos));
    LAZYLLM_ASSIGN_OR_RETURN(vocab.add_space_prefix, optional_bool(gguf, kKeyAddSpacePrefix));
    LAZYLLM_ASSIGN_OR_RETURN(vocab.add_sep, optional_bool(gguf, "tokenizer.ggml.add_sep_token"));
    LAZYLLM_ASSIGN_OR_RETURN(vocab.lowercase,
                             optional_bool(gguf, "tokenizer.ggml.normalizer.lowercase"));
    LAZYLLM_ASSIGN_OR_RETURN(vocab.strip_accents,
                             optional_bool(gguf, "tokenizer.ggml.normalizer.strip_accents"));
    LAZYLLM_ASSIGN_OR_RETURN(vocab.chat_template, optional_string(gguf, kKeyChatTemplate));
    return vocab;
}

}  // namespace lazyllm::tokenizer
