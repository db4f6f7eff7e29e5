// Chat formats: hand-written expectations for the conventions, detection from template markers
// and the fallback when there is no template or an unknown one, and the --chat-template names.
// chat_template_golden_test.cpp checks every format against its models' real Jinja templates.
#include <gtest/gtest.h>

#include "tokenizer/tokenizer_test_util.h"

namespace lazyllm {
namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."},
    {"user", "Hi there "},
    {"assistant", " Hello! "},
    {"user", "What is 2+2?"},
};

ChatTemplate named(std::string_view name) {
    auto t = chat_template_from_name(name);
    EXPECT_TRUE(t.ok()) << name;
    return t.ok() ? *t : ChatTemplate{};
}

TEST(ChatTemplate, ChatMlAddsTheTemplatesDefaultSystemMessage) {
    const ChatTemplate smollm{ChatFormat::kChatMl, "You are SmolLM", {}};
    EXPECT_EQ(apply_chat_template(smollm, kConversation),
              "<|im_start|>system\nBe brief.<|im_end|>\n"
              "<|im_start|>user\nHi there <|im_end|>\n"
              "<|im_start|>assistant\n Hello! <|im_end|>\n"
              "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
              "<|im_start|>assistant\n");
    EXPECT_EQ(apply_chat_template(smollm, {{"user", "Hi"}}, false),
              "<|im_start|>system\nYou are SmolLM<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
    // Plain ChatML (llama.cpp's chatml) has none; an empty chat gets only the generation prompt.
    EXPECT_EQ(apply_chat_template(named("chatml"), {{"user", "Hi"}}, false),
              "<|im_start|>user\nHi<|im_end|>\n");
    EXPECT_EQ(apply_chat_template(smollm, {}), "<|im_start|>assistant\n");
}

TEST(ChatTemplate, Llama2HasASysBlockAndBosInsideTheChat) {
    EXPECT_EQ(apply_chat_template(named("llama2"), kConversation),
              "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi there [/INST] Hello! </s>"
              "<s>[INST] What is 2+2? [/INST]");
    EXPECT_EQ(apply_chat_template(named("llama2"), {{"user", " Hi "}}), "[INST] Hi [/INST]");
}

TEST(ChatTemplate, MistralGluesTheSystemMessageToAUserTurn) {
    // v1 (v0.1 / v0.2): on the first user turn, spaces around [INST], no trimming.
    EXPECT_EQ(apply_chat_template(named("mistral-v1"), kConversation),
              " [INST] Be brief.\n\nHi there  [/INST]  Hello! </s> [INST] What is 2+2? [/INST]");
    // v3 (v0.3): on the last message when it is a user turn; the assistant's content trimmed.
    EXPECT_EQ(apply_chat_template(named("mistral"), kConversation),
              "[INST] Hi there [/INST] Hello!</s>[INST] Be brief.\n\nWhat is 2+2?[/INST]");
    EXPECT_EQ(apply_chat_template(named("mistral-v3-tekken"), kConversation),
              "[INST]Hi there [/INST] Hello! </s>[INST]Be brief.\n\nWhat is 2+2?[/INST]");
}

TEST(ChatTemplate, Llama3AndLlama31) {
    EXPECT_EQ(apply_chat_template(named("llama3"), kConversation),
              "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    const ChatTemplate dated{ChatFormat::kLlama31, {}, "26 Jul 2024"};
    EXPECT_EQ(apply_chat_template(dated, {{"user", "x"}}, false),
              "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December "
              "2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>");
    // No date: today's, as "%d %b %Y".
    const std::string today = apply_chat_template(named("llama3.1"), {});
    const size_t at = today.find("Today Date: ");
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(today.find("\n\n<|eot_id|>", at) - at - 12, 11u) << today;
}

TEST(ChatTemplate, GemmaFoldsSystemIntoFirstUserTurn) {
    EXPECT_EQ(apply_chat_template(named("gemma"), kConversation),
              "<start_of_turn>user\nBe brief.\n\nHi there<end_of_turn>\n"
              "<start_of_turn>model\nHello!<end_of_turn>\n"
              "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n"
              "<start_of_turn>model\n");
}

TEST(ChatTemplate, Phi3EndsWithEosWithoutAGenerationPrompt) {
    EXPECT_EQ(apply_chat_template(named("phi3"), {{"system", "S"}, {"user", "Hi"}}),
              "<|system|>\nS<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n");
    EXPECT_EQ(apply_chat_template(named("phi3"), {{"user", "Hi"}}, false),
              "<|user|>\nHi<|end|>\n<|endoftext|>");
}

TEST(ChatTemplate, QwenDefaultSystemAndQwen3Thinking) {
    EXPECT_EQ(apply_chat_template(named("qwen"), {{"user", "Hi"}}),
              "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
              "assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    // Qwen3: earlier turns lose their reasoning; the generation prompt leaves thinking on.
    const std::vector<ChatMessage> chat = {
        {"user", "Q1"}, {"assistant", "<think>\nr\n</think>\n\nA1"}, {"user", "Q2"}};
    EXPECT_EQ(apply_chat_template(named("qwen3"), chat),
              "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n"
              "<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, TrimIsPythonsStrip) {
    // Jinja's trim is str.strip(): Unicode white space (U+00A0, U+3000) and U+001C..U+001F go,
    // invalid UTF-8 stays.
    EXPECT_EQ(apply_chat_template(named("llama3"), {{"user", "\xc2\xa0x\x1c\xe3\x80\x80"}}, false),
              "<|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>");
    EXPECT_EQ(apply_chat_template(named("llama3"), {{"user", " \xff "}}, false),
              "<|start_header_id|>user<|end_header_id|>\n\n\xff<|eot_id|>");
}

TEST(ChatTemplate, NamesRoundTripAndUnknownNamesListThem) {
    for (ChatFormat f :
         {ChatFormat::kChatMl, ChatFormat::kLlama2, ChatFormat::kLlama3, ChatFormat::kLlama31,
          ChatFormat::kGemma, ChatFormat::kMistralV1, ChatFormat::kMistralV3,
          ChatFormat::kMistralV3Tekken, ChatFormat::kPhi3, ChatFormat::kQwen3}) {
        const std::string_view name = chat_format_name(f);
        ASSERT_NE(name, "?");
        EXPECT_EQ(named(name).format, f) << name;
        EXPECT_EQ(describe_chat_template(ChatTemplate{f}), name);
    }
    EXPECT_EQ(describe_chat_template(named("qwen")), "qwen2.5");
    EXPECT_EQ(describe_chat_template(ChatTemplate{ChatFormat::kChatMl, "Hi", {}}),
              "chatml, default system message \"Hi\"");
    const auto bad = chat_template_from_name("vicuna");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(bad.error().message().find("unknown chat template 'vicuna'"), std::string::npos);
    EXPECT_NE(bad.error().message().find("chatml, gemma, llama2, llama3, llama3.1, mistral-v1"),
              std::string::npos)
        << bad.error().message();
}

Tokenizer tok_with(const std::string& chat_template, const std::vector<std::string>& extra = {}) {
    testing::TinyBpe v({"h e"});
    for (const std::string& t : extra) {
        v.tokens.push_back(t);
        v.types.push_back(testing::kControl);
    }
    GgufWriter w = v.writer();
    if (!chat_template.empty()) w.set_string("tokenizer.chat_template", chat_template);
    auto tok = testing::tokenizer_from(w);
    EXPECT_TRUE(tok.ok()) << tok.error().message();
    return std::move(tok).value();
}

std::optional<ChatFormat> format_of(std::string_view jinja) {
    const auto t = chat_template_from_text(jinja);
    return t ? std::optional(t->format) : std::nullopt;
}

TEST(ChatTemplate, DetectFromTemplateMarkers) {
    EXPECT_EQ(format_of("{{'<|im_start|>' + role}}"), ChatFormat::kChatMl);
    EXPECT_EQ(format_of("{{'<|start_header_id|>' + r + '<|end_header_id|>'}}"),
              ChatFormat::kLlama3);
    EXPECT_EQ(format_of("{{'<start_of_turn>'}}"), ChatFormat::kGemma);
    EXPECT_EQ(format_of("{{ bos_token + '[INST] <<SYS>>\\n' }}"), ChatFormat::kLlama2);
    EXPECT_EQ(format_of("{{'<|user|>\n' + c + '<|end|>\n<|assistant|>\n'}}"), ChatFormat::kPhi3);
    // A ChatML default system message, written with "\n" escapes or newlines.
    EXPECT_EQ(chat_template_from_text("{{ '<|im_start|>system\\nBe \\'nice\\'<|im_end|>\\n' }}")
                  ->default_system,
              "Be 'nice'");
    EXPECT_EQ(
        chat_template_from_text("{{'<|im_start|>system\n' + m + '<|im_end|>'}}")->default_system,
        "");
}

// 200,000 system-turn openings each followed by a quote, then one end marker (4 MiB): the scan
// for the default system message is linear (it rescanned to the end marker from each opening,
// an hour at this size), and later openings after a literal still count.
TEST(ChatTemplate, DefaultSystemScanIsLinear) {
    std::string t;
    for (int i = 0; i < 200000; ++i) t += "<|im_start|>system\n'";
    t += "<|im_end|>";
    EXPECT_EQ(chat_template_from_text(t)->default_system, "");
    t += "{{ '<|im_start|>system\nLast one.<|im_end|>' }}";
    EXPECT_EQ(chat_template_from_text(t)->default_system, "Last one.");
}

TEST(ChatTemplate, TemplatesWeDoNotRenderAreNotRecognised) {
    // Phi-4 (ChatML markers with <|im_sep|>), Mistral v7, a Llama 2 look-alike without <<SYS>>,
    // ChatML with a thinking generation prompt (Qwen3.5), and Vicuna.
    for (const char* t :
         {"{{'<|im_start|>user<|im_sep|>' + c + '<|im_end|>'}}",
          "{{ '[SYSTEM_PROMPT] ' + c + '[/SYSTEM_PROMPT]' }}{{ '[INST] ' + c + '[/INST]' }}",
          "{{ bos_token }}{{ '[INST] ' + message['content'] + ' [/INST]' }}",
          "{{- '<|im_start|>assistant\\n' }}{{- '<think>\\n' }}{{ '</think>' }}",
          "{{-'USER: ' + message['content'] + '\\n'-}}{{-'ASSISTANT:'-}}"}) {
        EXPECT_FALSE(chat_template_from_text(t).has_value()) << t;
    }
}

TEST(ChatTemplate, FallbackIsNamedWithItsReason) {
    const ChatTemplateChoice none = detect_chat_template(tok_with(""), "llama");
    EXPECT_FALSE(none.recognised);
    EXPECT_EQ(none.tmpl.format, ChatFormat::kChatMl);  // TinyBpe has <|im_start|>
    const std::string w = chat_template_warning(none);
    EXPECT_NE(w.find("the GGUF has no tokenizer.chat_template; using chatml (the vocabulary has "
                     "<|im_start|>)"),
              std::string::npos)
        << w;
    EXPECT_NE(w.find("--chat-template NAME"), std::string::npos) << w;
    EXPECT_EQ(w.find('\n'), std::string::npos);

    const ChatTemplateChoice odd = detect_chat_template(tok_with("{{ 'USER: ' }}"), "llama");
    EXPECT_FALSE(odd.recognised);
    EXPECT_NE(odd.reason.find("is not one we know"), std::string::npos) << odd.reason;

    EXPECT_EQ(detect_chat_template(tok_with(""), "gemma3").tmpl.format, ChatFormat::kGemma);
    EXPECT_EQ(detect_chat_template(tok_with("", {"<|start_header_id|>"}), "llama").tmpl.format,
              ChatFormat::kLlama3);

    const ChatTemplateChoice known = detect_chat_template(tok_with("{{'<start_of_turn>'}}"), "x");
    EXPECT_TRUE(known.recognised);
    EXPECT_EQ(chat_template_warning(known), "");
}

}  // namespace
}  // namespace lazyllm
