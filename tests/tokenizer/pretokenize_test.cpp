// Pre-tokenizer splits, checked piece by piece against what HF tokenizers' pre-tokenizers give
// (pre_tokenize_str on the same inputs).
#include "tokenizer/pretokenize.h"

#include <gtest/gtest.h>

namespace lazyllm::tokenizer {
namespace {

std::vector<std::string> split(PreType type, std::string_view text) {
    auto pre = PreTokenizer::create(type);
    EXPECT_TRUE(pre.ok()) << pre.error().message();
    std::vector<Piece> pieces;
    pre->split(text, pieces);
    std::vector<std::string> out;
    uint32_t expect_begin = 0;
    for (const Piece& p : pieces) {
        EXPECT_EQ(p.begin, expect_begin) << "pieces must tile the text";
        EXPECT_LT(p.begin, p.end);
        expect_begin = p.end;
        out.emplace_back(text.substr(p.begin, p.end - p.begin));
    }
    EXPECT_EQ(expect_begin, text.size());
    return out;
}

using V = std::vector<std::string>;

// Whitespace as Oniguruma's \s (HF's regex engine): U+0009-000D, U+0085 and category Z, not
// U+180E, which PCRE2's \s takes.
TEST(PreTokenize, WhitespaceIsOniguruma) {
    for (PreType type : {PreType::kGpt2, PreType::kLlama3, PreType::kQwen2}) {
        EXPECT_EQ(split(type, "\u180e'll"), (V{"\u180e'", "ll"})) << static_cast<int>(type);
        EXPECT_EQ(split(type, "a\u2028\u3000b")[0], "a") << static_cast<int>(type);
    }
    EXPECT_EQ(split(PreType::kGpt2, "a  \u180e"), (V{"a", " ", " \u180e"}));
    EXPECT_EQ(split(PreType::kGpt2, "a\u0085\u00a0b"), (V{"a", "\u0085", "\u00a0", "b"}));
}

TEST(PreTokenize, Gpt2) {
    EXPECT_EQ(split(PreType::kGpt2, "Hello world"), (V{"Hello", " world"}));
    EXPECT_EQ(split(PreType::kGpt2, "I'm here, they're"),
              (V{"I", "'m", " here", ",", " they", "'re"}));
    EXPECT_EQ(split(PreType::kGpt2, "  hi"), (V{" ", " hi"}));
    EXPECT_EQ(split(PreType::kGpt2, "a\tb"), (V{"a", "\t", "b"}));
    EXPECT_EQ(split(PreType::kGpt2, "x   "), (V{"x", "   "}));
    EXPECT_EQ(split(PreType::kGpt2, "a \n b"), (V{"a", " \n", " b"}));
    EXPECT_EQ(split(PreType::kGpt2, "abc 1234!?"), (V{"abc", " 1234", "!?"}));
    EXPECT_EQ(split(PreType::kGpt2, "café Ωμέγα"), (V{"café", " Ωμέγα"}));
    EXPECT_EQ(split(PreType::kGpt2, "中文 😀😀"), (V{"中文", " 😀😀"}));
    // Contractions are case-sensitive in GPT-2's pattern.
    EXPECT_EQ(split(PreType::kGpt2, "IT'S"), (V{"IT", "'", "S"}));
    EXPECT_TRUE(split(PreType::kGpt2, "").empty());
}

TEST(PreTokenize, SmollmSplitsEveryDigit) {
    EXPECT_EQ(split(PreType::kSmollm, "abc 1234"), (V{"abc", " ", "1", "2", "3", "4"}));
    EXPECT_EQ(split(PreType::kSmollm, "v1.2"), (V{"v", "1", ".", "2"}));
    // \p{N} covers other scripts' digits and number letters (Rust char::is_numeric).
    EXPECT_EQ(split(PreType::kSmollm, "٣Ⅳ"), (V{"٣", "Ⅳ"}));
    // Each piece is matched on its own: the lookahead sees the piece's end.
    EXPECT_EQ(split(PreType::kSmollm, "   99"), (V{"   ", "9", "9"}));
}

TEST(PreTokenize, Llama3) {
    EXPECT_EQ(split(PreType::kLlama3, "1234567"), (V{"123", "456", "7"}));
    EXPECT_EQ(split(PreType::kLlama3, "IT'S ok"), (V{"IT", "'S", " ok"}));
    EXPECT_EQ(split(PreType::kLlama3, "(hello)"), (V{"(hello", ")"}));
    EXPECT_EQ(split(PreType::kLlama3, "a\n\nb"), (V{"a", "\n\n", "b"}));
    EXPECT_EQ(split(PreType::kLlama3, "x;\n"), (V{"x", ";\n"}));
    EXPECT_EQ(split(PreType::kLlama3, "  a"), (V{" ", " a"}));
}

TEST(PreTokenize, Qwen2SplitsEveryDigit) {
    EXPECT_EQ(split(PreType::kQwen2, "x 1234"), (V{"x", " ", "1", "2", "3", "4"}));
    EXPECT_EQ(split(PreType::kQwen2, "we'RE"), (V{"we", "'RE"}));
}

TEST(PreTokenize, InvalidUtf8IsKeptApart) {
    const std::string text = "ab\xff\xfe cd\x80";
    V pieces = split(PreType::kGpt2, text);
    std::string joined;
    for (const auto& p : pieces) joined += p;
    EXPECT_EQ(joined, text);
    EXPECT_EQ(pieces.front(), "ab");
}

TEST(PreTokenize, LongRunsDoNotFail) {
    // Long whitespace and letter runs: the JIT stack may overflow, the interpreter takes over.
    const std::string spaces(200000, ' ');
    EXPECT_EQ(split(PreType::kGpt2, spaces + "x"), (V{std::string(199999, ' '), " x"}));
    const std::string letters(300000, 'a');
    EXPECT_EQ(split(PreType::kLlama3, letters), (V{letters}));
}

TEST(PreTokenize, NamesMapToTypes) {
    EXPECT_EQ(pre_type_from_name("smollm").type, PreType::kSmollm);
    EXPECT_EQ(pre_type_from_name("starcoder").type, PreType::kSmollm);
    EXPECT_EQ(pre_type_from_name("llama-bpe").type, PreType::kLlama3);
    EXPECT_TRUE(pre_type_from_name("llama-bpe").ignore_merges);
    EXPECT_TRUE(pre_type_from_name("llama3").default_add_bos);
    EXPECT_EQ(pre_type_from_name("qwen2").type, PreType::kQwen2);
    EXPECT_EQ(pre_type_from_name("gpt-2").type, PreType::kGpt2);
    EXPECT_TRUE(pre_type_from_name("").known);
    EXPECT_TRUE(pre_type_from_name("default").known);
    EXPECT_EQ(pre_type_from_name("no-such-pre").type, PreType::kGpt2);
    EXPECT_FALSE(pre_type_from_name("no-such-pre").known);
}

}  // namespace
}  // namespace lazyllm::tokenizer
