// Tiny hand-made vocabularies for tokenizer unit tests, built as GGUF bytes in memory with
// GgufWriter and loaded back through GgufFile::from_memory, the same path as a real model.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "lazyllm/gguf.h"
#include "lazyllm/tokenizer.h"
#include "tokenizer/unicode.h"

namespace lazyllm::testing {

// Token types (tokenizer.ggml.token_type).
inline constexpr int32_t kNormal = 1;
inline constexpr int32_t kUnknown = 2;
inline constexpr int32_t kControl = 3;
inline constexpr int32_t kUserDefined = 4;
inline constexpr int32_t kByte = 6;

// A GGUF in memory; keeps the bytes alive for the GgufFile that views them.
struct MemGguf {
    std::vector<uint8_t> bytes;
    GgufFile file;
};

// "[1, 2, 3]": token ids in a failure message.
inline std::string ids_string(const std::vector<TokenId>& ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
}

inline Result<std::unique_ptr<MemGguf>> load_gguf(const GgufWriter& w) {
    auto m = std::make_unique<MemGguf>();
    m->bytes = w.to_bytes();
    LAZYLLM_ASSIGN_OR_RETURN(m->file,
                             GgufFile::from_memory(m->bytes.data(), m->bytes.size(), "mem.gguf"));
    return m;
}

inline Result<Tokenizer> tokenizer_from(const GgufWriter& w) {
    LAZYLLM_ASSIGN_OR_RETURN(auto m, load_gguf(w));
    return Tokenizer::from_gguf(m->file);
}

// A byte-level BPE vocabulary: 4 special tokens, the 256 byte tokens (GPT-2 alphabet), then one
// token per merge result. Merges are given in the byte-level alphabet ("Ġ" is a space).
struct TinyBpe {
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    std::vector<std::string> merges;

    explicit TinyBpe(const std::vector<std::string>& merge_list) {
        auto add = [&](const std::string& t, int32_t type) {
            tokens.push_back(t);
            types.push_back(type);
        };
        add("<|endoftext|>", kControl);  // 0
        add("<|im_start|>", kControl);   // 1
        add("<|im_end|>", kControl);     // 2
        add("<tool>", kUserDefined);     // 3
        tokenizer::ByteUnicodeMap map;
        for (int b = 0; b < 256; ++b) {
            add(std::string(map.byte_to_utf8(static_cast<uint8_t>(b))), kNormal);
        }
        for (const std::string& m : merge_list) {
            const size_t sp = m.find(' ', 1);
            add(m.substr(0, sp) + m.substr(sp + 1), kNormal);
            merges.push_back(m);
        }
    }

    GgufWriter writer(const std::string& pre = "gpt-2") const {
        GgufWriter w;
        w.set_string("general.architecture", "llama");
        w.set_string("tokenizer.ggml.model", "gpt2");
        if (!pre.empty()) w.set_string("tokenizer.ggml.pre", pre);
        w.set_string_array("tokenizer.ggml.tokens", tokens);
        w.set_int32_array("tokenizer.ggml.token_type", types);
        w.set_string_array("tokenizer.ggml.merges", merges);
        w.set_uint32("tokenizer.ggml.bos_token_id", 1);
        w.set_uint32("tokenizer.ggml.eos_token_id", 2);
        w.set_bool("tokenizer.ggml.add_bos_token", false);
        return w;
    }
};

// Token ids of texts, looked up by the tokenizer (fails the test when one is missing).
inline std::vector<TokenId> ids_of(const Tokenizer& tok, const std::vector<std::string>& texts) {
    std::vector<TokenId> ids;
    for (const std::string& t : texts) {
        auto id = tok.find_token(t);
        EXPECT_TRUE(id.has_value()) << "no token '" << t << "'";
        ids.push_back(id.value_or(-1));
    }
    return ids;
}

}  // namespace lazyllm::testing
