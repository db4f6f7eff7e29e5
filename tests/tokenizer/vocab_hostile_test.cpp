// Broken or hostile tokenizer metadata: every case must fail with an error naming the key.
#include <gtest/gtest.h>

#include <limits>

#include "tokenizer/tokenizer_test_util.h"

namespace lazyllm {
namespace {

using testing::TinyBpe;
using testing::tokenizer_from;

void expect_error(const GgufWriter& w, const std::string& key, ErrorCode code) {
    auto tok = tokenizer_from(w);
    ASSERT_FALSE(tok.ok()) << "expected an error naming " << key;
    EXPECT_NE(tok.error().message().find(key), std::string::npos) << tok.error().message();
    EXPECT_EQ(tok.error().code(), code) << tok.error().message();
}

// A writer with the minimal valid gpt2 vocabulary, minus the keys a test replaces.
GgufWriter base(bool with_tokens = true, bool with_merges = true) {
    TinyBpe v({"h e"});
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    if (with_tokens) w.set_string_array("tokenizer.ggml.tokens", v.tokens);
    if (with_merges) w.set_string_array("tokenizer.ggml.merges", v.merges);
    return w;
}

TEST(VocabHostile, MissingModel) {
    GgufWriter w;
    w.set_string_array("tokenizer.ggml.tokens", {"a"});
    expect_error(w, "tokenizer.ggml.model", ErrorCode::kNotFound);
}

TEST(VocabHostile, UnsupportedModel) {
    GgufWriter w = base();
    w.set_string("tokenizer.ggml.model", "t5");  // Unigram: not implemented
    expect_error(w, "tokenizer.ggml.model", ErrorCode::kUnsupported);
}

TEST(VocabHostile, ModelOfWrongType) {
    GgufWriter w = base();
    w.set_uint32("tokenizer.ggml.model", 2);
    expect_error(w, "tokenizer.ggml.model", ErrorCode::kCorrupt);
}

TEST(VocabHostile, MissingTokens) {
    expect_error(base(false), "tokenizer.ggml.tokens", ErrorCode::kNotFound);
}

TEST(VocabHostile, EmptyTokens) {
    GgufWriter w = base(false);
    w.set_string_array("tokenizer.ggml.tokens", {});
    expect_error(w, "tokenizer.ggml.tokens", ErrorCode::kCorrupt);
}

TEST(VocabHostile, TokensOfWrongType) {
    GgufWriter w = base(false);
    w.set_int32_array("tokenizer.ggml.tokens", {1, 2, 3});
    expect_error(w, "tokenizer.ggml.tokens", ErrorCode::kCorrupt);
}

TEST(VocabHostile, ScoresLengthMismatch) {
    GgufWriter w = base();
    w.set_float32_array("tokenizer.ggml.scores", {0.0f, 1.0f});
    expect_error(w, "tokenizer.ggml.scores", ErrorCode::kCorrupt);
}

TEST(VocabHostile, NanScore) {
    TinyBpe v({"h e"});
    std::vector<float> scores(v.tokens.size(), 0.0f);
    scores[5] = std::numeric_limits<float>::quiet_NaN();
    GgufWriter w = base();
    w.set_float32_array("tokenizer.ggml.scores", scores);
    expect_error(w, "tokenizer.ggml.scores[5] is NaN", ErrorCode::kCorrupt);
}

TEST(VocabHostile, TokenTypeLengthMismatch) {
    GgufWriter w = base();
    w.set_int32_array("tokenizer.ggml.token_type", {1, 1, 1});
    expect_error(w, "tokenizer.ggml.token_type", ErrorCode::kCorrupt);
}

TEST(VocabHostile, TokenTypeOutOfRange) {
    TinyBpe v({"h e"});
    std::vector<int32_t> types = v.types;
    types[7] = 42;
    GgufWriter w = base();
    w.set_int32_array("tokenizer.ggml.token_type", types);
    expect_error(w, "tokenizer.ggml.token_type", ErrorCode::kCorrupt);
}

TEST(VocabHostile, MissingMerges) {
    expect_error(base(true, false), "tokenizer.ggml.merges", ErrorCode::kNotFound);
}

TEST(VocabHostile, MergeWithUnknownToken) {
    GgufWriter w = base();
    w.set_string_array("tokenizer.ggml.merges", {"h e", "he zzz"});
    expect_error(w, "tokenizer.ggml.merges", ErrorCode::kCorrupt);
}

TEST(VocabHostile, MergeWhoseResultIsNoToken) {
    GgufWriter w = base();
    w.set_string_array("tokenizer.ggml.merges", {"x y"});  // "xy" is not in the vocabulary
    expect_error(w, "tokenizer.ggml.merges", ErrorCode::kCorrupt);
}

TEST(VocabHostile, MalformedMerge) {
    GgufWriter w = base();
    w.set_string_array("tokenizer.ggml.merges", {"he"});
    expect_error(w, "tokenizer.ggml.merges", ErrorCode::kCorrupt);
}

TEST(VocabHostile, BosOutOfRange) {
    GgufWriter w = base();
    w.set_uint32("tokenizer.ggml.bos_token_id", 1000000);
    expect_error(w, "tokenizer.ggml.bos_token_id", ErrorCode::kCorrupt);
}

TEST(VocabHostile, EosNegative) {
    GgufWriter w = base();
    w.set_int32("tokenizer.ggml.eos_token_id", -1);
    expect_error(w, "tokenizer.ggml.eos_token_id", ErrorCode::kCorrupt);
}

TEST(VocabHostile, AddBosWithoutBos) {
    GgufWriter w = base();
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    expect_error(w, "tokenizer.ggml.add_bos_token", ErrorCode::kCorrupt);
}

TEST(VocabHostile, AddBosOfWrongType) {
    GgufWriter w = base();
    w.set_string("tokenizer.ggml.add_bos_token", "yes");
    expect_error(w, "tokenizer.ggml.add_bos_token", ErrorCode::kCorrupt);
}

TEST(VocabHostile, SpmScoresMismatch) {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
    w.set_float32_array("tokenizer.ggml.scores", {0.0f, 0.0f, 0.0f});
    expect_error(w, "tokenizer.ggml.scores", ErrorCode::kCorrupt);
}

TEST(VocabHostile, UnknownPreFallsBackToGpt2) {
    TinyBpe v({"h e"});
    auto tok = tokenizer_from(v.writer("brand-new-pre"));
    ASSERT_TRUE(tok.ok()) << tok.error().message();
    EXPECT_EQ(tok->kind_name(), "gpt2 (gpt-2 regex; unknown pre 'brand-new-pre')");
    EXPECT_EQ(tok->pre(), "brand-new-pre");
    EXPECT_EQ(tok->decode(tok->encode("he said 123")), "he said 123");
}

TEST(VocabHostile, EmptyTokenizerIsInert) {
    Tokenizer tok;
    EXPECT_EQ(tok.n_vocab(), 0);
    EXPECT_EQ(tok.token_to_piece(0), "");
    EXPECT_EQ(tok.decode({1, 2}), "");
    EXPECT_FALSE(tok.bos().has_value());
    EXPECT_FALSE(tok.is_end_of_generation(0));
    EXPECT_EQ(tok.chat_template(), "");
}

}  // namespace
}  // namespace lazyllm
