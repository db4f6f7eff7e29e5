// Tokenizers for the eval tests: the tiny byte-level BPE vocabulary of support/tiny_model.h (no
// model file needed) and the default model's (SmolLM2, 49k tokens), each loaded once.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "lazyllm/gguf.h"
#include "lazyllm/tokenizer.h"
#include "support/model_path.h"
#include "support/tiny_model.h"

namespace lazyllm::eval::testing {

struct LoadedTokenizer {
    std::vector<uint8_t> bytes;  // backs `gguf` for the tiny model
    GgufFile gguf;
    Tokenizer tok;
};

inline const Tokenizer& tiny_tokenizer() {
    static const LoadedTokenizer* loaded = [] {
        auto* l = new LoadedTokenizer;
        l->bytes = lazyllm::testing::build_tiny_model({});
        auto gguf = GgufFile::from_memory(l->bytes.data(), l->bytes.size(), "tiny");
        EXPECT_TRUE(gguf.ok()) << gguf.error().message();
        l->gguf = std::move(gguf).value();
        auto tok = Tokenizer::from_gguf(l->gguf);
        EXPECT_TRUE(tok.ok()) << tok.error().message();
        l->tok = std::move(tok).value();
        return l;
    }();
    return loaded->tok;
}

// The default model's tokenizer, or nullptr when the model file is absent.
inline const Tokenizer* model_tokenizer() {
    static const LoadedTokenizer* loaded = []() -> const LoadedTokenizer* {
        auto path = lazyllm::testing::default_model_path();
        if (!path) return nullptr;
        auto gguf = GgufFile::open(*path);
        if (!gguf.ok()) {
            ADD_FAILURE() << gguf.error().message();
            return nullptr;
        }
        auto* l = new LoadedTokenizer;
        l->gguf = std::move(gguf).value();
        auto tok = Tokenizer::from_gguf(l->gguf);
        if (!tok.ok()) {
            ADD_FAILURE() << tok.error().message();
            return nullptr;
        }
        l->tok = std::move(tok).value();
        return l;
    }();
    return loaded ? &loaded->tok : nullptr;
}

}  // namespace lazyllm::eval::testing

// In a Model* test body: binds `var` (const Tokenizer&) to the default model's tokenizer or skips.
#define LAZYLLM_MODEL_TOKENIZER_OR_SKIP(var)                                              \
    LAZYLLM_MODEL_OR_SKIP(lazyllm_model_path_for_tok_);                                   \
    (void)lazyllm_model_path_for_tok_;                                                    \
    const ::lazyllm::Tokenizer* var##_ptr_ = ::lazyllm::eval::testing::model_tokenizer(); \
    ASSERT_NE(var##_ptr_, nullptr);                                                       \
    const ::lazyllm::Tokenizer& var = *var##_ptr_
