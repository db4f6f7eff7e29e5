// JSON mode's acceptor (src/runtime/json_prefix.h): every prefix of a valid JSON object is
// taken byte by byte and the whole completes; each invalid document is refused at the first
// byte that cannot follow, and a refused feed changes nothing. Then a turn in JSON mode on a
// tiny random model.
#include "runtime/json_prefix.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lazyllm/conversation.h"
#include "lazyllm/engine.h"
#include "support/tiny_model.h"

namespace lazyllm {
namespace {

// The length of the longest prefix of `text` the acceptor takes.
size_t accepted(const std::string& text, JsonPrefix* out = nullptr) {
    JsonPrefix p;
    size_t i = 0;
    while (i < text.size() && p.feed(static_cast<uint8_t>(text[i]))) ++i;
    if (out) *out = p;
    return i;
}

TEST(JsonPrefix, ValidObjectsCompleteByteByByte) {
    for (const std::string doc :
         {R"({})", R"(  {"a": 1} )", R"({"a":[1,-2.5e+3,0,0.25E-2,true,false,null,{}]})",
          "{\"s\": \"x\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9 caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"}",
          R"({"nested":{"deep":[[[]],{"k":"v"}]},"n":-0.0})", "{\n\t\"a\" : [ 1 , 2 ]\r\n}"}) {
        ASSERT_TRUE(nlohmann::json::accept(doc)) << doc;
        JsonPrefix p;
        ASSERT_EQ(accepted(doc, &p), doc.size()) << doc;
        EXPECT_TRUE(p.complete()) << doc;
    }
    JsonPrefix open;
    ASSERT_EQ(accepted(R"({"a": [1, 2)", &open), 11u);
    EXPECT_FALSE(open.complete());
}

TEST(JsonPrefix, RefusesAtTheFirstByteThatCannotFollow) {
    // {document, bytes taken before the refusal}
    const std::vector<std::pair<std::string, size_t>> cases = {
        {"[1]", 0},              // the top level is an object
        {"\"x\"", 0},
        {"{a:1}", 1},            // keys are strings
        {R"({"a" 1})", 5},       // a colon
        {R"({"a":01})", 6},      // no leading zeros
        {R"({"a":-})", 6},       // a digit after '-'
        {R"({"a":1.})", 7},      // a digit after '.'
        {R"({"a":1e})", 7},      // a digit in the exponent
        {R"({"a":tru})", 8},     // a literal cut short
        {R"({"a":nul})", 8},
        {R"({"a":1,})", 7},      // a key after ','
        {R"({"a":[1,]})", 8},    // a value after ','
        {R"({"a":1])", 6},       // the wrong bracket
        {R"({"a":"\x"})", 7},    // escapes
        {R"({"a":"\u12g4"})", 10},
        {"{\"a\":\"\x01\"}", 6},  // control bytes in strings
        {"{\"a\":\"\xC0\x80\"}", 6},  // overlong
        {"{\"a\":\"\xED\xA0\x80\"}", 7},  // a surrogate
        {"{\"a\":\"\xF4\x90\x80\x80\"}", 7},  // over U+10FFFF
        {"{\"a\":\"\xE2\x82\"}", 8},  // a character cut short
        {R"({} x)", 3},          // only whitespace after the object
        {R"({}{})", 2},
    };
    for (const auto& [doc, n] : cases) {
        EXPECT_EQ(accepted(doc), n) << doc;
    }
}

TEST(JsonPrefix, FeedIsAllOrNothingAndBoundsSpacesAndDepth) {
    JsonPrefix p;
    ASSERT_TRUE(p.feed(std::string_view(R"({"a": )")));
    const JsonPrefix before = p;
    EXPECT_FALSE(p.feed(std::string_view("1x")));  // '1' would do, 'x' not: neither is taken
    EXPECT_TRUE(p.feed(std::string_view("1}")));
    EXPECT_TRUE(p.complete());
    JsonPrefix q = before;
    EXPECT_TRUE(q.feed(std::string_view("12")));

    JsonPrefix s;
    EXPECT_TRUE(s.feed(std::string_view(std::string(JsonPrefix::kMaxSpaces, ' '))));
    EXPECT_FALSE(s.feed(' '));
    EXPECT_TRUE(s.feed('{'));
    EXPECT_TRUE(s.feed(' '));  // the count starts again after a byte that is not whitespace

    JsonPrefix d;
    EXPECT_TRUE(d.feed(std::string_view(R"({"a":)")));
    for (int i = 1; i < JsonPrefix::kMaxDepth; ++i) EXPECT_TRUE(d.feed('[')) << i;
    EXPECT_FALSE(d.feed('['));
    EXPECT_FALSE(d.feed('{'));
    EXPECT_TRUE(d.feed('1'));
}

TEST(JsonPrefix, NextBytesAreWhatFeedTakes) {
    JsonPrefix p;
    ASSERT_TRUE(p.feed(std::string_view(R"({"a":)")));
    const std::bitset<256> next = p.next_bytes();
    for (int c = 0; c < 256; ++c) {
        JsonPrefix q = p;
        EXPECT_EQ(next[static_cast<size_t>(c)], q.feed(static_cast<uint8_t>(c))) << c;
    }
    EXPECT_TRUE(next['{'] && next['['] && next['"'] && next['-'] && next['7'] && next['t']);
    EXPECT_FALSE(next['}'] || next[','] || next['x']);
}

// A turn in JSON mode on a tiny random model: every token it samples keeps the answer a
// prefix of a JSON object, and an answer that ends with reason stop is a whole one.
TEST(JsonPrefix, ATurnInJsonModeIsJson) {
    testing::TinyModelSpec spec;
    spec.n_layer = 2;
    spec.seed = 3;
    const std::string path = ::testing::TempDir() + "lazyllm_json_turn.gguf";
    ASSERT_TRUE(testing::write_tiny_model(spec, path).ok());
    EngineOptions eo;
    eo.model_path = path;
    eo.n_threads = 1;
    auto e = Engine::load(eo);
    ASSERT_TRUE(e.ok()) << e.error().message();
    auto conv = (*e)->open_conversation(PruneOptions{}, 256);
    ASSERT_TRUE(conv.ok()) << conv.error().message();
    const JsonTokenMask mask((*e)->tokenizer());
    int whole = 0;
    for (uint64_t seed = 1; seed <= 6; ++seed) {
        TurnOptions to;
        to.max_new_tokens = 200;
        to.json_object = true;
        to.sampling.temperature = 1.0f;
        to.sampling.seed = seed;
        const std::vector<TokenId> prompt = {1, 2, 3, 4, 5};
        auto st = (*conv)->start_turn(prompt, to);
        ASSERT_TRUE(st.ok()) << st.error().message();
        std::string text = st->text;
        for (int calls = 0; calls < 400; ++calls) {
            auto d = (*conv)->next();
            ASSERT_TRUE(d.ok()) << d.error().message();
            text += d->text;
            if (d->done) break;
        }
        std::string bytes;
        for (TokenId id : (*conv)->generated()) bytes += mask.piece(id);
        JsonPrefix p;
        EXPECT_EQ(accepted(bytes, &p), bytes.size()) << bytes;
        const std::string& reason = (*conv)->stats().stop_reason;
        if (reason == "stop") {
            EXPECT_TRUE(p.complete());
            EXPECT_TRUE(nlohmann::json::parse(text, nullptr, false).is_object()) << text;
            ++whole;
        } else {
            EXPECT_EQ(reason, "length") << text;
        }
    }
    RecordProperty("whole_objects", whole);
    EXPECT_GE(whole, 1);  // turns end when the object closes (4 of 6 on this model)

    // A turn that continues text (a final assistant message, TurnOptions::json_prefix) goes on
    // from the state after it: the prefix and the answer together are JSON (the answer alone
    // once started a second object). A prefix that starts no object, or holds a whole one, is
    // refused.
    const std::string start = R"({"name": "Bo)";
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        TurnOptions to;
        to.max_new_tokens = 200;
        to.json_object = true;
        to.json_prefix = start;
        to.sampling.temperature = 1.0f;
        to.sampling.seed = seed;
        auto st = (*conv)->start_turn(std::vector<TokenId>{1, 2, 3, 4, 5}, to);
        ASSERT_TRUE(st.ok()) << st.error().message();
        std::string text = start + st->text;
        for (int calls = 0; calls < 400; ++calls) {
            auto d = (*conv)->next();
            ASSERT_TRUE(d.ok()) << d.error().message();
            text += d->text;
            if (d->done) break;
        }
        JsonPrefix p;
        EXPECT_EQ(accepted(text, &p), text.size()) << text;
        if ((*conv)->stats().stop_reason == "stop") {
            EXPECT_TRUE(nlohmann::json::parse(text, nullptr, false).is_object()) << text;
        }
    }
    for (const char* bad : {"hello", R"({"a": 1})", R"({"a": 1}})"}) {
        TurnOptions to;
        to.json_object = true;
        to.json_prefix = bad;
        auto st = (*conv)->start_turn(std::vector<TokenId>{1, 2, 3}, to);
        ASSERT_FALSE(st.ok()) << bad;
        EXPECT_NE(st.error().message().find("JSON mode"), std::string::npos) << bad;
        EXPECT_FALSE(check_json_prefix(bad).ok()) << bad;
    }
    EXPECT_TRUE(check_json_prefix("").ok());
}

}  // namespace
}  // namespace lazyllm
