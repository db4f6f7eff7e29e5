// lazyllm run --conversation (-cnv): a chat over stdin whose turns reuse the cache; the flags it
// refuses; Ctrl-C ends an answer, not the chat.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <regex>
#include <string>

#include "support/model_path.h"
#include "tools/cli_runner.h"

namespace {

using lazyllm::testing::CliRun;
using lazyllm::testing::contains;
using lazyllm::testing::run_cli;
using lazyllm::testing::write_temp_file;

// A tiny model with room for a chat in SmolLM2's template (its byte-level vocabulary makes
// many tokens of the default system message).
std::string conversation_model() {
    static const std::string path =
        lazyllm::testing::write_cli_tiny_model("lazyllm_cli_conv.gguf", 1024);
    return path;
}

// The "(N cached)" count of each "turn K:" line.
std::vector<int> cached_per_turn(const std::string& out) {
    std::vector<int> cached;
    const std::regex turn(R"(turn \d+: prompt \d+ tokens \((\d+) cached\))");
    for (auto it = std::sregex_iterator(out.begin(), out.end(), turn); it != std::sregex_iterator();
         ++it) {
        cached.push_back(std::stoi((*it)[1]));
    }
    return cached;
}

// Two messages on stdin: two answers, the second over the cached first turn, and the first
// answer is `run --chat`'s for the same message.
TEST(CliConversation, TurnsReuseTheCacheAndAnswerAsRunChat) {
    const std::string m = conversation_model();
    const std::string in = write_temp_file("lazyllm_cli_conv_in.txt", "hello world\nand again\n");
    const std::string flags = " -m " + m + " -n 5 --ignore-eos -t 1";
    const CliRun chat = run_cli("run" + flags + " --conversation < " + in);
    ASSERT_EQ(chat.rc, 0) << chat.out;
    const std::vector<int> cached = cached_per_turn(chat.out);
    ASSERT_EQ(cached.size(), 2u) << chat.out;
    EXPECT_EQ(cached[0], 0) << chat.out;
    EXPECT_GT(cached[1], 20) << chat.out;  // the system message, the first turn, its answer
    const CliRun answers = run_cli("run" + flags + " -cnv < " + in, /*merge_stderr=*/false);
    ASSERT_EQ(answers.rc, 0) << answers.out;
    const CliRun one = run_cli("run" + flags + " --chat -p 'hello world'", false);
    ASSERT_EQ(one.rc, 0) << one.out;
    ASSERT_FALSE(one.out.empty());
    EXPECT_EQ(answers.out.substr(0, one.out.size()), one.out);
    EXPECT_GT(answers.out.size(), one.out.size());  // and a second answer after it
    // -p gives the first message; a line ending in '\' goes on to the next; blank lines wait.
    const std::string more = write_temp_file("lazyllm_cli_conv_more.txt", "\n\nand\\\nagain\n");
    const CliRun given = run_cli("run" + flags + " --conversation -p 'hello world' < " + more);
    ASSERT_EQ(given.rc, 0) << given.out;
    EXPECT_EQ(cached_per_turn(given.out), cached) << given.out;  // "and\nagain": as many tokens
}

TEST(CliConversation, ContextAndFlagsAreNamed) {
    const std::string m = conversation_model();
    const std::string in =
        write_temp_file("lazyllm_cli_conv_long.txt", std::string(600, 'x') + "\n");
    CliRun r = run_cli("run -m " + m + " -n 8 -c 300 --conversation -t 1 < " + in);
    EXPECT_EQ(r.rc, 2) << r.out;  // as run's prompt over the context
    EXPECT_TRUE(contains(r.out, "leaves no room for an answer of -n 8")) << r.out;
    EXPECT_TRUE(contains(r.out, "a larger -c)")) << r.out;  // a smaller -n would not fit it
    // Without -c the chat takes the model's 1024 tokens at most: nothing to suggest.
    const std::string longer =
        write_temp_file("lazyllm_cli_conv_longer.txt", std::string(1100, 'x') + "\n");
    r = run_cli("run -m " + m + " -n 8 --conversation -t 1 < " + longer);
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(
        contains(r.out, "the context of 1024 (the model's) leaves no room for an answer of -n 8\n"))
        << r.out;
    for (const char* flag : {"--json", "--compare", "--truncate-middle", "--profile"}) {
        r = run_cli("run -m " + m + " --conversation " + flag + " < /dev/null");
        EXPECT_EQ(r.rc, 2) << flag << ": " << r.out;
        EXPECT_TRUE(contains(r.out, std::string(flag) + " is for one answer")) << r.out;
    }
    r = run_cli("run -m " + m + " -cnv -f - < /dev/null");
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(contains(r.out, "-f - reads stdin")) << r.out;
    r = run_cli("run -m " + m + " -n 4");
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(contains(r.out, "--conversation for a chat")) << r.out;
    r = run_cli("serve -m " + m + " -cnv");
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(contains(r.out, "here run --conversation")) << r.out;
    r = run_cli("run -m " + m + " --conversation -t 1 < /dev/null");  // no message: nothing to do
    EXPECT_EQ(r.rc, 0) << r.out;
}

// Ctrl-C during an answer ends that answer; the chat goes on with the next message.
TEST(ModelCliTest, CtrlCEndsTheAnswerNotTheChat) {
    LAZYLLM_MODEL_OR_SKIP(path);
    // 400 tokens an answer, one thread (a second test may run beside it): seconds of runway
    // for the first; the signal goes once it has begun.
    const lazyllm::testing::Interrupted r = lazyllm::testing::interrupt_when(
        "printf 'Tell me a story\\nWhat is the capital of France?\\n' | " +
            std::string(LAZYLLM_CLI) + " run -m " + path +
            " --conversation -n 400 --ignore-eos -t 1",
        "[ -s $OUT ]", "0.2");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(turn 1: .*\(interrupted\))"))) << r.err;
    EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(turn 2: .*\(length\))"))) << r.err;
}

}  // namespace
