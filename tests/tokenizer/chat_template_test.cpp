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

TEST(ChatTemplate, MistralV0HasNoSpacesAroundTheAnswer) {
    // The template raises on a system message; as llama.cpp, it opens the first user turn.
    EXPECT_EQ(apply_chat_template(named("mistral-v0"), kConversation),
              "[INST] Be brief.\nHi there  [/INST] Hello! </s>[INST] What is 2+2? [/INST]");
}

TEST(ChatTemplate, DeepSeekR1CutsReasoningFromHistory) {
    // The last system message goes first, bare; an assistant turn keeps what follows its last
    // </think>, untrimmed; the generation prompt opens <think>.
    const std::vector<ChatMessage> chat = {{"user", "Q1"},
                                           {"assistant", "<think>\nr\n</think>x</think>\n\nA1"},
                                           {"system", "S"},
                                           {"user", "Q2"}};
    EXPECT_EQ(apply_chat_template(named("deepseek-r1"), chat),
              "S<｜User｜>Q1<｜Assistant｜>\n\nA1<｜end▁of▁sentence｜><｜User｜>Q2"
              "<｜Assistant｜><think>\n");
    EXPECT_EQ(apply_chat_template(named("deepseek-r1"), {{"user", "Hi"}}, false), "<｜User｜>Hi");
}

TEST(ChatTemplate, Phi3MediumDropsSystemMessages) {
    EXPECT_EQ(apply_chat_template(named("phi3-medium"), kConversation),
              "<|user|>\nHi there <|end|>\n<|assistant|>\n Hello! <|end|>\n"
              "<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n");
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
          ChatFormat::kGemma, ChatFormat::kMistralV0, ChatFormat::kMistralV1,
          ChatFormat::kMistralV3, ChatFormat::kMistralV3Tekken, ChatFormat::kPhi3,
          ChatFormat::kPhi3Medium, ChatFormat::kDeepSeekR1, ChatFormat::kQwen3}) {
        const std::string_view name = chat_format_name(f);
        ASSERT_NE(name, "?");
        EXPECT_EQ(named(name).format, f) << name;
        EXPECT_EQ(describe_chat_template(named(name)), name);
    }
    EXPECT_EQ(describe_chat_template(ChatTemplate{ChatFormat::kDeepSeekR1}),
              "deepseek-r1, generation prompt ends \"<｜Assistant｜>\"");
    EXPECT_EQ(describe_chat_template(named("qwen")), "qwen2.5");
    EXPECT_EQ(describe_chat_template(ChatTemplate{ChatFormat::kChatMl, "Hi", {}}),
              "chatml, default system message \"Hi\"");
    const auto bad = chat_template_from_name("alpaca");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(bad.error().message().find("unknown chat template 'alpaca'"), std::string::npos);
    EXPECT_NE(bad.error().message().find("chatml, deepseek-r1, gemma, llama2, llama3, llama3.1, "
                                         "mistral-v0, mistral-v1"),
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
    EXPECT_EQ(format_of("{{'<|system|>\n' + s + '<|end|>\n<|user|>\n' + c + '<|end|>\n'}}"
                        "{{'<|assistant|>\n'}}"),
              ChatFormat::kPhi3);
    // Phi-3-medium's: user and assistant turns only, the assistant's opened after each user's.
    EXPECT_EQ(format_of("{{'<|user|>\n' + c + '<|end|>\n<|assistant|>\n'}}"),
              ChatFormat::kPhi3Medium);
    // Mixtral-8x7B-Instruct-v0.1's: no <<SYS>>, no spaces around the answer.
    EXPECT_EQ(format_of("{{ '[INST] ' + message['content'] + ' [/INST]' }}"
                        "{{ message['content'] + eos_token}}"),
              ChatFormat::kMistralV0);
}

std::string default_system(std::string_view jinja) {
    const auto t = chat_template_from_text(jinja);
    return t ? t->default_system : "(not recognised)";
}

