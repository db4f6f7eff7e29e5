// Metrics against hand-computed values (LongBench metrics.py, the rouge 1.0.1 package, fuzzywuzzy
// with python-Levenshtein, RULER's string match, landmark-attention's passkey check). Each case
// states the arithmetic it expects.
#include "eval/metrics.h"

#include <gtest/gtest.h>

#include "eval/task.h"
#include "eval/text_util.h"

namespace lazyllm::eval {
namespace {

TEST(NormalizeAnswer, LowersDropsPunctuationArticlesAndSpaces) {
    EXPECT_EQ(normalize_answer("The Quick, brown fox!"), "quick brown fox");
    EXPECT_EQ(normalize_answer("An apple a day"), "apple day");
    // Punctuation goes before articles: "a.n" becomes "an", which is then dropped.
    EXPECT_EQ(normalize_answer("  theater   ANd  a.n  "), "theater and");
    // Articles only as whole words; '_' is punctuation.
    EXPECT_EQ(normalize_answer("anthem thea_b"), "anthem theab");
    EXPECT_EQ(normalize_answer(""), "");
    // Non-ASCII letters are word characters: "the" inside "théa" stays.
    EXPECT_EQ(normalize_answer("Théa the\u00a0end"), "théa end");
}

TEST(FirstLine, StripsLeadingNewlinesOnly) {
    EXPECT_EQ(first_line("\n\nfirst\nsecond"), "first");
    EXPECT_EQ(first_line("  spaced\nx"), "  spaced");
    EXPECT_EQ(first_line(""), "");
    EXPECT_EQ(first_line("\n\n"), "");
    EXPECT_EQ(first_line("no newline"), "no newline");
}

TEST(QaF1, TokenMultisetF1) {
    // pred {cat, sat, on, mat}, gold {cat, on, mat}: common 3, P = 3/4, R = 1, F1 = 1.5/1.75.
    EXPECT_NEAR(qa_f1_score("The cat sat on the mat", "cat on mat"), 1.5 / 1.75, 1e-15);
    // Repeated tokens count once per gold occurrence: common 1, P = 1/3, R = 1, F1 = 0.5.
    EXPECT_DOUBLE_EQ(qa_f1_score("paris paris paris", "Paris"), 0.5);
    // Punctuation and articles are normalized away.
    EXPECT_DOUBLE_EQ(qa_f1_score("A: Paris!", "paris"), 1.0);
    EXPECT_DOUBLE_EQ(qa_f1_score("", "paris"), 0.0);
    EXPECT_DOUBLE_EQ(qa_f1_score("london", "paris"), 0.0);
    EXPECT_DOUBLE_EQ(qa_f1_score("the", "a"), 0.0);  // both normalize to nothing
}

TEST(RougeL, SummaryLevelUnionLcsOverDistinctWords) {
    // LCS "the cat on the mat" -> word set {the, cat, on, mat} = 4; 5 distinct words each side:
    // p = r = 0.8, f = 2 * 0.64 / (1.6 + 1e-8).
    EXPECT_NEAR(rouge_l_score("the cat sat on the mat", "the cat is on the mat"),
                2 * 0.64 / (1.6 + 1e-8), 1e-15);
    // Sentences split on '.', case kept: only "sat" and "ran" match; n = 4, m = 5.
    EXPECT_NEAR(rouge_l_score("Cat sat. Dog ran", "the cat sat. the dog ran."),
                2.0 * ((0.5 * 0.4) / (0.5 + 0.4 + 1e-8)), 1e-15);
    // Repeated words count once on each side: p = r = 1.
    EXPECT_NEAR(rouge_l_score("the the the", "the"), 2.0 / (2.0 + 1e-8), 1e-15);
    // The walk back prefers j - 1 on ties, so "a b a" vs "b a a" yields {b, a}, not {a}.
    EXPECT_NEAR(rouge_l_score("b a a", "a b a"), 2.0 / (2.0 + 1e-8), 1e-15);
    // A whitespace-only piece becomes the sentence "" with the word "": n = 3, m = 2, llcs = 2.
    EXPECT_NEAR(rouge_l_score("a. . b", "a b"), 2.0 * ((2.0 / 3 * 1.0) / (2.0 / 3 + 1.0 + 1e-8)),
                1e-15);
    // No sentence on one side: the package raises, metrics.py returns 0.
    EXPECT_DOUBLE_EQ(rouge_l_score("", "x"), 0.0);
    EXPECT_DOUBLE_EQ(rouge_l_score("...", "abc"), 0.0);
    EXPECT_DOUBLE_EQ(rouge_l_score("x", "."), 0.0);
}

TEST(Classification, MatchesAndRemovalQuirk) {
    const std::vector<std::string> classes = {"Human", "Entity", "Location"};
    EXPECT_DOUBLE_EQ(classification_score("Location", "Location", classes), 1.0);
    // Two classes named: 1 / 2.
    EXPECT_DOUBLE_EQ(classification_score("Human or Entity", "Human", classes), 0.5);
    EXPECT_DOUBLE_EQ(classification_score("Entity", "Human", classes), 0.0);
    EXPECT_DOUBLE_EQ(classification_score("", "Human", classes), 0.0);
    // A class that is a substring of the gold (but not the gold) is dropped.
    EXPECT_DOUBLE_EQ(classification_score("Expression abbreviated", "Expression abbreviated",
                                          {"Expression", "Expression abbreviated", "Color"}),
                     1.0);
    // Removing while iterating skips the next element: "Ab" is removed, "Abc" is skipped and
    // stays, so the matches are [Abc, Abcd] and the score 1/2.
    EXPECT_DOUBLE_EQ(classification_score("Abcd", "Abcd", {"Ab", "Abc", "Abcd"}), 0.5);
}

TEST(Retrieval, ShareOfNumbersEqualToTheParagraph) {
    EXPECT_DOUBLE_EQ(retrieval_score("Paragraph 12", "Paragraph 12"), 1.0);
    EXPECT_DOUBLE_EQ(retrieval_score("Paragraph 3 or Paragraph 12, maybe 2", "Paragraph 12"),
                     1.0 / 3);
    EXPECT_DOUBLE_EQ(retrieval_score("Paragraph 120", "Paragraph 12"), 0.0);
    EXPECT_DOUBLE_EQ(retrieval_score("", "Paragraph 12"), 0.0);
    EXPECT_DOUBLE_EQ(retrieval_score("12", "no paragraph here"), 0.0);
}

TEST(Count, ShareOfNumbersEqualToTheGold) {
    EXPECT_DOUBLE_EQ(count_score("There are 5 unique paragraphs.", "5"), 1.0);
    EXPECT_DOUBLE_EQ(count_score("5, maybe 6 or 5", "5"), 2.0 / 3);
    EXPECT_DOUBLE_EQ(count_score("none", "5"), 0.0);
    EXPECT_DOUBLE_EQ(count_score("05", "5"), 0.0);  // compared as strings
}

TEST(FuzzRatio, LevenshteinRatioRoundedHalfEven) {
    EXPECT_EQ(fuzz_ratio("", ""), 100);  // equal strings first
    EXPECT_EQ(fuzz_ratio("", "abc"), 0);
    // LCS 2 of lengths 3 + 3: 1 - 2/6 = 0.667 -> 67.
    EXPECT_EQ(fuzz_ratio("abc", "abd"), 67);
    // LCS 7 of 8 + 8: 87.5 -> 88; LCS 5: 62.5 -> 62 (round half to even, as Python).
    EXPECT_EQ(fuzz_ratio("abcdefgh", "abcdefgz"), 88);
    EXPECT_EQ(fuzz_ratio("abcdefgh", "abcdexyz"), 62);
    // Code points, not bytes: "é" vs "e" is one substitution of one character each.
    EXPECT_EQ(fuzz_ratio("caf\u00e9", "cafe"), 75);
}

TEST(CodeSim, FirstCodeLineEditSimilarity) {
    EXPECT_DOUBLE_EQ(code_sim_score("x = foo(1)\n", "x = foo(1)"), 1.0);
    // Lines with ` or # are skipped; "return a + b" vs "return a+b": LCS 10 of 12 + 10,
    // 1 - 2/22 = 0.909 -> 91.
    EXPECT_DOUBLE_EQ(code_sim_score("```python\n# add\nreturn a + b\n```", "return a+b"), 0.91);
    EXPECT_DOUBLE_EQ(code_sim_score("\n\n// c\nreturn a+b", "return a+b"), 1.0);
    EXPECT_DOUBLE_EQ(code_sim_score("", "return a+b"), 0.0);
    EXPECT_DOUBLE_EQ(code_sim_score("# only comments", "x"), 0.0);
}

TEST(ExactMatch, OnNormalizedStrings) {
    EXPECT_DOUBLE_EQ(exact_match_score("The Answer.", "answer"), 1.0);
    EXPECT_DOUBLE_EQ(exact_match_score("answers", "answer"), 0.0);
    EXPECT_DOUBLE_EQ(exact_match_score("", "a"), 1.0);  // both normalize to ""
}

TEST(Passkey, FirstIntegerEqualsKey) {
    EXPECT_DOUBLE_EQ(passkey_score("The pass key is 12345.", "12345"), 1.0);
    EXPECT_DOUBLE_EQ(passkey_score("12 then 12345", "12345"), 0.0);
    EXPECT_DOUBLE_EQ(passkey_score(" 0012345", "12345"), 1.0);  // int("0012345")
    EXPECT_DOUBLE_EQ(passkey_score("", "12345"), 0.0);
    EXPECT_DOUBLE_EQ(passkey_score("no digits", "12345"), 0.0);
}

TEST(StringMatch, AllAndPart) {
    const std::vector<std::string> refs = {"1234567", "7654321", "1111111"};
    EXPECT_DOUBLE_EQ(string_match_all("The numbers are 1234567 and 7654321.", refs), 2.0 / 3);
    EXPECT_DOUBLE_EQ(string_match_all("answer: abcDE", {"ABCDE"}), 1.0);
    EXPECT_DOUBLE_EQ(string_match_all("", refs), 0.0);
    EXPECT_DOUBLE_EQ(string_match_all("x", {}), 0.0);
    EXPECT_DOUBLE_EQ(string_match_part("it is london", {"Paris", "London"}), 1.0);
    EXPECT_DOUBLE_EQ(string_match_part("Rome", {"Paris", "London"}), 0.0);
    EXPECT_DOUBLE_EQ(string_match_part("", {"Paris"}), 0.0);
    EXPECT_EQ(ruler_postprocess("  a\tb\x01 \n"), "a\nb");
}

TEST(Score, MaxOverAnswersFirstLineAndNames) {
    Sample s;
    s.metric = Metric::kQaF1;
    s.answers = {"the city of Paris", "Paris"};
    EXPECT_DOUBLE_EQ(score(s, "Paris"), 1.0);
    s.first_line_only = true;
    EXPECT_DOUBLE_EQ(score(s, "\nParis\nLondon"), 1.0);
    EXPECT_DOUBLE_EQ(score(s, "London\nParis"), 0.0);

    Sample t;
    t.metric = Metric::kClassification;
    t.all_classes = {"Human", "Entity"};
    t.answers = {"Human"};
    t.first_line_only = true;
    EXPECT_DOUBLE_EQ(score(t, "Human\nEntity"), 1.0);

    Sample r;
    r.metric = Metric::kStringMatchAll;
    r.answers = {"ABC", "DEF"};
    EXPECT_DOUBLE_EQ(score(r, " abc and\tdef "), 1.0);
    r.answers.clear();
    EXPECT_DOUBLE_EQ(score(r, "abc"), 0.0);

    for (Metric m : {Metric::kPasskey, Metric::kStringMatchAll, Metric::kStringMatchPart,
                     Metric::kExactMatch, Metric::kQaF1, Metric::kRougeL, Metric::kClassification,
                     Metric::kRetrieval, Metric::kCount, Metric::kCodeSim}) {
        auto parsed = parse_metric(metric_name(m));
        ASSERT_TRUE(parsed.ok()) << metric_name(m);
        EXPECT_EQ(*parsed, m);
    }
    auto bad = parse_metric("bleu");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("bleu"), std::string::npos);
}

TEST(TextUtil, PythonStringSemantics) {
    EXPECT_EQ(text::split_whitespace(" a\u3000b\t\nc "), (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(text::split("a..b", "."), (std::vector<std::string>{"a", "", "b"}));
    EXPECT_EQ(text::lower("ÀÉ İ ΣΑ Ж Abc"), "àé i\u0307 σα ж abc");
    EXPECT_EQ(text::find_digit_runs("a12b3 ４5"), (std::vector<std::string>{"12", "3", "４5"}));
    // A 3-byte character cut after 2 bytes is one U+FFFD; a lone continuation byte another.
    EXPECT_EQ(text::sanitize_utf8("x\xe2\x82"
                                  "y\x80"),
              "x\ufffdy\ufffd");
    EXPECT_EQ(text::strip("\u00a0 hi \n"), "hi");
    EXPECT_EQ(text::count_occurrences("aaaa", "aa"), 2u);
}

}  // namespace
}  // namespace lazyllm::eval
