// Chat templates on the command line (issue 27): `info` names the detected format, commands that
// render chats take --chat-template NAME and warn on stderr, in one line, when the GGUF's
// template is absent or unknown, and `run -p` parses special-token texts unless
// --no-parse-special. The rendered prompt is checked through its token count against
// `lazyllm tokenize --special` of the expected text. Tiny GGUF models, no network.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/files.h"
#include "tools/cli_runner.h"

namespace {

using lazyllm::testing::CliRun;
using lazyllm::testing::contains;
using lazyllm::testing::read_file_bytes;
using lazyllm::testing::run_cli;
using lazyllm::testing::write_temp_file;

// The tiny model (SmolLM2's ChatML template, a vocabulary with <|im_start|>).
std::string chat_model() {
    static const std::string p =
        lazyllm::testing::write_cli_tiny_model("lazyllm_cli_chat.gguf", 256);
    return p;
}

// The tiny model with its tokenizer.chat_template key renamed: a GGUF without a template. The
// new name has the same length, so every offset in the file holds.
std::string model_without_template() {
    static const std::string p = [] {
        std::string g = read_file_bytes(chat_model());
        const size_t at = g.find("tokenizer.chat_template");
        EXPECT_NE(at, std::string::npos);
        g.replace(at, 23, "tokenizer.chat_tmpl_off");
        return write_temp_file("lazyllm_cli_chat_none.gguf", g);
    }();
    return p;
}

// The tiny model with a template we do not know (Vicuna's markers), padded with spaces to the
// original template's length.
std::string model_with_unknown_template() {
    static const std::string p = [] {
        std::string g = read_file_bytes(chat_model());
        const size_t begin = g.find("{% for message in messages %}");
        const size_t end = g.find("{% endif %}", g.find("add_generation_prompt", begin));
        EXPECT_NE(begin, std::string::npos);
        EXPECT_NE(end, std::string::npos);
        std::string t = "{{ 'USER: ' + messages[0]['content'] + '\\nASSISTANT:' }}";
        t.resize(end + 11 - begin, ' ');
        g.replace(begin, t.size(), t);
        return write_temp_file("lazyllm_cli_chat_unknown.gguf", g);
    }();
    return p;
}

int64_t n_prompt(const std::string& model, const std::string& args) {
    const CliRun r = run_cli("run -m " + model + " -n 1 --json " + args, false);
    EXPECT_EQ(r.rc, 0) << args << "\n" << r.out;
    const auto j = nlohmann::json::parse(r.out.substr(std::min(r.out.find('{'), r.out.size())));
    return j.at("n_prompt").get<int64_t>();
}

// Token count of `text` as `lazyllm tokenize` gives it (with --special: special texts as ids).
int64_t n_tokens(const std::string& text, bool special) {
    // A file per text and process: ctest runs these tests in parallel processes. -f drops one
    // trailing newline (as run -f): the file has one more than the text.
    const std::string f =
        write_temp_file("lazyllm_cli_chat_text_" + std::to_string(::getpid()) + "_" +
                            std::to_string(std::hash<std::string>{}(text)) + ".txt",
                        text + "\n");
    const CliRun r =
        run_cli("tokenize -m " + chat_model() + " -f " + f + (special ? " --special" : ""), false);
    EXPECT_EQ(r.rc, 0) << r.out;
    return std::count(r.out.begin(), r.out.end(), ',') + 1;
}

TEST(CliChatTest, InfoNamesTheDetectedFormat) {
    const CliRun r = run_cli("info " + chat_model());
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out,
                         "chat template chatml, default system message \"You are a helpful "
                         "AI assistant named SmolLM, trained by Hugging Face\" "
                         "(tokenizer.chat_template)"))
        << r.out;
    const CliRun none = run_cli("info " + model_without_template());
    EXPECT_TRUE(contains(none.out,
                         "chat template chatml (the GGUF has no tokenizer.chat_template; "
                         "using chatml (the vocabulary has <|im_start|>))"))
        << none.out;
}

TEST(CliChatTest, FallbackWarnsInOneLineNamingIt) {
    const CliRun r = run_cli("run -m " + model_without_template() + " --chat -p hi -n 1");
    ASSERT_EQ(r.rc, 0) << r.out;
    const std::string want =
        "lazyllm: warning: chat template: the GGUF has no tokenizer.chat_template; using chatml "
        "(the vocabulary has <|im_start|>); --chat-template NAME sets one (chatml, deepseek-r1, "
        "gemma,";
    const size_t at = r.out.find(want);
    ASSERT_NE(at, std::string::npos) << r.out;
    EXPECT_TRUE(contains(r.out.substr(at, r.out.find('\n', at) - at), "qwen3")) << r.out;

    const CliRun odd = run_cli("run -m " + model_with_unknown_template() + " --chat -p hi -n 1");
    ASSERT_EQ(odd.rc, 0) << odd.out;
    EXPECT_TRUE(contains(odd.out,
                         "warning: chat template: the GGUF's tokenizer.chat_template is "
                         "not one we know; using chatml"))
        << odd.out;
}

