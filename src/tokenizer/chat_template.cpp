// Chat formats, hand-written rather than a Jinja interpreter: each follows its models'
// tokenizer.chat_template (the Jinja each renderer paraphrases is quoted above it; the full texts
// are in tests/golden/chat_templates/), and tests/golden/chat_templates.json, rendered from those
// templates by Jinja (scripts/golden_chat_templates.py), checks them byte for byte. One
// convention for all: the text never starts with the BOS token, because encode() adds it when
// the vocabulary asks for it (tokenizer.ggml.add_bos_token), as llama.cpp's
// llama_chat_apply_template also leaves it out; BOS and EOS texts inside the chat stay.
// Detection and names: chat_detect.cpp.
#include <chrono>
#include <ctime>
#include <string>

#include "lazyllm/tokenizer.h"
#include "tokenizer/unicode.h"

namespace lazyllm {
namespace {

// Python's str.isspace, which Jinja's trim filter and str.strip() use: Unicode White_Space
// plus U+001C..U+001F.
bool is_python_space(uint32_t cp) {
    return tokenizer::is_white_space(cp) || (cp >= 0x1C && cp <= 0x1F);
}

// Python's str.strip() (Jinja's `| trim`) on UTF-8 text; invalid bytes are never space.
std::string_view py_strip(std::string_view s) {
    size_t b = 0;
    while (b < s.size()) {
        uint32_t cp = 0;
        const size_t n = tokenizer::decode_utf8(s, b, &cp);
        if (n == 0 || !is_python_space(cp)) break;
        b += n;
    }
    size_t e = s.size();
    while (e > b) {
        size_t start = e - 1;  // back over continuation bytes to the code point's first byte
        while (start > b && e - start < 4 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) {
            --start;
        }
        uint32_t cp = 0;
        const size_t n = tokenizer::decode_utf8(s, start, &cp);
        if (n != e - start || !is_python_space(cp)) break;
        e = start;
    }
    return s.substr(b, e - b);
}

// Python's str.lstrip('\n') / rstrip('\n') / strip('\n').
std::string_view lstrip_nl(std::string_view s) {
    const size_t b = s.find_first_not_of('\n');
    return b == std::string_view::npos ? std::string_view() : s.substr(b);
}
std::string_view rstrip_nl(std::string_view s) {
    const size_t e = s.find_last_not_of('\n');
    return e == std::string_view::npos ? std::string_view() : s.substr(0, e + 1);
}
std::string_view strip_nl(std::string_view s) { return rstrip_nl(lstrip_nl(s)); }

bool first_is_system(const std::vector<ChatMessage>& msgs) {
    return !msgs.empty() && msgs[0].role == "system";
}

void append_chatml_turn(std::string& out, std::string_view role, std::string_view content) {
    out += "<|im_start|>";
    out += role;
    out += '\n';
    out += content;
    out += "<|im_end|>\n";
}

// SmolLM2-Instruct (and Qwen2, Qwen2.5 with their own default system message):
//   {% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}
//   {{ '<|im_start|>system\nDEFAULT<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role']
//   + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}
//   {% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}
std::string render_chatml(const ChatTemplate& t, const std::vector<ChatMessage>& msgs, bool gen) {
    std::string out;
    if (!msgs.empty() && !first_is_system(msgs) && !t.default_system.empty()) {
        append_chatml_turn(out, "system", t.default_system);
    }
    for (const ChatMessage& m : msgs) append_chatml_turn(out, m.role, m.content);
    if (gen) out += "<|im_start|>assistant\n";
    return out;
}

// Qwen3 (Qwen/Qwen3-0.6B): ChatML without a default system message. An assistant turn's
// reasoning is cut out of its content:
//   content = message.content.split('</think>')[-1].lstrip('\n')
//   reasoning_content = message.content.split('</think>')[0].rstrip('\n')
//                           .split('<think>')[-1].lstrip('\n')
// and written back only for assistant turns after the last user query, when last or when the
// reasoning is not empty:
//   '<|im_start|>' + role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n'
//   + content.lstrip('\n')
// The generation prompt is '<|im_start|>assistant\n': thinking on, the template's default
// (enable_thinking undefined), so the model opens its answer with <think>.
std::string render_qwen3(const std::vector<ChatMessage>& msgs, bool gen) {
    std::string out;
    if (first_is_system(msgs)) append_chatml_turn(out, "system", msgs[0].content);
    // The last user message that is not a tool response (ns.last_query_index).
    size_t last_query = msgs.empty() ? 0 : msgs.size() - 1;
    for (size_t i = msgs.size(); i-- > 0;) {
        const std::string& c = msgs[i].content;
        const bool tool_response =
            c.starts_with("<tool_response>") && c.ends_with("</tool_response>");
        if (msgs[i].role == "user" && !tool_response) {
            last_query = i;
            break;
        }
    }
    for (size_t i = 0; i < msgs.size(); ++i) {
        const ChatMessage& m = msgs[i];
        if (m.role != "assistant") {
            if (i > 0 || m.role != "system") append_chatml_turn(out, m.role, m.content);
            continue;
        }
        std::string_view content = m.content;
        std::string_view reasoning;
        if (const size_t end = content.rfind("</think>"); end != std::string_view::npos) {
            std::string_view before = rstrip_nl(content.substr(0, content.find("</think>")));
            if (const size_t open = before.rfind("<think>"); open != std::string_view::npos) {
                before = before.substr(open + 7);
            }
            reasoning = lstrip_nl(before);
            content = lstrip_nl(content.substr(end + 8));
        }
        out += "<|im_start|>assistant\n";
        if (i > last_query && (i + 1 == msgs.size() || !reasoning.empty())) {
            out += "<think>\n";
            out += strip_nl(reasoning);
            out += "\n</think>\n\n";
            out += lstrip_nl(content);
        } else {
            out += content;
        }
        out += "<|im_end|>\n";
    }
    if (gen) out += "<|im_start|>assistant\n";
    return out;
}

// Llama-2-chat (meta-llama/Llama-2-7b-chat-hf):
//   system = messages[0] if it is a system message; for each other message:
//   content = '<<SYS>>\n' + system + '\n<</SYS>>\n\n' + content on the first one;
//   user: bos_token + '[INST] ' + content.strip() + ' [/INST]'
//   assistant: ' ' + content.strip() + ' ' + eos_token
// There is no generation prompt: the text already ends with [/INST].
std::string render_llama2(const std::vector<ChatMessage>& msgs) {
    std::string out;
    const size_t first = first_is_system(msgs) ? 1 : 0;
    for (size_t i = first; i < msgs.size(); ++i) {
        std::string content = msgs[i].content;
        if (i == first && first == 1) {
            content = "<<SYS>>\n" + msgs[0].content + "\n<</SYS>>\n\n" + content;
        }
        if (msgs[i].role == "user") {
            if (i != first) out += "<s>";  // the first BOS comes from encode()
            out += "[INST] ";
            out += py_strip(content);
            out += " [/INST]";
        } else if (msgs[i].role == "assistant") {
            out += " ";
            out += py_strip(content);
            out += " </s>";
        }
    }
    return out;
}

void append_llama3_turn(std::string& out, std::string_view role, std::string_view content) {
    out += "<|start_header_id|>";
    out += role;
    out += "<|end_header_id|>\n\n";
    out += py_strip(content);
    out += "<|eot_id|>";
}

// Llama 3 Instruct (meta-llama/Meta-Llama-3-8B-Instruct):
//   '<|start_header_id|>' + role + '<|end_header_id|>\n\n' + content | trim + '<|eot_id|>'
//   (bos_token before the first), then '<|start_header_id|>assistant<|end_header_id|>\n\n'.
std::string render_llama3(const std::vector<ChatMessage>& msgs, bool gen) {
    std::string out;
    for (const ChatMessage& m : msgs) append_llama3_turn(out, m.role, m.content);
    if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
}

// "05 Mar 2025": strftime("%d %b %Y") of the local date, as transformers' strftime_now.
std::string today() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[32];
    const size_t n = std::strftime(buf, sizeof(buf), "%d %b %Y", &tm);
    return std::string(buf, n);
}

// Llama 3.1 / 3.2 / 3.3 Instruct without tools: a system turn always comes first,
//   "<|start_header_id|>system<|end_header_id|>\n\n" + "Cutting Knowledge Date: December 2023\n"
//   + "Today Date: " + date_string + "\n\n" + system_message + "<|eot_id|>"
// with system_message = messages[0]['content']|trim when it is a system message (else ""), then
// the other messages as Llama 3's. date_string: Llama 3.1's template sets "26 Jul 2024";
// Llama 3.2's and 3.3's call strftime_now("%d %b %Y") (today).
std::string render_llama31(const ChatTemplate& t, const std::vector<ChatMessage>& msgs, bool gen) {
    std::string out = "<|start_header_id|>system<|end_header_id|>\n\n";
    out += "Cutting Knowledge Date: December 2023\nToday Date: ";
    out += t.date.empty() ? today() : t.date;
    out += "\n\n";
    const size_t first = first_is_system(msgs) ? 1 : 0;
    if (first == 1) out += py_strip(msgs[0].content);
    out += "<|eot_id|>";
    for (size_t i = first; i < msgs.size(); ++i)
        append_llama3_turn(out, msgs[i].role, msgs[i].content);
    if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
}

// Gemma 3 (google/gemma-3-1b-it): bos_token; a leading system message becomes
// first_user_prefix = content + '\n\n' on the first turn; 'assistant' is called 'model';
//   '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first) + content | trim +
//   '<end_of_turn>\n', then '<start_of_turn>model\n'.
// Gemma 2's template is the same but raises on a system message; we fold it in as Gemma 3 does.
std::string render_gemma(const std::vector<ChatMessage>& msgs, bool gen) {
    std::string out;
    const size_t first = first_is_system(msgs) ? 1 : 0;
    for (size_t i = first; i < msgs.size(); ++i) {
        out += "<start_of_turn>";
        out += msgs[i].role == "assistant" ? "model" : msgs[i].role;
        out += '\n';
        if (i == first && first == 1) out += msgs[0].content + "\n\n";
        out += py_strip(msgs[i].content);
        out += "<end_of_turn>\n";
    }
    if (gen) out += "<start_of_turn>model\n";
    return out;
}

// Mistral's [INST] family, unlike Llama 2, has no <<SYS>> block: the system message is glued to
// one user turn with "\n\n", and there is no BOS inside the chat and no generation prompt.
// v1 (Mistral-7B-Instruct v0.1 / v0.2): system on the first user turn,
//   ' [INST] ' + (system_message + '\n\n' if loop.first) + content + ' [/INST]'
//   assistant: ' ' + content + eos_token
// v3 (v0.3; Mistral-Large-2407): system on the user turn that is the last message,
//   "[INST] " + (system_message + "\n\n" if loop.last) + content + "[/INST]"
//   assistant: " " + content|trim + eos_token
// v3-tekken (Mistral-Nemo-2407): as v3 with "[INST]" and the assistant's content + eos_token.
// (So v3 drops the system message when the chat ends with an assistant turn, as its template.)
std::string render_mistral(ChatFormat f, const std::vector<ChatMessage>& msgs) {
    const bool v1 = f == ChatFormat::kMistralV1;
    const bool tekken = f == ChatFormat::kMistralV3Tekken;
    const std::string_view open = v1 ? " [INST] " : tekken ? "[INST]" : "[INST] ";
    const std::string_view close = v1 ? " [/INST]" : "[/INST]";
    const size_t first = first_is_system(msgs) ? 1 : 0;
    std::string out;
    for (size_t i = first; i < msgs.size(); ++i) {
        const ChatMessage& m = msgs[i];
        if (m.role == "user") {
            const bool with_system = first == 1 && (v1 ? i == first : i + 1 == msgs.size());
            out += open;
            if (with_system) out += msgs[0].content + "\n\n";
            out += m.content;
            out += close;
        } else if (m.role == "assistant") {
            if (!tekken) out += ' ';
            out += v1 || tekken ? std::string_view(m.content) : py_strip(m.content);
            out += "</s>";
        }
    }
    return out;
}

// Phi-3.5-mini-instruct (Phi-3-mini-4k-instruct's is the same but keeps an empty system turn):
//   system (when its content is not empty): '<|system|>\n' + content + '<|end|>\n'
//   user: '<|user|>\n' + content + '<|end|>\n'; assistant: '<|assistant|>\n' + content +
//   '<|end|>\n'; then '<|assistant|>\n' with add_generation_prompt, else eos_token.
std::string render_phi3(const std::vector<ChatMessage>& msgs, bool gen) {
    std::string out;
    for (const ChatMessage& m : msgs) {
        if (m.role == "system" && m.content.empty()) continue;
        if (m.role != "system" && m.role != "user" && m.role != "assistant") continue;
        out += "<|" + m.role + "|>\n";
        out += m.content;
        out += "<|end|>\n";
    }
    out += gen ? "<|assistant|>\n" : "<|endoftext|>";
    return out;
}

// The first template of Mistral-7B-Instruct v0.1 / v0.2, still Mixtral-8x7B-Instruct-v0.1's:
//   user: '[INST] ' + content + ' [/INST]'; assistant: content + eos_token
// with no spaces around the answer and no generation prompt. The template raises on a system
// message; as llama.cpp's llama2 format (llama_chat_apply_template, the same rendering) a leading
// one opens the first user turn followed by "\n".
std::string render_mistral_v0(const std::vector<ChatMessage>& msgs) {
    std::string out;
    const size_t first = first_is_system(msgs) ? 1 : 0;
    for (size_t i = first; i < msgs.size(); ++i) {
        const ChatMessage& m = msgs[i];
        if (m.role == "user") {
            out += "[INST] ";
            if (first == 1 && i == first) out += msgs[0].content + "\n";
            out += m.content;
            out += " [/INST]";
        } else if (m.role == "assistant") {
            out += m.content;
            out += "</s>";
        }
    }
    return out;
}

// Phi-3-medium (microsoft/Phi-3-medium-4k-instruct; Phi-3-mini's first template adds only the
// bos_token): system messages are dropped and the assistant turn opens after each user turn,
// whatever add_generation_prompt says:
//   user: '<|user|>' + '\n' + content + '<|end|>' + '\n' + '<|assistant|>' + '\n'
//   assistant: content + '<|end|>' + '\n'
std::string render_phi3_medium(const std::vector<ChatMessage>& msgs) {
    std::string out;
    for (const ChatMessage& m : msgs) {
        if (m.role == "user") {
            out += "<|user|>\n" + m.content + "<|end|>\n<|assistant|>\n";
        } else if (m.role == "assistant") {
            out += m.content + "<|end|>\n";
        }
    }
    return out;
}

// DeepSeek-R1 (deepseek-ai/DeepSeek-R1-Distill-Llama-8B; the Qwen distills' differ only in
// tool calls): the last system message's content first, bare, then
//   user: '<｜User｜>' + content
//   assistant: '<｜Assistant｜>' + content.split('</think>')[-1] + '<｜end▁of▁sentence｜>'
// and the generation prompt '<｜Assistant｜>' + the template's prefix (t.assistant_prefix).
std::string render_deepseek_r1(const ChatTemplate& t, const std::vector<ChatMessage>& msgs,
                               bool gen) {
    std::string out;
    for (const ChatMessage& m : msgs) {
        if (m.role == "system") out = m.content;
    }
    for (const ChatMessage& m : msgs) {
        if (m.role == "user") {
            out += "<｜User｜>" + m.content;
        } else if (m.role == "assistant") {
            const size_t end = m.content.rfind("</think>");
            out += "<｜Assistant｜>";
            out += end == std::string::npos ? m.content : m.content.substr(end + 8);
            out += "<｜end▁of▁sentence｜>";
        }
    }
    if (gen) out += "<｜Assistant｜>" + t.assistant_prefix;
    return out;
}

}  // namespace

std::string apply_chat_template(const ChatTemplate& t, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt) {
    const bool gen = add_generation_prompt;
    switch (t.format) {
        case ChatFormat::kChatMl:
            return render_chatml(t, messages, gen);
        case ChatFormat::kQwen3:
            return render_qwen3(messages, gen);
        case ChatFormat::kLlama2:
            return render_llama2(messages);
        case ChatFormat::kLlama3:
            return render_llama3(messages, gen);
        case ChatFormat::kLlama31:
            return render_llama31(t, messages, gen);
        case ChatFormat::kGemma:
            return render_gemma(messages, gen);
        case ChatFormat::kMistralV0:
            return render_mistral_v0(messages);
        case ChatFormat::kMistralV1:
        case ChatFormat::kMistralV3:
        case ChatFormat::kMistralV3Tekken:
            return render_mistral(t.format, messages);
        case ChatFormat::kPhi3:
            return render_phi3(messages, gen);
        case ChatFormat::kPhi3Medium:
            return render_phi3_medium(messages);
        case ChatFormat::kDeepSeekR1:
            return render_deepseek_r1(t, messages, gen);
    }
    return std::string();
}

}  // namespace lazyllm
