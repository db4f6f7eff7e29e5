// Chat formats, hand-written rather than a Jinja interpreter: the four formats of the models we
// run, each following its model's tokenizer.chat_template (quoted below), with one convention
// for all: the rendered text never starts with the BOS token, because encode() adds it when the
// vocabulary asks for it (tokenizer.ggml.add_bos_token), as llama.cpp's
// llama_chat_apply_template also leaves it out. Special-token texts in the result must be
// encoded with parse_special = true. "trim" is Jinja's: Python's str.strip(), done here on
// ASCII whitespace.
#include <string>

#include "lazyllm/tokenizer.h"

namespace lazyllm {
namespace {

std::string_view trim(std::string_view s) {
    constexpr std::string_view kWs = " \t\n\r\v\f";
    const size_t b = s.find_first_not_of(kWs);
    if (b == std::string_view::npos) return {};
    const size_t e = s.find_last_not_of(kWs);
    return s.substr(b, e - b + 1);
}

bool contains(std::string_view hay, std::string_view needle) {
    return hay.find(needle) != std::string_view::npos;
}

// SmolLM2-Instruct's template (tokenizer.chat_template in its GGUF):
//   {% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}
//   {{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging
//   Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' +
//   message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}
//   {{ '<|im_start|>assistant\n' }}{% endif %}
// The default system message is SmolLM2's; other ChatML models (Qwen2) have their own.
constexpr std::string_view kChatMlDefaultSystem =
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

std::string render_chatml(const std::vector<ChatMessage>& msgs, bool gen) {
    std::string out;
    for (size_t i = 0; i < msgs.size(); ++i) {
        if (i == 0 && msgs[0].role != "system") {
            out += "<|im_start|>system\n";
            out += kChatMlDefaultSystem;
            out += "<|im_end|>\n";
        }
        out += "<|im_start|>" + msgs[i].role + "\n" + msgs[i].content + "<|im_end|>\n";
    }
    if (gen) out += "<|im_start|>assistant\n";
    return out;
}

// Llama-2-chat's template (meta-llama/Llama-2-7b-chat-hf tokenizer_config.json):
//   system = messages[0] if it is a system message; for each other message:
//   content = '<<SYS>>\n' + system + '\n<</SYS>>\n\n' + content on the first one;
//   user: bos_token + '[INST] ' + content.strip() + ' [/INST]'
//   assistant: ' ' + content.strip() + ' ' + eos_token
// There is no generation prompt: the text already ends with [/INST].
std::string render_llama2(const std::vector<ChatMessage>& msgs) {
    std::string out;
    size_t first = 0;
    std::string system;
    bool has_system = false;
    if (!msgs.empty() && msgs[0].role == "system") {
        system = msgs[0].content;
        has_system = true;
        first = 1;
    }
    for (size_t i = first; i < msgs.size(); ++i) {
        std::string content = msgs[i].content;
        if (i == first && has_system) {
            content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
        }
        if (msgs[i].role == "user") {
            if (i != first) out += "<s>";  // the first BOS comes from encode()
            out += "[INST] ";
            out += trim(content);
            out += " [/INST]";
        } else if (msgs[i].role == "assistant") {
            out += " ";
            out += trim(content);
            out += " </s>";
        }
    }
    return out;
}

// Llama 3 Instruct's template (meta-llama/Meta-Llama-3-8B-Instruct):
//   '<|start_header_id|>' + role + '<|end_header_id|>\n\n' + content | trim + '<|eot_id|>'
//   (bos_token before the first), then '<|start_header_id|>assistant<|end_header_id|>\n\n'.
std::string render_llama3(const std::vector<ChatMessage>& msgs, bool gen) {
    std::string out;
    for (const ChatMessage& m : msgs) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
        out += trim(m.content);
        out += "<|eot_id|>";
    }
    if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
}

// Gemma 2/3's template (google/gemma-3-270m-it): bos_token; a leading system message becomes
// first_user_prefix = content + '\n\n' on the first turn; 'assistant' is called 'model';
//   '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first) + content | trim +
//   '<end_of_turn>\n', then '<start_of_turn>model\n'.
std::string render_gemma(const std::vector<ChatMessage>& msgs, bool gen) {
    std::string out;
    size_t first = 0;
    std::string prefix;
    if (!msgs.empty() && msgs[0].role == "system") {
        prefix = msgs[0].content + "\n\n";
        first = 1;
    }
    for (size_t i = first; i < msgs.size(); ++i) {
        const std::string role = msgs[i].role == "assistant" ? "model" : msgs[i].role;
        out += "<start_of_turn>" + role + "\n";
        if (i == first) out += prefix;
        out += trim(msgs[i].content);
        out += "<end_of_turn>\n";
    }
    if (gen) out += "<start_of_turn>model\n";
    return out;
}

}  // namespace

ChatFormat detect_chat_format(const Tokenizer& tok, std::string_view architecture) {
    const std::string& t = tok.chat_template();
    if (contains(t, "<|im_start|>")) return ChatFormat::kChatMl;
    if (contains(t, "<|start_header_id|>")) return ChatFormat::kLlama3;
    if (contains(t, "<start_of_turn>")) return ChatFormat::kGemma;
    if (contains(t, "[INST]")) return ChatFormat::kLlama2;
    // No (or an unrecognized) template: go by the vocabulary's markers, then the architecture.
    if (architecture.starts_with("gemma") || tok.find_token("<start_of_turn>")) {
        return ChatFormat::kGemma;
    }
    if (tok.find_token("<|start_header_id|>")) return ChatFormat::kLlama3;
    if (tok.find_token("<|im_start|>")) return ChatFormat::kChatMl;
    if (architecture == "llama") return ChatFormat::kLlama2;
    return ChatFormat::kChatMl;
}

std::string_view chat_format_name(ChatFormat f) {
    switch (f) {
        case ChatFormat::kChatMl:
            return "chatml";
        case ChatFormat::kLlama2:
            return "llama2";
        case ChatFormat::kLlama3:
            return "llama3";
        case ChatFormat::kGemma:
            return "gemma";
    }
    return "?";
}

std::string apply_chat_template(ChatFormat format, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt) {
    switch (format) {
        case ChatFormat::kChatMl:
            return render_chatml(messages, add_generation_prompt);
        case ChatFormat::kLlama2:
            return render_llama2(messages);
        case ChatFormat::kLlama3:
            return render_llama3(messages, add_generation_prompt);
        case ChatFormat::kGemma:
            return render_gemma(messages, add_generation_prompt);
    }
    return std::string();
}

}  // namespace lazyllm
