// The default model's tokenizer (SmolLM2-135M-Instruct, byte-level BPE, pre "smollm") against
// golden ids dumped by scripts/golden_tokenizer.py from HF tokenizers on the same GGUF; and, when
// it has been fetched (scripts/fetch_model.py gemma3-270m), Gemma 3 270M's SentencePiece
// vocabulary against the sentencepiece library.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lazyllm/gguf.h"
#include "lazyllm/tokenizer.h"
#include "support/model_path.h"
#include "tokenizer/tokenizer_test_util.h"
#include "tokenizer/unicode.h"

namespace lazyllm {
namespace {

struct Loaded {
    GgufFile gguf;
    Tokenizer tok;
    double load_ms;
};

const Loaded* load(const std::string& path) {
    auto gguf = GgufFile::open(path);
    if (!gguf.ok()) {
        ADD_FAILURE() << gguf.error().message();
        return nullptr;
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto tok = Tokenizer::from_gguf(*gguf);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!tok.ok()) {
        ADD_FAILURE() << tok.error().message();
        return nullptr;
    }
    return new Loaded{std::move(gguf).value(), std::move(tok).value(), ms};
}

// Loaded once per suite: the vocabulary has 49k tokens and 49k merges.
const Loaded* model() {
    static const Loaded* loaded = []() -> const Loaded* {
        auto path = testing::default_model_path();
        return path ? load(*path) : nullptr;
    }();
    return loaded;
}

// Gemma 3 270M next to the default model in the model cache, if fetched.
std::string gemma_path() {
    auto candidate = testing::default_model_candidate();
    if (!candidate) return {};
    return (std::filesystem::path(*candidate).parent_path() / "gemma-3-270m-q4_k_m.gguf").string();
}

const Loaded* gemma() {
    static const Loaded* loaded = []() -> const Loaded* {
        const std::string path = gemma_path();
        return !path.empty() && std::filesystem::exists(path) ? load(path) : nullptr;
    }();
    return loaded;
}
// A missing default model fails (scripts/test.sh fetches it) unless LAZYLLM_SKIP_MODEL_TESTS=1.
#define MODEL_TOK_OR_SKIP(var)                                                       \
    if (model() == nullptr) {                                                        \
        if (testing::skip_model_tests()) GTEST_SKIP() << testing::missing_model_message(); \
        FAIL() << testing::missing_model_message();                                  \
    }                                                                                \
    const Tokenizer& var = model()->tok

using testing::ids_string;

struct GoldenCase {
    std::string text;
    bool parse_special;
    bool roundtrip;
    std::vector<TokenId> ids;
};

std::vector<GoldenCase> read_golden(const std::string& path) {
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << "cannot open " << path;
    std::vector<GoldenCase> cases;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        auto j = nlohmann::json::parse(line);
        cases.push_back({j.at("text").get<std::string>(), j.at("parse_special").get<bool>(),
                         j.at("roundtrip").get<bool>(), j.at("ids").get<std::vector<TokenId>>()});
    }
    return cases;
}

TEST(ModelTokenizer, Metadata) {
    MODEL_TOK_OR_SKIP(tok);
    EXPECT_EQ(tok.kind(), TokenizerKind::kBpe);
    EXPECT_EQ(tok.kind_name(), "gpt2 (smollm)");
    EXPECT_EQ(tok.pre(), "smollm");
    EXPECT_EQ(tok.n_vocab(), 49152);
    EXPECT_EQ(tok.bos(), 1);
    EXPECT_EQ(tok.eos(), 2);
    EXPECT_TRUE(tok.is_end_of_generation(2));  // <|im_end|>
    EXPECT_TRUE(tok.is_end_of_generation(0));  // <|endoftext|>
    EXPECT_FALSE(tok.is_end_of_generation(1));
    EXPECT_EQ(tok.find_token("<|im_start|>"), 1);
    EXPECT_EQ(tok.token_text(2), "<|im_end|>");
    // add_bos_token is false in this GGUF.
    EXPECT_EQ(tok.encode("Hello"), (std::vector<TokenId>{19556}));
    EXPECT_EQ(tok.encode("Hello", false, true), (std::vector<TokenId>{1, 19556}));
    const ChatTemplateChoice chat = detect_chat_template(tok, "llama");
    EXPECT_TRUE(chat.recognised);
    EXPECT_EQ(chat.tmpl.format, ChatFormat::kChatMl);
    EXPECT_EQ(chat.tmpl.default_system,
              "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
}

TEST(ModelTokenizer, GoldenIdsFromHf) {
    MODEL_TOK_OR_SKIP(tok);
    const auto cases = read_golden(LAZYLLM_TEST_GOLDEN_DIR "/tokenizer_smollm2.jsonl");
    ASSERT_GE(cases.size(), 200u);
    int failures = 0;
    for (const GoldenCase& c : cases) {
        const std::vector<TokenId> ids = tok.encode(c.text, c.parse_special, false);
        if (ids != c.ids) {
            ++failures;
            ADD_FAILURE() << "text " << ::testing::PrintToString(c.text)
                          << " parse_special=" << c.parse_special << "\n  want "
                          << ids_string(c.ids) << "\n  got  " << ids_string(ids);
        }
        if (c.roundtrip) {
            EXPECT_EQ(tok.decode(ids, /*render_special=*/true), c.text);
        }
        if (failures > 20) break;
    }
}

TEST(ModelTokenizer, StreamingEqualsDecode) {
    MODEL_TOK_OR_SKIP(tok);
    const auto cases = read_golden(LAZYLLM_TEST_GOLDEN_DIR "/tokenizer_smollm2.jsonl");
    for (const GoldenCase& c : cases) {
        StreamDecoder sd(tok);
        std::string streamed;
        for (TokenId id : c.ids) streamed += sd.push(id);
        streamed += sd.flush();
        if (c.roundtrip) {
            EXPECT_EQ(streamed, tok.decode(c.ids)) << ::testing::PrintToString(c.text);
        }
    }
}

// unencodable_byte finds exactly the bytes encode drops: SmolLM2's vocabulary lacks 0xC0,
// 0xC1, 0xF1, 0xF2, 0xF5-0xFF (never in UTF-8 it was trained on) and six control bytes.
TEST(ModelTokenizer, UnencodableBytesAreTheDroppedOnes) {
    MODEL_TOK_OR_SKIP(tok);
    std::vector<int> dropped;
    for (int b = 0; b < 256; ++b) {
        const char c = static_cast<char>(b);
        const std::string_view one(&c, 1);
        const bool none = tok.encode(one, false, false).empty();
        EXPECT_EQ(tok.unencodable_byte(one).has_value(), none) << b;
        if (none) dropped.push_back(b);
    }
    std::vector<int> want = {0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2};
    for (int b = 0xF5; b <= 0xFF; ++b) want.push_back(b);
    EXPECT_EQ(dropped, want);
    const std::string cut = std::string("ab\xFF") + "c\x04";  // "\xFFc" would be one escape
    EXPECT_EQ(tok.unencodable_byte(cut), std::optional<size_t>(2));
    EXPECT_EQ(tok.unencodable_byte("plain text, \xC3\xA9 and \xF0\x9F\xA6\x99"), std::nullopt);
}

TEST(ModelTokenizer, EmojiAndCjkSplitAcrossByteTokens) {
    MODEL_TOK_OR_SKIP(tok);
    // 🦙 and these CJK characters have no whole token: they are spread over byte tokens.
    const std::string text = "🦙 and 龘, 👨‍👩‍👧";
    const std::vector<TokenId> ids = tok.encode(text);
    int partial = 0;
    for (TokenId id : ids) {
        size_t len = 0;
        const std::string piece = tok.token_to_piece(id);
        if (tokenizer::classify_utf8_prefix(piece, &len) != tokenizer::Utf8Prefix::kComplete ||
            len != piece.size()) {
            ++partial;
        }
    }
    EXPECT_GT(partial, 0) << "expected some tokens holding part of a character";
    StreamDecoder sd(tok);
    std::string streamed;
    for (TokenId id : ids) {
        const std::string part = sd.push(id);
        for (size_t i = 0; i < part.size();) {
            size_t len = 0;
            ASSERT_EQ(tokenizer::classify_utf8_prefix(std::string_view(part).substr(i), &len),
                      tokenizer::Utf8Prefix::kComplete);
            i += len;
        }
        streamed += part;
    }
    streamed += sd.flush();
    EXPECT_EQ(streamed, text);
    EXPECT_EQ(tok.decode(ids), text);
}

TEST(ModelTokenizerGemma, GoldenIdsFromSentencePiece) {
    if (gemma() == nullptr) {
        GTEST_SKIP() << "Gemma 3 270M not found at '" << gemma_path()
                     << "'; run scripts/fetch_model.py gemma3-270m";
    }
    const Tokenizer& tok = gemma()->tok;
    std::printf("[          ] Gemma 3 vocabulary (%d tokens) loaded in %.0f ms\n", tok.n_vocab(),
                gemma()->load_ms);
    EXPECT_EQ(tok.kind(), TokenizerKind::kSpm);
    EXPECT_EQ(tok.bos(), 2);
    EXPECT_EQ(tok.eos(), 1);
    EXPECT_TRUE(tok.is_end_of_generation(*tok.find_token("<end_of_turn>")));
    // add_bos_token = true; add_space_prefix = false.
    const std::vector<TokenId> hello = tok.encode("Hello world");
    ASSERT_FALSE(hello.empty());
    EXPECT_EQ(hello[0], 2);
    EXPECT_EQ(tok.decode(hello), "Hello world");
    // Control tokens of the chat format are parsed only on request.
    const std::vector<TokenId> turn = tok.encode("<start_of_turn>user\nHi<end_of_turn>", true);
    EXPECT_EQ(turn[1], *tok.find_token("<start_of_turn>"));
    EXPECT_EQ(turn.back(), *tok.find_token("<end_of_turn>"));

    const auto cases = read_golden(LAZYLLM_TEST_GOLDEN_DIR "/tokenizer_gemma3.jsonl");
    ASSERT_GE(cases.size(), 200u);
    int failures = 0;
    for (const GoldenCase& c : cases) {
        const std::vector<TokenId> ids = tok.encode(c.text, c.parse_special, false);
        if (ids != c.ids) {
            ++failures;
            ADD_FAILURE() << "text " << ::testing::PrintToString(c.text) << "\n  want "
                          << ids_string(c.ids) << "\n  got  " << ids_string(ids);
        }
        if (c.roundtrip) {
            EXPECT_EQ(tok.decode(ids), c.text);
        }
        if (failures > 20) break;
    }
}

TEST(ModelTokenizer, ChatTemplateMatchesHfRendering) {
    MODEL_TOK_OR_SKIP(tok);
    std::ifstream in(LAZYLLM_TEST_GOLDEN_DIR "/tokenizer_smollm2_chat.json");
    ASSERT_TRUE(in.good());
    const auto j = nlohmann::json::parse(in);
    ASSERT_FALSE(j.empty());
    const ChatTemplate tmpl = detect_chat_template(tok, "llama").tmpl;
    for (const auto& c : j) {
        std::vector<ChatMessage> msgs;
        for (const auto& m : c.at("messages")) {
            msgs.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
        }
        const bool gen = c.at("add_generation_prompt").get<bool>();
        const std::string text = apply_chat_template(tmpl, msgs, gen);
        EXPECT_EQ(text, c.at("text").get<std::string>());
        EXPECT_EQ(tok.encode(text, true), c.at("ids").get<std::vector<TokenId>>());
    }
}

}  // namespace
}  // namespace lazyllm
