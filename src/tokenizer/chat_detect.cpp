// Which chat format a model uses: from markers in its tokenizer.chat_template (the approach of
// llama.cpp's llm_chat_detect_template, src/llama-chat.cpp, with our own rules), else a
// fallback from the vocabulary and architecture that is reported, never silent. Also the
// --chat-template names. Rendering: chat_template.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lazyllm/tokenizer.h"
#include "tokenizer/unicode.h"

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

// A piece of a Jinja template in text order: text between blocks (printed as it is), or a
// string literal inside a {{ }} or {% %} block.
struct JinjaPiece {
    bool literal = false;
    std::string text;         // a literal's value, escapes undone; or the data text
    std::string_view before;  // literal: its block's text before it
    std::string_view after;   // literal: the template after its closing quote
    size_t pos = 0;           // where it starts in the template
};

int digit_value(char c, int base) {
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : 99;
    return d < base ? d : -1;
}

// Jinja's lexer decodes a string literal with Python's "unicode-escape" codec: \n \t \r \\ \'
// \" \a \b \f \v, \xhh, \uhhhh, \Uhhhhhhhh and octal \o to \ooo; a backslash before a newline
// drops both; a backslash before anything else stays, with that character. (A malformed \x or
// \u, which makes Jinja fail, keeps its text.)
std::string decode_jinja_literal(std::string_view s) {
    constexpr std::string_view kSimple = "n\nt\tr\r\\\\''\"\"a\ab\bf\fv\v";  // pairs
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\' || i + 1 == s.size()) {
            out += s[i];
            continue;
        }
        const char c = s[++i];
        const size_t k = kSimple.find(c);
        const bool octal = c >= '0' && c <= '7';
        if (k != std::string_view::npos && k % 2 == 0) {
            out += kSimple[k + 1];
        } else if (octal || c == 'x' || c == 'u' || c == 'U') {
            const size_t max_digits = octal ? 3 : c == 'x' ? 2 : c == 'u' ? 4 : 8;
            const int base = octal ? 8 : 16;
            size_t j = octal ? i : i + 1, n = 0;
            uint32_t cp = 0;
            for (int d = 0; n < max_digits && j < s.size() && (d = digit_value(s[j], base)) >= 0;
                 ++n, ++j) {
                cp = cp * static_cast<uint32_t>(base) + static_cast<uint32_t>(d);
            }
            if (!octal && n < max_digits) {
                out += '\\';
                out += c;
                continue;
            }
            tokenizer::append_utf8(out, cp);
            i = j - 1;
        } else if (c != '\n') {
            out += '\\';
            out += c;
        }
    }
    return out;
}

// Splits a template into its data text and the string literals of its blocks ({# #} comments
// skipped), enough to read the literals these detectors look for.
std::vector<JinjaPiece> scan_jinja(std::string_view t) {
    std::vector<JinjaPiece> out;
    size_t i = 0;
    while (i < t.size()) {
        size_t open = t.find('{', i);
        while (open != std::string_view::npos && open + 1 < t.size() &&
               std::string_view("{%#").find(t[open + 1]) == std::string_view::npos) {
            open = t.find('{', open + 1);
        }
        if (open + 1 >= t.size()) open = std::string_view::npos;
        const size_t data_end = open == std::string_view::npos ? t.size() : open;
        if (data_end > i) out.push_back({false, std::string(t.substr(i, data_end - i)), {}, {}, i});
        if (open == std::string_view::npos) break;
        if (t[open + 1] == '#') {
            const size_t close = t.find("#}", open + 2);
            i = close == std::string_view::npos ? t.size() : close + 2;
            continue;
        }
        const char close = t[open + 1] == '{' ? '}' : '%';
        const size_t body = open + 2;
        size_t j = body;
        while (j < t.size() && !(t[j] == close && j + 1 < t.size() && t[j + 1] == '}')) {
            if (t[j] != '\'' && t[j] != '"') {
                ++j;
                continue;
            }
            size_t k = j + 1;  // the closing quote: the first unescaped one
            while (k < t.size() && t[k] != t[j]) k += t[k] == '\\' ? 2 : 1;
            k = std::min(k, t.size());
            out.push_back({true, decode_jinja_literal(t.substr(j + 1, k - j - 1)),
                           t.substr(body, j - body), t.substr(std::min(k + 1, t.size())), j});
            j = k + 1;
        }
        i = std::min(j + 2, t.size());
    }
    return out;
}

