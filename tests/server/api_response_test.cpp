// Response bodies of `lazyllm serve` (tools/server/api_response.cpp): completions' text_offset
// counts characters, as vLLM and OpenAI do, also across tokens that split a UTF-8 sequence.
#include "server/api_response.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lazyllm/gguf.h"
#include "lazyllm/tokenizer.h"
#include "support/model_path.h"

namespace lazyllm::server {
namespace {

// The character index of each byte position of a UTF-8 text (the characters that start before
// it), from the sequence lengths the lead bytes give.
std::vector<int64_t> char_index_of_bytes(const std::string& s) {
    std::vector<int64_t> index(s.size() + 1, 0);
    int64_t chars = 0;
    size_t i = 0;
    while (i < s.size()) {
        const auto lead = static_cast<uint8_t>(s[i]);
        const size_t len = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
        index[i] = chars;
        for (size_t k = 1; k < len && i + k < s.size(); ++k) index[i + k] = chars + 1;
        ++chars;
        i += len;
    }
    index[s.size()] = chars;
    return index;
}

TEST(ApiResponse, CompletionsTextOffsetCountsCharacters) {
    LAZYLLM_MODEL_OR_SKIP(path);
    auto gguf = GgufFile::open(path);
    ASSERT_TRUE(gguf.ok()) << gguf.error().message();
    auto tok = Tokenizer::from_gguf(*gguf);
    ASSERT_TRUE(tok.ok()) << tok.error().message();
    // Two-, three- and four-byte characters; the last two are split across byte tokens.
    const std::string text = "Ça coûte 5 € 𝄞 日本";
    std::vector<TokenLogprob> tokens;
    for (TokenId id : tok->encode(text, false, false)) tokens.push_back({id, -1.0f, {}});
    int64_t offset = 3;  // characters of the answer before these tokens
    const nlohmann::json j = logprobs_json(Endpoint::kCompletion, *tok, tokens, offset);
    const auto& offsets = j.at("text_offset");
    ASSERT_EQ(offsets.size(), tokens.size());
    const std::vector<int64_t> index = char_index_of_bytes(text);
    size_t byte = 0;
    bool split = false;  // some token starts inside a character
    for (size_t i = 0; i < tokens.size(); ++i) {
        EXPECT_EQ(offsets[i].get<int64_t>(), 3 + index[byte])
            << "token " << i << " at byte " << byte;
        split = split || (static_cast<uint8_t>(text[byte]) & 0xC0) == 0x80;
        byte += tok->token_to_piece(tokens[i].id, true).size();
    }
    EXPECT_EQ(byte, text.size());
    EXPECT_TRUE(split) << "no token of the text starts inside a character";
    EXPECT_EQ(offset, 3 + index[text.size()]);  // advanced past all of them: 17 characters
    EXPECT_EQ(index[text.size()], 17);
}

}  // namespace
}  // namespace lazyllm::server