TEST(ChatTemplate, ChatMlDefaultSystemIsTheLiteralsValue) {
    // Written with "\n" escapes or newlines, any characters inside the literal, Jinja's escapes
    // undone (Qwen2.5-Math's \\boxed{} is \boxed{}).
    EXPECT_EQ(default_system("{{ '<|im_start|>system\\nBe \\'nice\\'<|im_end|>\\n' }}"),
              "Be 'nice'");
    EXPECT_EQ(default_system("{{- '<|im_start|>system\\nPut it in \\\\boxed{}.<|im_end|>\\n' }}"),
              "Put it in \\boxed{}.");
    EXPECT_EQ(default_system(
                  "{{ \"<|im_start|>system\nSay \\\"hi\\\" {% now %}\\x41\\u00e9<|im_end|>\" }}"),
              "Say \"hi\" {% now %}A\u00e9");
    EXPECT_EQ(default_system("{{'<|im_start|>system\n' + m + '<|im_end|>'}}"), "");
    // Outside a block the text is printed as is (Qwen2-VL's).
    EXPECT_EQ(default_system("{% if x %}<|im_start|>system\nBe 'nice'.<|im_end|>\n{% endif %}"),
              "Be 'nice'.");
    // LLaMA-Factory's Qwen template: '<|im_start|>system\n' + NAME, NAME set from a literal.
    EXPECT_EQ(default_system("{% set system_message = 'You are {helpful}.' %}{% if m %}"
                             "{% set system_message = m %}{% endif %}"
                             "{{ '<|im_start|>system\\n' + system_message + '<|im_end|>\\n' }}"),
              "You are {helpful}.");
    EXPECT_EQ(default_system("{% set s = 'x' + y %}{{ '<|im_start|>system\\n' + s }}"), "");
}

TEST(ChatTemplate, DeepSeekR1GenerationPromptComesFromTheTemplate) {
    const std::string body =
        "{{ns.system_prompt}}{{'<｜User｜>' + message['content']}}"
        "{% set content = content.split('</think>')[-1] %}"
        "{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}"
        "{%- if add_generation_prompt and not ns.is_tool -%}";
    const auto prefix = [](const std::string& t) {
        const auto tmpl = chat_template_from_text(t);
        EXPECT_TRUE(tmpl && tmpl->format == ChatFormat::kDeepSeekR1) << t;
        return tmpl ? tmpl->assistant_prefix : "?";
    };
    EXPECT_EQ(prefix(body + "{{'<｜Assistant｜><think>\\n'}}{%- endif %}"), "<think>\n");
    EXPECT_EQ(prefix(body + "{{'<｜Assistant｜>'}}{%- endif %}"), "");
    EXPECT_EQ(prefix(body + "{{'<｜Assistant｜><think>\\n'}}{% if not enable_thinking %}"
                            "{{- '</think>' -}}{% endif %}{%- endif %}"),
              "<think>\n</think>");
    // llama.cpp's own deepseek-r1 template ends user turns with <｜end▁of▁sentence｜>.
    EXPECT_FALSE(chat_template_from_text(
                     "{{- '<｜User｜>' + message['content'] + '<｜end▁of▁sentence｜>' -}}"
                     "{{- '<｜Assistant｜><think>\\n' -}}")
                     .has_value());
}

// 100,000 literals that open a system turn with a name nothing sets, then 100,000 such openings
// in text outside blocks, each without an end marker (4 MiB): the scan for the default system
// message is linear (a lookup of the name's `set` per opening would be quadratic).
TEST(ChatTemplate, DefaultSystemScanIsLinear) {
    std::string t = "{% set s = 'Set one.' %}";
    for (int i = 0; i < 100000; ++i) t += "{{'<|im_start|>system\n' + n}}";
    for (int i = 0; i < 100000; ++i) t += "<|im_start|>system\n{{n}}";
    EXPECT_EQ(chat_template_from_text(t)->default_system, "");
    t += "{{ '<|im_start|>system\n' + s }}";
    EXPECT_EQ(chat_template_from_text(t)->default_system, "Set one.");
}

TEST(ChatTemplate, TemplatesWeDoNotRenderAreNotRecognised) {
    // Phi-4 (ChatML markers with <|im_sep|>), Mistral v7, a Llama 2 look-alike without <<SYS>>,
    // ChatML with a thinking generation prompt (Qwen3.5), Vicuna, and Yi-1.5 (ChatML turns
    // but the system message printed bare).
    for (const char* t :
         {"{{'<|im_start|>user<|im_sep|>' + c + '<|im_end|>'}}",
          "{% if system_message is defined %}{{ system_message }}{% endif %}"
          "{{ '<|im_start|>user\\n' + content + '<|im_end|>\\n<|im_start|>assistant\\n' }}",
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