std::string_view trim_ascii(std::string_view s) {
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// NAME -> LITERAL for each `{% set NAME = 'LITERAL' %}` (the first for a name).
std::map<std::string, std::string, std::less<>> set_literals(
    const std::vector<JinjaPiece>& pieces) {
    std::map<std::string, std::string, std::less<>> out;
    for (const JinjaPiece& p : pieces) {
        if (!p.literal) continue;
        std::string_view b = trim_ascii(p.before);
        if (b.starts_with('-') || b.starts_with('+')) b = trim_ascii(b.substr(1));
        if (!b.starts_with("set ") || !b.ends_with('=')) continue;
        std::string_view a = trim_ascii(p.after);
        if (a.starts_with('-')) a = a.substr(1);
        if (!a.starts_with("%}")) continue;
        out.emplace(trim_ascii(b.substr(4, b.size() - 5)), p.text);
    }
    return out;
}

// The default system message of a ChatML template: TEXT in '<|im_start|>system\nTEXT<|im_end|>',
// written as one string literal (SmolLM2's, Qwen2's, Qwen2.5's and Qwen2.5-Math's add the turn
// this way when messages[0] is not a system message) or as text outside blocks (Qwen2-VL's);
// or, for LLaMA-Factory's Qwen template, '<|im_start|>system\n' + NAME with
// `{% set NAME = 'TEXT' %}`. The first in the template wins.
std::string chatml_default_system(std::string_view raw) {
    constexpr std::string_view kOpen = "<|im_start|>system\n";
    const std::vector<JinjaPiece> pieces = scan_jinja(raw);
    const auto sets = set_literals(pieces);
    for (const JinjaPiece& p : pieces) {
        const size_t at = p.text.find(kOpen);
        if (at == std::string::npos) continue;
        const size_t begin = at + kOpen.size();
        const size_t end = p.text.find("<|im_end|>", begin);
        if (end != std::string::npos) return p.text.substr(begin, end - begin);
        if (!p.literal || begin != p.text.size()) continue;
        std::string_view a = trim_ascii(p.after);
        if (!a.starts_with('+')) continue;
        a = trim_ascii(a.substr(1));
        const size_t n =
            a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        if (const auto it = sets.find(a.substr(0, n)); it != sets.end()) return it->second;
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

// ChatML templates. Unrecognised: Phi-4's (<|im_sep|>), SmolVLM's (<end_of_utterance>),
// templates that never write a system turn in ChatML (Yi-1.5's prints the system message bare)
// and templates with reasoning turns other than Qwen3's: QwQ, Qwen3-Thinking-2507 and Qwen3.5
// open <think> in their generation prompt; SmolLM3 has its own /think flags. `t` has its "\n"
// escapes made newlines, `raw` is the template as written.
std::optional<ChatTemplate> detect_chatml(std::string_view t, std::string_view raw) {
    if (contains(t, "<|im_sep|>") || contains(t, "<end_of_utterance>")) return std::nullopt;
    const bool system_turn = contains(t, "<|im_start|>system") || contains(t, "<|im_start|>' +") ||
                             contains(t, "<|im_start|>\" +") || contains(t, "<|im_start|>{{");
    if (!system_turn) return std::nullopt;
    if (!contains(t, "<think>") && !contains(t, "</think>")) {
        return ChatTemplate{ChatFormat::kChatMl, chatml_default_system(raw), {}};
    }
    const bool qwen3 = contains(t, "last_query_index") && contains(t, "enable_thinking");
    if (qwen3 && !contains(t, "'<think>\n'") && !contains(t, "assistant\n<think>\n'")) {
        return ChatTemplate{ChatFormat::kQwen3, {}, {}};
    }
    return std::nullopt;
}

// DeepSeek-R1's template (deepseek-ai/DeepSeek-R1 and the R1-Distill-Qwen / -Llama models):
// user turns written as '<｜User｜>' + message['content'] alone, assistant turns cut after their
// last </think>. The generation prompt's text after <｜Assistant｜> is read from the template:
// '<think>\n' (the current one), nothing (the first), or '<think>\n' then '</think>' when
// enable_thinking is not set (llama.cpp's copy of R1-Distill-Qwen-32B's). Unrecognised: the
// DeepSeek-V3.1 and later templates (thinking flags, no </think> split) and llama.cpp's own
// deepseek-r1 template (an end-of-sentence after each user turn).
std::optional<ChatTemplate> detect_deepseek_r1(std::string_view t, std::string_view raw) {
    if (!contains(t, "{{'<｜User｜>' + message['content']}}") ||
        !contains(t, "content.split('</think>')[-1]") || !contains(t, "ns.system_prompt")) {
        return std::nullopt;
    }
    const size_t gen = raw.rfind("add_generation_prompt");
    const JinjaPiece* prompt = nullptr;
    const std::vector<JinjaPiece> pieces = scan_jinja(raw);
    for (const JinjaPiece& p : pieces) {
        if (p.literal && p.pos > gen && p.text.starts_with("<｜Assistant｜>")) {
            prompt = &p;
            break;
        }
    }
    if (gen == std::string_view::npos || prompt == nullptr) return std::nullopt;
    ChatTemplate tmpl{ChatFormat::kDeepSeekR1};
    tmpl.assistant_prefix = prompt->text.substr(std::string_view("<｜Assistant｜>").size());
    const size_t flag = raw.find("if not enable_thinking", prompt->pos);
    if (flag != std::string_view::npos) {
        for (const JinjaPiece& p : pieces) {
            if (p.literal && p.pos > flag && p.text == "</think>") {
                tmpl.assistant_prefix += p.text;
                break;
            }
        }
    }
    return tmpl;
}

// The [INST] family. Mistral's official templates (mistralai/cookbook, chat_templates.md):
// v1 writes ' [INST] ' + system_message; v3 and v3-tekken have [AVAILABLE_TOOLS], tekken
// without the space after [INST]. Llama 2's has <<SYS>>. The first template of Mistral-7B v0.1 /
// v0.2 and Mixtral-8x7B v0.1 (no system message) writes '[INST] ' + message['content'] +
// ' [/INST]' and the answer + eos_token. Unrecognised: Mistral v7 ([SYSTEM_PROMPT]) and the other
// [INST] variants.
std::optional<ChatTemplate> detect_inst(std::string_view t) {
    if (contains(t, "[SYSTEM_PROMPT]")) return std::nullopt;
    if (contains(t, "' [INST] ' + system_message")) return ChatTemplate{ChatFormat::kMistralV1};
    if (contains(t, "[AVAILABLE_TOOLS]")) {
        if (contains(t, "\"[INST]\"")) return ChatTemplate{ChatFormat::kMistralV3Tekken};
        if (contains(t, "\"[INST] \"")) return ChatTemplate{ChatFormat::kMistralV3};
        return std::nullopt;
    }
    if (contains(t, "<<SYS>>")) return ChatTemplate{ChatFormat::kLlama2};
    if (contains(t, "'[INST] ' + message['content'] + ' [/INST]'") &&
        contains(t, "message['content'] + eos_token")) {
        return ChatTemplate{ChatFormat::kMistralV0};
    }
    return std::nullopt;
}

struct NamedTemplate {
    std::string_view name;
    ChatFormat format;
    std::string_view default_system;
    std::string_view assistant_prefix = {};
};

// Qwen2.5-Instruct's default system message (Qwen/Qwen2.5-7B-Instruct chat_template).
constexpr std::string_view kQwen25System =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

// The --chat-template names: llama.cpp's where it has the format (llama_chat_apply_template's
// list), ours for the rest.
constexpr std::array<NamedTemplate, 14> kNamed = {{
    {"chatml", ChatFormat::kChatMl, ""},
    {"deepseek-r1", ChatFormat::kDeepSeekR1, "", "<think>\n"},
    {"gemma", ChatFormat::kGemma, ""},
    {"llama2", ChatFormat::kLlama2, ""},
    {"llama3", ChatFormat::kLlama3, ""},
    {"llama3.1", ChatFormat::kLlama31, ""},
    {"mistral-v0", ChatFormat::kMistralV0, ""},
    {"mistral-v1", ChatFormat::kMistralV1, ""},
    {"mistral-v3", ChatFormat::kMistralV3, ""},
    {"mistral-v3-tekken", ChatFormat::kMistralV3Tekken, ""},
    {"phi3", ChatFormat::kPhi3, ""},
    {"phi3-medium", ChatFormat::kPhi3Medium, ""},
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
    if (contains(t, "<|im_start|>")) return detect_chatml(t, jinja);
    if (contains(t, "[INST]")) return detect_inst(t);
    if (contains(t, "<|user|>") && contains(t, "<|assistant|>") && contains(t, "<|end|>")) {
        // Phi-3-medium's template (and Phi-3-mini's first) writes only user and assistant turns
        // and has no generation prompt.
        const bool medium = !contains(t, "<|system|>") && !contains(t, "+ '|>'") &&
                            !contains(t, "add_generation_prompt");
        return ChatTemplate{medium ? ChatFormat::kPhi3Medium : ChatFormat::kPhi3};
    }
    if (contains(t, "<｜User｜>") && contains(t, "<｜Assistant｜>"))
        return detect_deepseek_r1(t, jinja);
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
        if (n.name == name) {
            return ChatTemplate{
                n.format, std::string(n.default_system), {}, std::string(n.assistant_prefix)};
        }
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
        if (n.format == t.format && n.default_system == t.default_system && t.date.empty() &&
            n.assistant_prefix == t.assistant_prefix) {
            return std::string(n.name);
        }
    }
    std::string out(chat_format_name(t.format));
    if (!t.default_system.empty()) {
        out += fmt::format(", default system message \"{}\"", t.default_system);
    }
    if (!t.date.empty()) out += fmt::format(", date {}", t.date);
    if (t.format == ChatFormat::kDeepSeekR1) {
        std::string prefix;
        for (char c : t.assistant_prefix)
            prefix += c == '\n' ? std::string("\\n") : std::string(1, c);
        out += fmt::format(", generation prompt ends \"<｜Assistant｜>{}\"", prefix);
    }
    return out;
}

}  // namespace lazyllm
