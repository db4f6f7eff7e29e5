// LongBench JSONL reader on hand-made fixtures (tests/eval/data): templates, per-dataset
// settings, errors naming file, line and field, and pred.py's middle truncation.
#include "eval/longbench.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "eval/haystack.h"
#include "eval/longbench_config.h"
#include "eval/task.h"
#include "eval/text_util.h"
#include "tests/eval/test_tokenizers.h"

namespace lazyllm::eval {
namespace {

using testing::tiny_tokenizer;

std::string data(const char* name) {
    return std::string(LAZYLLM_SOURCE_DIR) + "/tests/eval/data/" + name;
}

// Writes `text` to a file named `name` in a fresh temporary folder; returns its path.
std::string temp_file(const std::string& name, const std::string& text) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("lazyllm_longbench_test_" +
                      std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
}

const longbench::DatasetConfig& config(std::string_view name) {
    for (const auto& d : longbench::kDatasets) {
        if (d.name == name) return d;
    }
    ADD_FAILURE() << "no config for " << name;
    return longbench::kDatasets[0];
}

TEST(LongBenchConfig, VendoredTables) {
    // The 21 datasets of dataset2prompt.json, with its exact total length (4,373 characters of
    // template text; the file is 4,979 with JSON syntax).
    size_t chars = 0;
    for (const auto& d : longbench::kDatasets) chars += text::decode_utf8(d.prompt).size();
    EXPECT_EQ(chars, 4373u);
    EXPECT_EQ(config("hotpotqa").prompt,
              "Answer the question based on the given passages. Only give me the answer and do not "
              "output any other words.\n\nThe following are given passages.\n{context}\n\nAnswer "
              "the question based on the given passages. Only give me the answer and do not "
              "output any other words.\n\nQuestion: {input}\nAnswer:");
    EXPECT_EQ(config("lcc").prompt,
              "Please complete the code given below. \n{context}Next line of code:\n");
    EXPECT_EQ(config("multi_news").max_new_tokens, 512);
    EXPECT_EQ(config("samsum").max_new_tokens, 128);
    EXPECT_EQ(config("narrativeqa").max_new_tokens, 128);
    EXPECT_EQ(config("multifieldqa_en").max_new_tokens, 64);
    EXPECT_EQ(config("passage_retrieval_en").metric, Metric::kRetrieval);
    EXPECT_EQ(config("repobench-p").metric, Metric::kCodeSim);
    int no_chat = 0, first_line = 0;
    for (const auto& d : longbench::kDatasets) {
        no_chat += d.chat ? 0 : 1;
        first_line += d.first_line_only ? 1 : 0;
    }
    EXPECT_EQ(no_chat, 6);     // trec, triviaqa, samsum, lsht, lcc, repobench-p
    EXPECT_EQ(first_line, 4);  // trec, triviaqa, samsum, lsht
}

TEST(LongBench, ReadsTemplatesAndSettings) {
    const std::string path = data("longbench_mixed.jsonl");
    auto loaded = load_longbench(path, 0, tiny_tokenizer());
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    const std::vector<Sample>& s = *loaded;
    ASSERT_EQ(s.size(), 4u);  // the blank line is skipped

    EXPECT_EQ(s[0].task, "hotpotqa");
    EXPECT_EQ(s[0].id, "hq-0001");
    EXPECT_EQ(s[0].prompt,
              "Answer the question based on the given passages. Only give me the answer and do not "
              "output any other words.\n\nThe following are given passages.\nPassage 1:\nParis\n"
              "Paris hosted the 1900 Summer Olympics.\n\nPassage 2:\nLondon\nLondon hosted the "
              "1908 Summer Olympics.\n\nAnswer the question based on the given passages. Only "
              "give me the answer and do not output any other words.\n\nQuestion: Which city "
              "hosted the 1900 Summer Olympics?\nAnswer:");
    EXPECT_TRUE(s[0].chat);
    EXPECT_EQ(s[0].answers, std::vector<std::string>{"Paris"});
    EXPECT_TRUE(s[0].all_classes.empty());
    EXPECT_EQ(s[0].metric, Metric::kQaF1);
    EXPECT_EQ(s[0].max_new_tokens, 32);
    EXPECT_FALSE(s[0].first_line_only);
    EXPECT_TRUE(s[0].stop_token.empty());
    EXPECT_EQ(s[0].target_tokens, 0);  // 19 words: LongBench-E's 0-4k bucket
    EXPECT_DOUBLE_EQ(s[0].depth, -1.0);
    EXPECT_DOUBLE_EQ(score(s[0], "Paris."), 1.0);

    EXPECT_EQ(s[1].task, "trec");
    EXPECT_EQ(s[1].prompt,
              "Please determine the type of the question below. Here are some examples of "
              "questions.\n\nQuestion: Who wrote Hamlet?\nType: Individual\nQuestion: How far is "
              "the Moon from the Earth?\nType: Distance, linear measure\nQuestion: What is the "
              "capital of Peru?\nType:");
    EXPECT_FALSE(s[1].chat);
    EXPECT_TRUE(s[1].first_line_only);
    EXPECT_EQ(s[1].metric, Metric::kClassification);
    EXPECT_EQ(s[1].max_new_tokens, 64);
    EXPECT_EQ(s[1].all_classes.size(), 4u);
    EXPECT_DOUBLE_EQ(score(s[1], " City\nQuestion: Who is Bob?\nType: Individual"), 1.0);
    EXPECT_DOUBLE_EQ(score(s[1], "Country"), 0.0);

    EXPECT_EQ(s[2].task, "passage_count");
    EXPECT_EQ(s[2].answers, std::vector<std::string>{"2"});  // str() of the JSON number
    EXPECT_EQ(s[2].metric, Metric::kCount);
    EXPECT_TRUE(s[2].prompt.ends_with("such as 1, 2, 3, and so on.\n\nThe final answer is: "));
    EXPECT_DOUBLE_EQ(score(s[2], "2"), 1.0);

    EXPECT_EQ(s[3].task, "samsum");
    EXPECT_EQ(s[3].id, "ss-0001");
    EXPECT_FALSE(s[3].chat);
    EXPECT_TRUE(s[3].first_line_only);
    EXPECT_EQ(s[3].stop_token, "\n");
    EXPECT_EQ(s[3].max_new_tokens, 128);
    EXPECT_EQ(s[3].metric, Metric::kRougeL);
}

TEST(LongBench, ErrorsNameFileLineAndField) {
    const std::string missing = data("longbench_missing_answers.jsonl");
    auto r = load_longbench(missing, 0, tiny_tokenizer());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find(missing + ":2:"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("'answers'"), std::string::npos) << r.error().message();

    const std::string unknown = data("longbench_unknown_dataset.jsonl");
    r = load_longbench(unknown, 0, tiny_tokenizer());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("foo_bar"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find(unknown + ":1:"), std::string::npos);

    r = load_longbench(data("no_such_file.jsonl"), 0, tiny_tokenizer());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
    EXPECT_NE(r.error().message().find("no_such_file.jsonl"), std::string::npos);

    const std::string bad_json = temp_file("bad.jsonl", "{\"input\": \"x\",\n");
    r = load_longbench(bad_json, 0, tiny_tokenizer());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find(bad_json + ":1:"), std::string::npos);

