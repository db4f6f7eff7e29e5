// Which chat format a model uses: from markers in its tokenizer.chat_template (the approach of
// llama.cpp's llm_chat_detect_template, src/llama-chat.cpp, with our own rules), else a
// fallback from the vocabulary and architecture that is reported, never silent. Also the
// --chat-template names. Rendering: chat_template.cpp.
#include <fmt/format.h>

#include <array>
#include <string>

#include "lazyllm/tokenizer.h"

namespace lazyllm {
namespace {

bool contains(std::string_view hay, std::string_view needle) {
    return hay.find(needle) != std::string_view::npos;
}

// Template texts write newlines inside Jinja string literals either as "\n" escapes or as the
// character itself (a JSON-decoded tokenizer_config.json gives either); markers are matched
// against the text with every "\n" escape made a newline.
std::string unescape_newlines(std::string_view t) {
    std::string out;
    out.reserve(t.size());
    for (size_t i = 0; i < t.size(); ++i) {
        if (t[i] == '\\' && i + 1 < t.size() && t[i + 1] == 'n') {
            out += '\n';
            ++i;
        } else {
            out += t[i];
        }
    }
    return out;
}

// The default system message of a ChatML template: the text of a string literal
// '<|im_start|>system\nTEXT<|im_end|>' (SmolLM2's, Qwen2's and Qwen2.5's write the turn they
// add when messages[0] is not a system message this way). Literals that concatenate the
// message's own content (the quote closes before <|im_end|>) are not it. Escapes are undone as
// Jinja's lexer does for the ones these templates use (\n, \', \", \\).
std::string chatml_default_system(std::string_view t) {
    constexpr std::string_view kOpen = "<|im_start|>system\n";
    // Linear in the template: the end found for one opening serves the next ones before it, and
    // a scan that stopped at a quote or brace would stop there again for an opening before it.
    size_t end = 0, stop = 0;
    for (size_t at = t.find(kOpen); at != std::string_view::npos;
         at = t.find(kOpen, std::max(at + 1, stop))) {
        const size_t begin = at + kOpen.size();
        if (end < begin) end = t.find("<|im_end|>", begin);
        if (end == std::string_view::npos) break;
        const std::string_view text = t.substr(begin, end - begin);
        std::string out;
        bool literal = !text.empty();
        for (size_t i = 0; i < text.size() && literal; ++i) {
            if (text[i] == '\\' && i + 1 < text.size()) {
                out += text[++i];
            } else if (text[i] == '\'' || text[i] == '"' || text[i] == '{' || text[i] == '}') {
                literal = false;  // the literal ends (or an expression starts) before <|im_end|>
                stop = begin + i;
            } else {
                out += text[i];
            }
        }
        if (literal) return out;
    }
    return {};
}

// Llama 3.1's template sets date_string = "26 Jul 2024"; Llama 3.2's and 3.3's take
// strftime_now("%d %b %Y") (today), which an empty date means.
std::string llama31_date(std::string_view t) {
    if (contains(t, "strftime_now")) return {};
    constexpr std::string_view kSet = "set date_string = \"";
    const size_t at = t.find(kSet);
    if (at == std::string_view::npos) return {};
    const size_t begin = at + kSet.size();
    const size_t end = t.find('"', begin);
    return end == std::string_view::npos ? std::string()
                                         : std::string(t.substr(begin, end - begin));
}

// ChatML templates. Unrecognised: Phi-4's (<|im_sep|>), SmolVLM's (<end_of_utterance>) and
// templates with reasoning turns other than Qwen3's: QwQ, Qwen3-Thinking-2507 and Qwen3.5 open
// <think> in their generation prompt; SmolLM3 has its own /think flags.
std::optional<ChatTemplate> detect_chatml(std::string_view t) {
    if (contains(t, "<|im_sep|>") || contains(t, "<end_of_utterance>")) return std::nullopt;
    if (!contains(t, "<think>") && !contains(t, "</think>")) {
        return ChatTemplate{ChatFormat::kChatMl, chatml_default_system(t), {}};
    }
    const bool qwen3 = contains(t, "last_query_index") && contains(t, "enable_thinking");
    if (qwen3 && !contains(t, "'<think>\n'") && !contains(t, "assistant\n<think>\n'")) {
        return ChatTemplate{ChatFormat::kQwen3, {}, {}};
    }
    return std::nullopt;
}

// The [INST] family. Mistral's official templates (mistralai/cookbook, chat_templates.md):
// v1 writes ' [INST] ' + system_message; v3 and v3-tekken have [AVAILABLE_TOOLS], tekken
// without the space after [INST]. Llama 2's has <<SYS>>. Unrecognised: Mistral v7
// ([SYSTEM_PROMPT]) and the other [INST] variants.
std::optional<ChatTemplate> detect_inst(std::string_view t) {
    if (contains(t, "[SYSTEM_PROMPT]")) return std::nullopt;
    if (contains(t, "' [INST] ' + system_message")) return ChatTemplate{ChatFormat::kMistralV1};
    if (contains(t, "[AVAILABLE_TOOLS]")) {
        if (contains(t, "\"[INST]\"")) return ChatTemplate{ChatFormat::kMistralV3Tekken};
        if (contains(t, "\"[INST] \"")) return ChatTemplate{ChatFormat::kMistralV3};
        return std::nullopt;
    }
    if (contains(t, "<<SYS>>")) return ChatTemplate{ChatFormat::kLlama2};
    return std::nullopt;
}

struct NamedTemplate {
    std::string_view name;
    ChatFormat format;
    std::string_view default_system;
};

// Qwen2.5-Instruct's default system message (Qwen/Qwen2.5-7B-Instruct chat_template).
constexpr std::string_view kQwen25System =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

// The --chat-template names: llama.cpp's where it has the format (llama_chat_apply_template's
// list), ours for the rest.
constexpr std::array<NamedTemplate, 11> kNamed = {{
    {"chatml", ChatFormat::kChatMl, ""},
    {"gemma", ChatFormat::kGemma, ""},
    {"llama2", ChatFormat::kLlama2, ""},
    {"llama3", ChatFormat::kLlama3, ""},
    {"llama3.1", ChatFormat::kLlama31, ""},
    {"mistral-v1", ChatFormat::kMistralV1, ""},
    {"mistral-v3", ChatFormat::kMistralV3, ""},
    {"mistral-v3-tekken", ChatFormat::kMistralV3Tekken, ""},
    {"phi3", ChatFormat::kPhi3, ""},
    {"qwen2.5", ChatFormat::kChatMl, kQwen25System},
    {"qwen3", ChatFormat::kQwen3, ""},
}};

// Other spellings: the family name picks its latest format.
constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kAliases = {{
    {"mistral", "mistral-v3"},
    {"qwen", "qwen2.5"},
}};

// The fallback when the template is absent or not recognised: Gemma's format for a gemma*
// architecture, then the vocabulary's turn markers (a fine-tune keeps its base's tokens), then
// llama2 for a llama architecture, else chatml.
ChatTemplateChoice fallback(const Tokenizer& tok, std::string_view arch, std::string why) {
    ChatTemplateChoice c;
    auto pick = [&](ChatFormat f, std::string_view because) {
        c.tmpl = ChatTemplate{f};
        c.reason = fmt::format("{}; using {} ({})", why, chat_format_name(f), because);
        return c;
    };
    if (arch.starts_with("gemma")) {
        return pick(ChatFormat::kGemma, fmt::format("architecture {}", arch));
    }
    for (const auto& [marker, f] : {std::pair{"<start_of_turn>", ChatFormat::kGemma},
                                    std::pair{"<|start_header_id|>", ChatFormat::kLlama3},
                                    std::pair{"<|im_start|>", ChatFormat::kChatMl},
                                    std::pair{"[INST]", ChatFormat::kMistralV3},
                                    std::pair{"<|assistant|>", ChatFormat::kPhi3}}) {
        if (tok.find_token(marker)) {
            return pick(f, fmt::format("the vocabulary has {}", marker));
        }
    }
    if (arch == "llama") return pick(ChatFormat::kLlama2, "architecture llama");
    return pick(ChatFormat::kChatMl, "the default");
}

}  // namespace

std::optional<ChatTemplate> chat_template_from_text(std::string_view jinja) {
    const std::string t = unescape_newlines(jinja);
    if (contains(t, "<|im_start|>")) return detect_chatml(t);
    if (contains(t, "[INST]")) return detect_inst(t);
    if (contains(t, "<|user|>") && contains(t, "<|assistant|>") && contains(t, "<|end|>")) {
        return ChatTemplate{ChatFormat::kPhi3};
    }
    if (contains(t, "<start_of_turn>")) return ChatTemplate{ChatFormat::kGemma};
    if (contains(t, "<|start_header_id|>") && contains(t, "<|end_header_id|>")) {
        if (contains(t, "Cutting Knowledge Date")) {
            return ChatTemplate{ChatFormat::kLlama31, {}, llama31_date(t)};
        }
        return ChatTemplate{ChatFormat::kLlama3};
    }
    return std::nullopt;
}

ChatTemplateChoice detect_chat_template(const Tokenizer& tok, std::string_view architecture) {
    const std::string& t = tok.chat_template();
    if (t.empty()) return fallback(tok, architecture, "the GGUF has no tokenizer.chat_template");
    if (auto tmpl = chat_template_from_text(t)) return {std::move(*tmpl), true, {}};
    return fallback(tok, architecture, "the GGUF's tokenizer.chat_template is not one we know");
}

std::string chat_template_warning(const ChatTemplateChoice& choice) {
    if (choice.recognised) return {};
    return fmt::format("chat template: {}; --chat-template NAME sets one ({})", choice.reason,
                       chat_template_names());
}

Result<ChatTemplate> chat_template_from_name(std::string_view name) {
    for (const auto& [alias, target] : kAliases) {
        if (name == alias) name = target;
    }
    for (const NamedTemplate& n : kNamed) {
        if (n.name == name) return ChatTemplate{n.format, std::string(n.default_system), {}};
    }
    return make_error(ErrorCode::kInvalidArgument, "unknown chat template '{}'; known: {}", name,
                      chat_template_names());
}

std::string chat_template_names() {
    std::string out;
    for (const NamedTemplate& n : kNamed) {
        if (!out.empty()) out += ", ";
        out += n.name;
    }
    for (const auto& [alias, target] : kAliases) {
        out += fmt::format(", {} (= {})", alias, target);
    }
    return out;
}

std::string_view chat_format_name(ChatFormat f) {
    for (const NamedTemplate& n : kNamed) {
        if (n.format == f && n.default_system.empty()) return n.name;
    }
    return "?";
}

std::string describe_chat_template(const ChatTemplate& t) {
    for (const NamedTemplate& n : kNamed) {
        if (n.format == t.format && n.default_system == t.default_system && t.date.empty()) {
            return std::string(n.name);
        }
    }
    std::string out(chat_format_name(t.format));
    if (!t.default_system.empty()) {
        out += fmt::format(", default system message \"{}\"", t.default_system);
    }
    if (!t.date.empty()) out += fmt::format(", date {}", t.date);
    return out;
}

}  // namespace lazyllm
