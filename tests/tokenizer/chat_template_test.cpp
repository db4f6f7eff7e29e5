// Chat formats against hand-written expected strings (each is what the model's own Jinja
// template renders, minus the leading BOS that encode() adds), and format detection.
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

TEST(ChatTemplate, ChatMlLikeSmolLM2) {
    EXPECT_EQ(apply_chat_template(ChatFormat::kChatMl, kConversation),
              "<|im_start|>system\nBe brief.<|im_end|>\n"
              "<|im_start|>user\nHi there <|im_end|>\n"
              "<|im_start|>assistant\n Hello! <|im_end|>\n"
              "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
              "<|im_start|>assistant\n");
    // No system message: SmolLM2's template adds its default one.
    EXPECT_EQ(apply_chat_template(ChatFormat::kChatMl, {{"user", "Hi"}}, false),
              "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
              "Hugging Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
    EXPECT_EQ(apply_chat_template(ChatFormat::kChatMl, {}), "<|im_start|>assistant\n");
}

TEST(ChatTemplate, Llama2) {
    EXPECT_EQ(apply_chat_template(ChatFormat::kLlama2, kConversation),
              "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi there [/INST] Hello! </s>"
              "<s>[INST] What is 2+2? [/INST]");
    EXPECT_EQ(apply_chat_template(ChatFormat::kLlama2, {{"user", " Hi "}}), "[INST] Hi [/INST]");
}

TEST(ChatTemplate, Llama3) {
    EXPECT_EQ(apply_chat_template(ChatFormat::kLlama3, kConversation),
              "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT_EQ(apply_chat_template(ChatFormat::kLlama3, {{"user", "x"}}, false),
              "<|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>");
}

TEST(ChatTemplate, GemmaFoldsSystemIntoFirstUserTurn) {
    EXPECT_EQ(apply_chat_template(ChatFormat::kGemma, kConversation),
              "<start_of_turn>user\nBe brief.\n\nHi there<end_of_turn>\n"
              "<start_of_turn>model\nHello!<end_of_turn>\n"
              "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n"
              "<start_of_turn>model\n");
    EXPECT_EQ(apply_chat_template(ChatFormat::kGemma, {{"user", "Hi"}}, false),
              "<start_of_turn>user\nHi<end_of_turn>\n");
}

TEST(ChatTemplate, FormatNames) {
    EXPECT_EQ(chat_format_name(ChatFormat::kChatMl), "chatml");
    EXPECT_EQ(chat_format_name(ChatFormat::kLlama2), "llama2");
    EXPECT_EQ(chat_format_name(ChatFormat::kLlama3), "llama3");
    EXPECT_EQ(chat_format_name(ChatFormat::kGemma), "gemma");
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

TEST(ChatTemplate, DetectFromTemplateMarkers) {
    EXPECT_EQ(detect_chat_format(tok_with("{{'<|im_start|>' + role}}"), "llama"),
              ChatFormat::kChatMl);
    EXPECT_EQ(detect_chat_format(tok_with("{{'<|start_header_id|>'}}"), "llama"),
              ChatFormat::kLlama3);
    EXPECT_EQ(detect_chat_format(tok_with("{{'<start_of_turn>'}}"), "gemma3"), ChatFormat::kGemma);
    EXPECT_EQ(detect_chat_format(tok_with("{{ bos_token + '[INST] ' }}"), "llama"),
              ChatFormat::kLlama2);
    EXPECT_EQ(tok_with("abc").chat_template(), "abc");
}

TEST(ChatTemplate, DetectWithoutTemplate) {
    EXPECT_EQ(detect_chat_format(tok_with(""), "gemma3"), ChatFormat::kGemma);
    EXPECT_EQ(detect_chat_format(tok_with("", {"<|start_header_id|>"}), "llama"),
              ChatFormat::kLlama3);
    // TinyBpe has <|im_start|>: ChatML before the architecture's Llama 2 default.
    EXPECT_EQ(detect_chat_format(tok_with(""), "llama"), ChatFormat::kChatMl);
    EXPECT_EQ(tok_with("").chat_template(), "");
}

}  // namespace
}  // namespace lazyllm