    const std::string zh =
        temp_file("dureader.jsonl",
                  R"({"input": "q", "context": "c", "answers": ["a"], "dataset": "dureader"})"
                  "\n");
    r = load_longbench(zh, 0, tiny_tokenizer());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);

    const std::string no_classes = temp_file(
        "trec.jsonl", R"({"input": "q", "context": "c", "answers": ["a"], "dataset": "trec",)"
                      R"( "all_classes": null})"
                      "\n");
    r = load_longbench(no_classes, 0, tiny_tokenizer());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("'all_classes'"), std::string::npos);

    const std::string bad_answers = temp_file(
        "hotpotqa.jsonl", R"({"input": "q", "context": "c", "answers": "a", "dataset": "hotpotqa"})"
                          "\n");
    r = load_longbench(bad_answers, 0, tiny_tokenizer());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("'answers' is not a list"), std::string::npos);
}

// LongBench-E reports by `length` (words): 0-4k, 4-8k, 8k+ (eval.py scorer_e), each bucket
// named by its lower end.
TEST(LongBench, LengthsFallInLongBenchEsBuckets) {
    EXPECT_EQ(length_bucket(0), 0);
    EXPECT_EQ(length_bucket(3999), 0);
    EXPECT_EQ(length_bucket(4000), 4000);
    EXPECT_EQ(length_bucket(7999), 4000);
    EXPECT_EQ(length_bucket(8000), 8000);
    EXPECT_EQ(length_bucket(20000), 8000);
}

TEST(LongBench, DatasetFromFileNameWhenFieldAbsent) {
    const std::string path = temp_file(
        "2wikimqa_e.jsonl",
        R"({"input": "Who?", "context": "{input} stays", "answers": ["Ann"], "length": 5})"
        "\n");
    auto r = load_longbench(path, 0, tiny_tokenizer());
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].task, "2wikimqa");
    EXPECT_EQ((*r)[0].id, "2wikimqa-line1");
    // str.format substitutes once: braces inside the context are not fields.
    EXPECT_NE((*r)[0].prompt.find("passages.\n{input} stays\n\n"), std::string::npos);
}