TEST(CliChatTest, NoWarningWhereNoChatIsRenderedOrTheFormatIsGiven) {
    for (const std::string& args :
         {"run -m " + model_without_template() + " -p hi -n 1",
          "run -m " + model_without_template() + " --chat --chat-template chatml -p hi -n 1",
          "run -m " + chat_model() + " --chat -p hi -n 1"}) {
        const CliRun r = run_cli(args);
        EXPECT_EQ(r.rc, 0) << args << "\n" << r.out;
        EXPECT_FALSE(contains(r.out, "warning: chat template")) << args << "\n" << r.out;
    }
}

TEST(CliChatTest, ChatTemplateOverridesTheDetectedFormat) {
    const std::string open = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
    // Detected: SmolLM2's template, with its default system message.
    EXPECT_EQ(n_prompt(chat_model(), "--chat -p hi"),
              n_tokens("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained "
                       "by Hugging Face<|im_end|>\n" +
                           open,
                       true));
    // Plain ChatML has none; Qwen2.5's has its own.
    EXPECT_EQ(n_prompt(chat_model(), "--chat --chat-template chatml -p hi"), n_tokens(open, true));
    EXPECT_EQ(n_prompt(chat_model(), "--chat-template qwen --system S -p hi"),
              n_tokens("<|im_start|>system\nS<|im_end|>\n" + open, true));
    // Llama 3's markers are not in this vocabulary: they stay text, and the count shows it.
    EXPECT_EQ(n_prompt(model_without_template(), "--chat --chat-template llama3 -p hi"),
              n_tokens("<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
                       "<|start_header_id|>assistant<|end_header_id|>\n\n",
                       true));
}

// run renders a chat only with --chat or --system: a --chat-template without either would be
// ignored, so it is refused, as --compare-reps without --compare.
TEST(CliChatTest, RunRefusesChatTemplateWithoutAChat) {
    const CliRun r = run_cli("run -m " + chat_model() + " --chat-template chatml -p hi -n 1");
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(contains(r.out,
                         "lazyllm: error: --chat-template formats chats: give --chat or "
                         "--system too"))
        << r.out;
}

TEST(CliChatTest, UnknownChatTemplateNameIsAUsageErrorListingTheNames) {
    const CliRun r = run_cli("run -m " + chat_model() + " --chat --chat-template vicuna -p hi");
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(contains(r.out,
                         "unknown chat template 'vicuna'; known: chatml, deepseek-r1, gemma, "
                         "llama2, llama3, llama3.1, mistral-v0, mistral-v1, mistral-v3, "
                         "mistral-v3-tekken, phi3, phi3-medium, qwen2.5, qwen3, mistral (= "
                         "mistral-v3), qwen (= qwen2.5)"))
        << r.out;
}

TEST(CliChatTest, EveryCommandThatRendersChatsTakesChatTemplate) {
    for (const char* cmd : {"run", "serve", "eval", "tune"}) {
        const CliRun r = run_cli(std::string(cmd) + " --help");
        EXPECT_EQ(r.rc, 0) << cmd;
        EXPECT_TRUE(contains(r.out, "--chat-template")) << cmd << "\n" << r.out;
    }
    const CliRun bad = run_cli("serve -m " + chat_model() + " --chat-template nope --port 0");
    EXPECT_EQ(bad.rc, 2) << bad.out;
}

TEST(CliChatTest, PromptSpecialTokensAreParsedAsTokenizeSpecialUnlessTurnedOff) {
    // As llama.cpp's llama-completion (its prompt is tokenized with parse_special); the flag is
    // llama-tokenize's --no-parse-special.
    const std::string text = "<|im_start|>user\nhi<|im_end|>";
    EXPECT_EQ(n_prompt(chat_model(), "-p '" + text + "'"), n_tokens(text, true));
    EXPECT_EQ(n_prompt(chat_model(), "-p '" + text + "' --no-parse-special"),
              n_tokens(text, false));
    EXPECT_LT(n_tokens(text, true), n_tokens(text, false));
}

}  // namespace
