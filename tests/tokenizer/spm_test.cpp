// SentencePiece-style BPE (tokenizer.ggml.model = "llama") on a tiny hand-made vocabulary with
// scores; expected outputs worked out by hand following llama.cpp's llm_tokenizer_spm_session.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tokenizer/tokenizer_test_util.h"

namespace lazyllm {
namespace {

using testing::ids_of;
using testing::tokenizer_from;

struct TinySpm {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;

    TinySpm() {
        add("<unk>", 0.0f, testing::kUnknown);  // 0
        add("<s>", 0.0f, testing::kControl);    // 1
        add("</s>", 0.0f, testing::kControl);   // 2
        for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0.0f, testing::kByte);
        add("▁", -5.0f);
        for (const char* c : {"a", "b", "h", "e", "l", "o", "x"}) add(c, -6.0f);
        add("▁h", -3.0f);
        add("he", -2.0f);
        add("ll", -1.0f);
        add("▁he", -1.5f);
        add("hell", -0.5f);
        add("hello", -0.1f);
        add("aa", -1.0f);
        add("▁a", -1.0f);
        add("▁b", -1.0f);
        add("<tool>", 0.0f, testing::kUserDefined);
    }
    void add(const std::string& t, float score, int32_t type = testing::kNormal) {
        tokens.push_back(t);
        scores.push_back(score);
        types.push_back(type);
    }
    GgufWriter writer() const {
        GgufWriter w;
        w.set_string("general.architecture", "llama");
        w.set_string("tokenizer.ggml.model", "llama");
        w.set_string_array("tokenizer.ggml.tokens", tokens);
        w.set_float32_array("tokenizer.ggml.scores", scores);
        w.set_int32_array("tokenizer.ggml.token_type", types);
        return w;
    }
};

Tokenizer spm_tok(const TinySpm& v = TinySpm()) {
    auto tok = tokenizer_from(v.writer());
    EXPECT_TRUE(tok.ok()) << tok.error().message();
    return std::move(tok).value();
}

TEST(Spm, DefaultsFollowLlamaCpp) {
    Tokenizer tok = spm_tok();
    EXPECT_EQ(tok.kind(), TokenizerKind::kSpm);
    EXPECT_EQ(tok.kind_name(), "llama (spm)");
    EXPECT_EQ(tok.pre(), "");
    EXPECT_EQ(tok.bos(), 1);  // default <s> = 1, </s> = 2 without the keys
    EXPECT_EQ(tok.eos(), 2);
    EXPECT_TRUE(tok.is_end_of_generation(2));
    // add_bos defaults to true, add_space_prefix to true.
    EXPECT_EQ(tok.encode("a"), (std::vector<TokenId>{1, *tok.find_token("▁a")}));
}

TEST(Spm, MergesByScore) {
    Tokenizer tok = spm_tok();
    // "▁hello": ▁ h e l l o. Best pair ll (-1), then he (-2); then (▁,he) -1.5 and
    // (he,ll) "hell" -0.5: hell; then (hell,o) "hello" -0.1. "▁hello" is no token.
    EXPECT_EQ(tok.encode("hello", false, false), ids_of(tok, {"▁", "hello"}));
    // "▁hel": he (-2) beats ▁h (-3); then ▁he (-1.5); (▁he, l) is no token.
    EXPECT_EQ(tok.encode("hel", false, false), ids_of(tok, {"▁he", "l"}));
}

TEST(Spm, EqualScoresMergeLeftmostFirst) {
    Tokenizer tok = spm_tok();
    // "▁aaa": (▁,a) "▁a" -1 at 0, (a,a) -1 at 1 and 2: ▁a first, then (▁a, a) is no token,
    // then aa from the remaining pair.
    EXPECT_EQ(tok.encode("aaa", false, false), ids_of(tok, {"▁a", "aa"}));
}

TEST(Spm, SpacesBecomeMarkers) {
    Tokenizer tok = spm_tok();
    EXPECT_EQ(tok.encode("a b", false, false), ids_of(tok, {"▁a", "▁b"}));
    EXPECT_EQ(tok.decode(tok.encode("a b")), "a b");
    // Leading spaces are kept (one extra marker from add_space_prefix).
    EXPECT_EQ(tok.encode(" a", false, false), ids_of(tok, {"▁", "▁a"}));
    EXPECT_EQ(tok.decode(tok.encode(" a")), " a");
}

TEST(Spm, ByteFallback) {
    Tokenizer tok = spm_tok();
    // é (C3 A9) has no token: byte tokens.
    EXPECT_EQ(tok.encode("é", false, false), ids_of(tok, {"▁", "<0xC3>", "<0xA9>"}));
    EXPECT_EQ(tok.token_to_piece(*tok.find_token("<0xC3>")), "\xC3");
    EXPECT_EQ(tok.decode(tok.encode("é😀 b")), "é😀 b");
}

// Found by tests/fuzz/chat_template_fuzz: a stray lead byte took the next character's bytes, so
// a space after it came back as U+2581.
TEST(Spm, InvalidUtf8RoundTrips) {
    Tokenizer tok = spm_tok();
    EXPECT_EQ(tok.encode("\xC5 b", false, false), ids_of(tok, {"▁", "<0xC5>", "▁b"}));
    for (const char* s : {"\xC5 b", "a\xFF b", "\xE2\x82 x", "\xF0\x9F\x98 a", "end\xC3"}) {
        EXPECT_EQ(tok.decode(tok.encode(s)), s) << s;
    }
}

TEST(Spm, AddSpacePrefixOff) {
    TinySpm v;
    GgufWriter w = v.writer();
    w.set_bool("tokenizer.ggml.add_space_prefix", false);
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    auto tok = tokenizer_from(w);
    ASSERT_TRUE(tok.ok()) << tok.error().message();
    EXPECT_EQ(tok->encode("a b"), ids_of(*tok, {"a", "▁b"}));
    EXPECT_EQ(tok->decode(tok->encode("a b")), "a b");
}

TEST(Spm, SpecialTokensGetASpaceAfter) {
    Tokenizer tok = spm_tok();
    // llama.cpp: the text after a special token is prefixed with a space again.
    EXPECT_EQ(tok.encode("a</s>b", true, false), ids_of(tok, {"▁a", "</s>", "▁b"}));
    EXPECT_EQ(tok.encode("a<tool>b", false, false), ids_of(tok, {"▁a", "<tool>", "▁b"}));
    // Without parse_special the control text is plain text (bytes: no tokens for < / s >).
    std::vector<TokenId> plain = tok.encode("a</s>", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
    EXPECT_EQ(tok.decode(plain), "a</s>");
}

TEST(Spm, DecodeRendersControlOnRequest) {
    Tokenizer tok = spm_tok();
    const std::vector<TokenId> ids = tok.encode("hello");
    EXPECT_EQ(ids.front(), 1);
    EXPECT_EQ(tok.decode(ids), "hello");
    EXPECT_EQ(tok.decode(ids, true), "<s> hello");
    EXPECT_EQ(tok.token_to_piece(*tok.find_token("▁he")), " he");
}

}  // namespace
}  // namespace lazyllm