// A hotpotqa line whose context is `words` numbered words between HEAD and TAIL markers.
std::string long_hotpotqa(int words) {
    std::string ctx = "HEADSTART";
    for (int i = 0; i < words; ++i) ctx += " word" + std::to_string(i);
    ctx += " TAILEND";
    return R"({"input": "What is at the end?", "context": ")" + ctx +
           R"(", "answers": ["TAILEND"], "length": 3000, "dataset": "hotpotqa", "_id": "long"})"
           "\n";
}

TEST(LongBench, MiddleTruncationKeepsHeadAndTail) {
    const Tokenizer& tok = tiny_tokenizer();
    const std::string path = temp_file("long.jsonl", long_hotpotqa(600));
    auto full = load_longbench(path, 0, tok);
    ASSERT_TRUE(full.ok()) << full.error().message();
    const std::string& whole = (*full)[0].prompt;
    const std::vector<TokenId> ids = tok.encode(whole);
    ASSERT_GT(ids.size(), 1000u);

    for (int64_t max_tokens : {500, 501}) {
        auto cut = load_longbench(path, max_tokens, tok);
        ASSERT_TRUE(cut.ok()) << cut.error().message();
        const std::string& p = (*cut)[0].prompt;
        EXPECT_LE(count_tokens(tok, p), max_tokens);
        EXPECT_TRUE(p.starts_with("Answer the question based on the given passages."));
        EXPECT_TRUE(
            p.ends_with("TAILEND\n\nAnswer the question based on the given passages. Only "
                        "give me the answer and do not output any other words.\n\n"
                        "Question: What is at the end?\nAnswer:"));
        EXPECT_EQ(p.find(" word300 "), std::string::npos);  // the middle is gone
        // Exactly pred.py's rule: half = int(max / 2) tokens from each end, decoded and joined.
        const size_t half = static_cast<size_t>(max_tokens / 2);
        const std::vector<TokenId> head(ids.begin(), ids.begin() + half);
        const std::vector<TokenId> tail(ids.end() - half, ids.end());
        EXPECT_EQ(p, tok.decode(head) + tok.decode(tail));
    }
    // A prompt that fits is left alone.
    auto fits = load_longbench(path, static_cast<int64_t>(ids.size()), tok);
    ASSERT_TRUE(fits.ok());
    EXPECT_EQ((*fits)[0].prompt, whole);
    EXPECT_FALSE(load_longbench(path, 1, tok).ok());
}

TEST(LongBench, TruncationInsideACharacterGivesReplacementCharacters) {
    // The tiny vocabulary has no merges for CJK: each character is three byte tokens, so cuts
    // land inside characters; HF's decode turns the partial bytes into U+FFFD.
    std::string ctx;
    for (int i = 0; i < 400; ++i) ctx += "\xe6\x97\xa5";  // 日
    const std::string path =
        temp_file("hotpotqa.jsonl", R"({"input": "q", "context": ")" + ctx +
                                        R"(", "answers": ["a"], "dataset": "hotpotqa"})"
                                        "\n");
    for (int64_t max_tokens : {300, 301, 302, 303}) {
        auto r = load_longbench(path, max_tokens, tiny_tokenizer());
        ASSERT_TRUE(r.ok()) << r.error().message();
        const std::string& p = (*r)[0].prompt;
        EXPECT_EQ(text::sanitize_utf8(p), p) << max_tokens;  // valid UTF-8
    }
}

TEST(ModelLongBench, MiddleTruncationWithTheModelTokenizer) {
    LAZYLLM_MODEL_TOKENIZER_OR_SKIP(tok);
    const std::string path = temp_file("long_model.jsonl", long_hotpotqa(3000));
    auto r = load_longbench(path, 1024, tok);
    ASSERT_TRUE(r.ok()) << r.error().message();
    const std::string& p = (*r)[0].prompt;
    EXPECT_LE(count_tokens(tok, p), 1024);
    EXPECT_GE(count_tokens(tok, p), 1000);
    EXPECT_TRUE(p.starts_with("Answer the question based on the given passages."));
    EXPECT_TRUE(p.ends_with("Question: What is at the end?\nAnswer:"));
    EXPECT_NE(p.find("HEADSTART"), std::string::npos);
    EXPECT_NE(p.find("TAILEND"), std::string::npos);
    EXPECT_EQ(p.find(" word1500 "), std::string::npos);
}

}  // namespace
}  // namespace lazyllm::eval
