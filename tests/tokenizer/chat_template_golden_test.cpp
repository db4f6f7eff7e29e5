// Chat formats against the real templates: for each tests/golden/chat_templates/*.jinja (a
// model's own tokenizer.chat_template), the detected format must be the one the golden file
// names, and rendering its conversations must give, byte for byte, what Jinja rendered from the
// template (scripts/golden_chat_templates.py; docs/golden.md).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lazyllm/tokenizer.h"
#include "support/files.h"

namespace lazyllm {
namespace {

constexpr const char* kDir = LAZYLLM_TEST_GOLDEN_DIR "/chat_templates";

std::string read_file(const std::string& path) {
    std::string bytes;
    EXPECT_TRUE(testing::read_file_bytes(path, bytes)) << path;
    return bytes;
}

nlohmann::json golden() {
    return nlohmann::json::parse(read_file(LAZYLLM_TEST_GOLDEN_DIR "/chat_templates.json"));
}

struct Conversation {
    std::vector<ChatMessage> messages;
    bool add_generation_prompt = true;
};

std::map<std::string, Conversation> conversations(const nlohmann::json& g) {
    std::map<std::string, Conversation> out;
    for (const auto& c : g.at("conversations")) {
        Conversation conv;
        conv.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
        for (const auto& m : c.at("messages")) {
            conv.messages.push_back(
                {m.at("role").get<std::string>(), m.at("content").get<std::string>()});
        }
        out[c.at("case").get<std::string>()] = conv;
    }
    return out;
}

TEST(ChatTemplateGolden, EveryFamilyIsCovered) {
    const auto g = golden();
    std::map<std::string, int> texts_per_format;
    for (const auto& t : g.at("templates")) {
        texts_per_format[t.at("format").get<std::string>()] +=
            static_cast<int>(t.at("texts").size());
    }
    for (const char* f :
         {"chatml", "qwen2.5", "qwen3", "llama2", "llama3", "llama3.1", "gemma", "mistral-v0",
          "mistral-v1", "mistral-v3", "mistral-v3-tekken", "phi3", "phi3-medium", "deepseek-r1"}) {
        EXPECT_GE(texts_per_format[f], 5) << f;
    }
}

TEST(ChatTemplateGolden, DetectedFormatRendersAsJinja) {
    const auto g = golden();
    const auto convs = conversations(g);
    int checked = 0;
    for (const auto& t : g.at("templates")) {
        const std::string file = t.at("file").get<std::string>();
        SCOPED_TRACE(file);
        const std::string text = read_file(std::string(kDir) + "/" + file);
        std::optional<ChatTemplate> tmpl = chat_template_from_text(text);
        ASSERT_TRUE(tmpl.has_value());
        // The name, without the default system message or date describe adds (the texts
        // check those).
        const std::string described = describe_chat_template(*tmpl);
        EXPECT_EQ(described.substr(0, described.find(',')), t.at("format").get<std::string>())
            << described;
        // Templates that print today's date were rendered with a fixed one.
        if (tmpl->format == ChatFormat::kLlama31 && tmpl->date.empty()) {
            tmpl->date = g.at("date").get<std::string>();
        }
        for (const auto& [name, want] : t.at("texts").items()) {
            const Conversation& c = convs.at(name);
            EXPECT_EQ(apply_chat_template(*tmpl, c.messages, c.add_generation_prompt),
                      want.get<std::string>())
                << "case " << name;
            ++checked;
        }
    }
    EXPECT_GE(checked, 120);
}

}  // namespace
}  // namespace lazyllm
