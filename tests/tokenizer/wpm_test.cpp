// WordPiece (bert): the BertNormalizer + BertPreTokenizer steps and the greedy longest-match cut,
// on a hand-made vocabulary spelled as llama.cpp's converter writes it ("▁" word starts).
#include "tokenizer/wpm.h"

#include <gtest/gtest.h>

#include "tokenizer/unicode.h"

namespace lazyllm::tokenizer {
namespace {

Vocab tiny_vocab() {
    Vocab v;
    v.model = "bert";
    v.tokens = {"[UNK]",
                "\xE2\x96\x81"
                "fuhrer",
                "\xE2\x96\x81"
                "un",
                "aff",
                "able",
                "\xE2\x96\x81"
                "!",
                "\xE2\x96\x81"
                "\xE6\x88\x91"};
    for (size_t i = 0; i < v.tokens.size(); ++i) v.token_to_id[v.tokens[i]] = int32_t(i);
    v.types.assign(v.tokens.size(), TokenType::kNormal);
    v.unk = 0;
    return v;
}

std::string utf8(const std::vector<uint32_t>& cps) {
    std::string s;
    for (uint32_t c : cps) append_utf8(s, c);
    return s;
}

TEST(Wpm, NormalizesAndSplits) {
    const Vocab v = tiny_vocab();
    const WpmModel m(v);
    // Accents stripped (NFD without Mn), lowercased, punctuation and CJK isolated, a format
    // character (U+200D) dropped, whitespace of any kind splits.
    const auto words = m.words(
        "F\xC3\xBChrer!\xE6\x88\x91x\xE2\x80\x8Dy\xE3\x80\x80"
        "Z");
    std::vector<std::string> got;
    for (const auto& w : words) got.push_back(utf8(w));
    EXPECT_EQ(got, (std::vector<std::string>{"fuhrer", "!", "\xE6\x88\x91", "xy", "z"}));
}

TEST(Wpm, GreedyLongestMatchElseUnk) {
    const Vocab v = tiny_vocab();
    const WpmModel m(v);
    std::vector<TokenId> out;
    m.encode(v, "Unaffable F\xC3\xBCHRER! unaffablex", out);
    // "unaffablex": "▁un" "aff" "able" then "x" has no piece: the whole word is [UNK].
    EXPECT_EQ(out, (std::vector<TokenId>{2, 3, 4, 1, 5, 0}));
}

}  // namespace
}  // namespace lazyllm::tokenizer
