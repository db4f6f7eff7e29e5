// Conversation (the server's turns): a sampled token's text goes out before the decode step that
// follows it, and a turn generates what Engine::generate does for the same prompt and policy.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lazyllm/conversation.h"
#include "lazyllm/engine.h"
#include "support/tiny_model.h"

namespace lazyllm {
namespace {

std::unique_ptr<Engine> tiny_engine(const char* name) {
    testing::TinyModelSpec spec;
    spec.n_layer = 4;
    spec.seed = 11;
    const std::string path = ::testing::TempDir() + name;
    if (!testing::write_tiny_model(spec, path).ok()) return nullptr;
    EngineOptions eo;
    eo.model_path = path;
    eo.n_threads = 2;
    auto e = Engine::load(eo);
    return e.ok() ? std::move(*e) : nullptr;
}

// LazyLLM whose decode steps only revive (the safe preset's rule) with no context floor, so the
// prompt step defers tokens and the first decode step revives them.
PruneOptions lazy_revive_in_decode() {
    PruneOptions p;
    p.policy = Policy::kLazy;
    Schedule s;
    s.boundaries = {1, 3};
    s.keep = {0.5f, 0.25f};
    s.prune_decode = false;
    p.schedule = s;
    return p;
}

std::vector<TokenId> prompt_ids(int n, int n_vocab) {
    std::vector<TokenId> ids(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = (7 * i + 3) % n_vocab;
    return ids;
}

TEST(Conversation, FirstTokenGoesOutBeforeTheStepThatRevives) {
    auto engine = tiny_engine("lazyllm_conv_first.gguf");
    ASSERT_NE(engine, nullptr);
    auto conv = engine->open_conversation(lazy_revive_in_decode(), 128);
    ASSERT_TRUE(conv.ok()) << conv.error().message();
    Conversation& c = **conv;
    const std::vector<TokenId> prompt = prompt_ids(40, engine->summary().n_vocab);
    TurnOptions to;
    to.max_new_tokens = 6;
    to.ignore_eos = true;
    to.sampling.temperature = 0.0f;
    ASSERT_TRUE(c.start_turn(prompt, to).ok());
    EXPECT_EQ(c.n_past(), 40);
    auto first = c.next();
    ASSERT_TRUE(first.ok()) << first.error().message();
    EXPECT_FALSE(first->done);
    EXPECT_EQ(c.n_past(), 40) << "the first token went out only after a decode step";
    EXPECT_EQ(c.stats().revived, 0);
    auto second = c.next();
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(c.n_past(), 41);
    EXPECT_GT(c.stats().revived, 0) << "the second call's step revives the deferred tokens";
}

TEST(Conversation, TurnEqualsGenerateAlone) {
    auto engine = tiny_engine("lazyllm_conv_gen.gguf");
    ASSERT_NE(engine, nullptr);
    const std::vector<TokenId> prompt = prompt_ids(36, engine->summary().n_vocab);
    for (const PruneOptions& prune : {PruneOptions{}, lazy_revive_in_decode()}) {
        RunOptions ro;
        ro.max_new_tokens = 7;
        ro.ignore_eos = true;
        ro.sampling.temperature = 0.0f;
        ro.prune = prune;
        auto gen = engine->generate(prompt, ro);
        ASSERT_TRUE(gen.ok()) << gen.error().message();

        auto conv = engine->open_conversation(prune, 128);
        ASSERT_TRUE(conv.ok()) << conv.error().message();
        TurnOptions to;
        to.max_new_tokens = 7;
        to.ignore_eos = true;
        to.sampling.temperature = 0.0f;
        ASSERT_TRUE((*conv)->start_turn(prompt, to).ok());
        std::string text;
        int calls = 0;
        while (true) {
            auto d = (*conv)->next();
            ASSERT_TRUE(d.ok()) << d.error().message();
            text += d->text;
            ++calls;
            if (d->done) break;
            ASSERT_LT(calls, 20);
        }
        EXPECT_EQ(text, gen->text) << policy_name(prune.policy);
        EXPECT_EQ((*conv)->stats().n_gen, 7);
        // 7 tokens: the first from the prompt step, 6 decode steps, none after the last token.
        EXPECT_EQ((*conv)->n_past(), 36 + 6);
    }
}

}  // namespace
}  // namespace lazyllm
