// The default model through the public Engine: what a user sees from `run --chat --lazy`.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lazyllm/engine.h"
#include "support/model_path.h"

namespace lazyllm {
namespace {

RunOptions greedy(const std::string& preset, const std::string& policy, int n) {
    RunOptions ro;
    ro.max_new_tokens = n;
    ro.sampling.temperature = 0.0f;
    ro.prune.policy = parse_policy(policy).value();
    ro.prune.preset = parse_preset(preset).value();
    return ro;
}

// A short chat is below the safe preset's context floor: `--lazy` answers exactly as full does,
// token for token (the fast preset prunes it and repeats itself: "Paris is Paris is ...").
TEST(ModelEngine, ShortChatWithLazyEqualsFull) {
    LAZYLLM_MODEL_OR_SKIP(path);
    EngineOptions eo;
    eo.model_path = path;
    eo.n_threads = 2;
    auto engine = Engine::load(eo);
    ASSERT_TRUE(engine.ok()) << engine.error().message();
    const Engine& e = **engine;
    for (const char* question : {"What is the capital of France?", "Explain what a CPU cache is."}) {
        const std::vector<TokenId> ids =
            e.tokenizer().encode(e.chat_prompt(question), /*parse_special=*/true);
        auto full = e.generate(ids, greedy("safe", "full", 40));
        auto lazy = e.generate(ids, greedy("safe", "lazy", 40));
        ASSERT_TRUE(full.ok()) << full.error().message();
        ASSERT_TRUE(lazy.ok()) << lazy.error().message();
        EXPECT_EQ(lazy->tokens, full->tokens) << question << "\nfull: " << full->text
                                              << "\nlazy: " << lazy->text;
        EXPECT_EQ(lazy->text, full->text);
        EXPECT_DOUBLE_EQ(lazy->fraction_computed, 1.0);
        EXPECT_FALSE(full->tokens.empty());
    }
}

}  // namespace
}  // namespace lazyllm
