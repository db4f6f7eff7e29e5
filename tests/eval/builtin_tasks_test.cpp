// Built-in synthetic tasks: determinism, seeds, length, needle depth, answers in the prompt, and
// that the gold answer scores 1. Unit tests use the tiny byte-level BPE vocabulary; the
// ModelEvalTasks suites size prompts with the default model's tokenizer.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <set>
#include <string>

#include "eval/haystack.h"
#include "eval/runner.h"
#include "eval/task.h"
#include "eval/text_util.h"
#include "tests/eval/test_tokenizers.h"

namespace lazyllm::eval {
namespace {

using testing::tiny_tokenizer;

Sample make(std::string_view task, int64_t n, double depth, uint64_t seed, const Tokenizer& tok) {
    auto s = make_builtin(task, n, depth, seed, tok);
    EXPECT_TRUE(s.ok()) << task << ": " << (s.ok() ? "" : s.error().message());
    return s.ok() ? std::move(s).value() : Sample{};
}

int64_t measured(const Sample& s, const Tokenizer& tok) {
    return count_tokens(tok, s.prompt + s.answer_prefix);
}

// `text` without the other needles: whole lines starting with "VAR " (vt) and the sentences
// "One of the special magic numbers for ... ." (niah).
std::string without_needles(const std::string& text) {
    std::string out;
    for (const std::string& line : text::split(text, "\n")) {
        if (line.starts_with("VAR ")) continue;
        out += line + "\n";
    }
    out.pop_back();
    constexpr std::string_view kNeedle = "One of the special magic numbers for ";
    for (size_t at = out.find(kNeedle); at != std::string::npos; at = out.find(kNeedle, at)) {
        size_t e = out.find(". ", at);
        e = e == std::string::npos ? out.size() : e + 2;
        out.erase(at, e - at);
    }
    return out;
}

// Where the needle sits: the filler tokens of the context before it over all the context's
// filler tokens (other needles not counted, as make_builtin defines depth). The context is what
// lies between the last `begin` and the last `end` marker.
double needle_fraction(const std::string& prompt, std::string_view begin, std::string_view end,
                       const std::string& needle, const Tokenizer& tok) {
    const size_t b = prompt.rfind(begin);
    const size_t e = prompt.rfind(end);
    const size_t at = prompt.find(needle, b);
    EXPECT_NE(b, std::string::npos);
    EXPECT_NE(e, std::string::npos);
    EXPECT_NE(at, std::string::npos) << needle;
    if (b == std::string::npos || e == std::string::npos || at == std::string::npos) return -1.0;
    const size_t cb = b + begin.size();
    const std::string before = without_needles(prompt.substr(cb, at - cb));
    const std::string after =
        without_needles(prompt.substr(at + needle.size(), e - at - needle.size()));
    const double t_before = static_cast<double>(count_tokens(tok, before));
    const double t_after = static_cast<double>(count_tokens(tok, after));
    return t_before / (t_before + t_after);
}

// The needle asked about, and the context markers, per task.
struct NeedleProbe {
    std::string needle;
    std::string_view begin;
    std::string_view end;
};

NeedleProbe probe(const Sample& s) {
    if (s.task == "passkey") {
        return {"The pass key is " + s.answers[0] + ". Remember it. " + s.answers[0] +
                    " is the pass key.",
                "important information there.\n", "\nWhat is the pass key?"};
    }
    if (s.task == "vt") {
        return {"VAR " + s.answers[0] + " = ", "hidden in the following text.\n\n",
                "\nQuestion: Find all variables"};
    }
    if (s.task == "mdqa") {
        // The gold document: from its "Document [" to the end of its paragraph.
        const size_t at = s.prompt.find(s.answers[0]);
        const size_t b = s.prompt.rfind("Document [", at);
        const size_t e = s.prompt.find("\n\n", at);
        return {s.prompt.substr(b, e - b), "The following are given passages.\n",
                "\n\nAnswer the question based on the given passages."};
    }
    return {"One of the special magic numbers for", "afterwards.\n", "\nWhat "};
}

// The asked-for niah needle is the one holding the first answer.
std::string niah_needle(const Sample& s) {
    const size_t at = s.prompt.find(s.answers[0]);
    const size_t b = s.prompt.rfind("One of the special magic numbers for", at);
    return s.prompt.substr(b, at + s.answers[0].size() + 1 - b);
}

double depth_of(const Sample& s, const Tokenizer& tok) {
    NeedleProbe p = probe(s);
    if (s.task.starts_with("niah")) p.needle = niah_needle(s);
    return needle_fraction(s.prompt, p.begin, p.end, p.needle, tok);
}

const std::vector<std::string>& all_tasks() {
    static const std::vector<std::string> names = builtin_task_names();
    return names;
}

TEST(BuiltinTasks, NamesAndArgumentErrors) {
    EXPECT_EQ(all_tasks(), (std::vector<std::string>{"passkey", "niah_single", "niah_multikey",
                                                     "niah_multivalue", "vt", "mdqa"}));
    const Tokenizer& tok = tiny_tokenizer();
    auto unknown = make_builtin("niah_triple", 1024, 0.5, 1, tok);
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.error().message().find("niah_triple"), std::string::npos);
    EXPECT_FALSE(make_builtin("passkey", 1024, 1.5, 1, tok).ok());
    EXPECT_FALSE(make_builtin("passkey", 0, 0.5, 1, tok).ok());
    for (const std::string& task : all_tasks()) {
        auto tiny = make_builtin(task, 20, 0.5, 1, tok);
        ASSERT_FALSE(tiny.ok()) << task;
        EXPECT_EQ(tiny.error().code(), ErrorCode::kOutOfRange) << task;
    }
}

TEST(BuiltinTasks, DeterministicAndSeeded) {
    const Tokenizer& tok = tiny_tokenizer();
    for (const std::string& task : all_tasks()) {
        const Sample a = make(task, 1024, 0.3, 11, tok);
        const Sample b = make(task, 1024, 0.3, 11, tok);
        const Sample c = make(task, 1024, 0.3, 12, tok);
        EXPECT_EQ(a.prompt, b.prompt) << task;
        EXPECT_EQ(a.answer_prefix, b.answer_prefix) << task;
        EXPECT_EQ(a.answers, b.answers) << task;
        EXPECT_EQ(a.id, b.id) << task;
        EXPECT_NE(a.prompt, c.prompt) << task;
        EXPECT_NE(a.answers, c.answers) << task;
        EXPECT_NE(a.id, c.id) << task;
        // The same seed asks for the same thing at another length and depth.
        const Sample d = make(task, 2048, 0.8, 11, tok);
        EXPECT_EQ(a.answers, d.answers) << task;
    }
}

TEST(BuiltinTasks, LengthWithinTwoPercent) {
    const Tokenizer& tok = tiny_tokenizer();
    for (const std::string& task : all_tasks()) {
        for (int64_t n : {1200, 2048, 3000}) {  // the tiny vocabulary: ~1.3 characters a token
            const Sample s = make(task, n, 0.5, 3, tok);
            const int64_t t = measured(s, tok);
            EXPECT_LE(std::abs(t - n), n / 50) << task << " n=" << n << " got " << t;
            EXPECT_LE(t, n + n / 50) << task;
            EXPECT_EQ(s.target_tokens, n);
        }
    }
}

// A suite length at the model's context is generated shorter (room for the chat template and
// the answer) but keeps its requested length as the cell label.
TEST(BuiltinTasks, SuiteCapsPromptsBelowTheContext) {
    const Tokenizer& tok = tiny_tokenizer();
    SuiteSpec spec;
    spec.tasks = {"passkey", "mdqa"};
    spec.lengths = {1000, 2048};
    spec.n_depths = 1;
    spec.max_prompt_tokens = 1500;
    auto suite = make_suite(spec, tok);
    ASSERT_TRUE(suite.ok()) << suite.error().message();
    ASSERT_EQ(suite->size(), 4u);
    for (const Sample& s : *suite) {
        const int64_t t = measured(s, tok);
        if (s.target_tokens == 2048) {
            EXPECT_LE(t, 1500 + 1500 / 50) << s.task;
            EXPECT_GE(t, 1500 - 1500 / 50) << s.task;
        } else {
            EXPECT_EQ(s.target_tokens, 1000);
            EXPECT_LE(std::abs(t - 1000), 1000 / 50) << s.task;
        }
    }
}

TEST(BuiltinTasks, NeedleAtDepth) {
    const Tokenizer& tok = tiny_tokenizer();
    for (const std::string& task : all_tasks()) {
        for (double depth : {0.0, 0.25, 0.5, 0.9, 1.0}) {
            const Sample s = make(task, 2048, depth, 5, tok);
            EXPECT_DOUBLE_EQ(s.depth, depth);
            // With the tiny vocabulary an mdqa document is ~200 tokens of ~1500 and a vt noise
            // line ~65; a needle lands within half a unit of its depth.
            const double tol = task == "mdqa" ? 0.08 : task == "vt" ? 0.04 : 0.03;
            EXPECT_NEAR(depth_of(s, tok), depth, tol) << task << " depth " << depth;
        }
    }
}

TEST(BuiltinTasks, AnswersInPromptAndGoldScoresOne) {
    const Tokenizer& tok = tiny_tokenizer();
    for (const std::string& task : all_tasks()) {
        for (uint64_t seed : {1, 2, 3}) {
            const Sample s = make(task, 1500, 0.4, seed, tok);
            ASSERT_FALSE(s.answers.empty()) << task;
            for (const std::string& a : s.answers) {
                if (task == "passkey") {
                    EXPECT_EQ(text::count_occurrences(s.prompt, "The pass key is " + a + "."), 1u);
                } else if (task == "vt") {
                    EXPECT_EQ(text::count_occurrences(s.prompt, "VAR " + a + " = "), 1u) << a;
                } else {
                    EXPECT_EQ(text::count_occurrences(s.prompt, a), 1u) << task << ": " << a;
                }
            }
            EXPECT_DOUBLE_EQ(score(s, text::join(s.answers, ", ")), 1.0) << task;
            EXPECT_LT(score(s, "I do not know."), 0.5) << task;
        }
    }
}

TEST(BuiltinTasks, TaskShapes) {
    const Tokenizer& tok = tiny_tokenizer();
    const Sample pk = make("passkey", 1024, 0.5, 9, tok);
    EXPECT_FALSE(pk.chat);
    EXPECT_EQ(pk.metric, Metric::kPasskey);
    EXPECT_EQ(pk.max_new_tokens, 8);
    EXPECT_TRUE(
        pk.prompt.starts_with("There is an important info hidden inside a lot of "
                              "irrelevant text."));
    EXPECT_TRUE(pk.prompt.ends_with("\nWhat is the pass key? The pass key is"));
    const int key = std::stoi(pk.answers[0]);
    EXPECT_GE(key, 1);
    EXPECT_LE(key, 50000);

    const Sample ns = make("niah_single", 1024, 0.5, 9, tok);
    EXPECT_TRUE(
        ns.prompt.starts_with("A special magic number is hidden within the following "
                              "text. Make sure to memorize it. I will quiz you about the "
                              "number afterwards.\n"));
    EXPECT_TRUE(ns.answer_prefix.starts_with(" The special magic number for "));
    EXPECT_TRUE(ns.answer_prefix.ends_with(" mentioned in the provided text is"));
    EXPECT_EQ(ns.answers.size(), 1u);
    EXPECT_EQ(ns.answers[0].size(), 7u);
    EXPECT_EQ(ns.metric, Metric::kStringMatchAll);
    // Essay-like filler: many different sentences, not one repeated.
    const Sample big = make("niah_single", 8000, 0.5, 9, tok);
    const std::vector<std::string> all = text::split(big.prompt, ". ");
    const std::set<std::string> distinct(all.begin(), all.end());
    EXPECT_GT(all.size(), 100u);
    EXPECT_GT(distinct.size(), all.size() * 9 / 10);

    const Sample mk = make("niah_multikey", 1024, 0.5, 9, tok);
    EXPECT_EQ(text::count_occurrences(mk.prompt, "One of the special magic numbers for "), 4u);
    EXPECT_EQ(mk.answers.size(), 1u);

    const Sample mv = make("niah_multivalue", 1024, 0.5, 9, tok);
    EXPECT_TRUE(mv.prompt.starts_with("Some special magic numbers are hidden"));
    EXPECT_TRUE(mv.answer_prefix.ends_with(" mentioned in the provided text are"));
    EXPECT_EQ(mv.answers.size(), 4u);
    EXPECT_DOUBLE_EQ(score(mv, mv.answers[0] + " " + mv.answers[1]), 0.5);

    const Sample vt = make("vt", 1024, 0.5, 9, tok);
    EXPECT_EQ(vt.answers.size(), 5u);
    EXPECT_EQ(vt.answers[0].size(), 5u);
    EXPECT_TRUE(
        vt.answer_prefix.starts_with(" Answer: According to the chain(s) of variable "
                                     "assignment in the text above, 5 variables are "
                                     "assigned the value "));
    // The in-context example comes first, with its own answer.
    EXPECT_TRUE(vt.prompt.starts_with("Memorize and track the chain(s) of variable assignment"));
    EXPECT_EQ(text::count_occurrences(vt.prompt, "Memorize and track"), 2u);
    // Chains in order: each hop after the one it copies.
    for (size_t j = 1; j < vt.answers.size(); ++j) {
        EXPECT_LT(vt.prompt.find("VAR " + vt.answers[j - 1] + " = "),
                  vt.prompt.find("VAR " + vt.answers[j] + " = VAR " + vt.answers[j - 1]));
    }

    const Sample md = make("mdqa", 3000, 0.5, 9, tok);
    EXPECT_TRUE(md.chat);
    EXPECT_FALSE(md.first_line_only);  // as LongBench's hotpotqa
    EXPECT_EQ(md.metric, Metric::kQaF1);
    EXPECT_EQ(md.max_new_tokens, 32);
    EXPECT_NE(md.prompt.find("Document [1] Title: "), std::string::npos);
    EXPECT_NE(md.prompt.find("Document [8] Title: "), std::string::npos);
    EXPECT_NE(md.prompt.find("\n\nQuestion: "), std::string::npos);
    EXPECT_TRUE(md.prompt.ends_with("\nAnswer:"));
}

// ---- with the default model's tokenizer ----

TEST(ModelEvalTasks, LengthWithinTwoPercent) {
    LAZYLLM_MODEL_TOKENIZER_OR_SKIP(tok);
    for (const std::string& task : all_tasks()) {
        for (int64_t n : {1024, 2048, 4096}) {
            const Sample s = make(task, n, 0.5, 21, tok);
            const int64_t t = measured(s, tok);
            EXPECT_LE(std::abs(t - n), n / 50) << task << " n=" << n << " got " << t;
        }
    }
}

TEST(ModelEvalTasks, NeedleAtDepth) {
    LAZYLLM_MODEL_TOKENIZER_OR_SKIP(tok);
    for (const std::string& task : all_tasks()) {
        for (double depth : {0.1, 0.5, 0.9}) {
            const Sample s = make(task, 2048, depth, 4, tok);
            const double tol = task == "mdqa" ? 0.05 : 0.03;
            EXPECT_NEAR(depth_of(s, tok), depth, tol) << task << " depth " << depth;
            EXPECT_DOUBLE_EQ(score(s, text::join(s.answers, " ")), 1.0) << task;
        }
    }
}

TEST(ModelEvalTasks, SizingAn8kPromptIsFast) {
    LAZYLLM_MODEL_TOKENIZER_OR_SKIP(tok);
    for (const std::string& task : all_tasks()) {
        const auto t0 = std::chrono::steady_clock::now();
        const Sample s = make(task, 8192, 0.5, 8, tok);
        const double sec =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        EXPECT_LE(std::abs(measured(s, tok) - 8192), 8192 / 50) << task;
        std::printf("%-16s 8192 tokens sized in %.0f ms\n", task.c_str(), sec * 1e3);
    }
}

}  // namespace
}  // namespace lazyllm::eval
