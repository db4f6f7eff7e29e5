// A preset on a model with no layer to cut after (one layer; a Gemma 3 whose only global layer
// is the last) prunes nothing: LazyLLM and the baselines run as full, in generate and in a
// conversation, instead of failing on a schedule with no boundary.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lazyllm/engine.h"
#include "runtime/eos_first.h"
#include "support/tiny_model.h"

namespace lazyllm {
namespace {

TEST(EngineGenerate, APresetWithNowhereToCutRunsFull) {
    for (const auto& [arch, n_layer] :
         std::vector<std::pair<std::string, int>>{{"llama", 1}, {"gemma3", 6}}) {
        testing::TinyModelSpec spec;
        spec.arch = arch;
        spec.n_layer = n_layer;
        spec.seed = 5;
        const auto engine = load_tiny_engine("lazyllm_nowhere_" + arch + ".gguf", spec, 1);
        ASSERT_NE(engine, nullptr) << arch;
        const Engine& e = *engine;
        std::vector<TokenId> prompt;
        for (int i = 0; i < 40; ++i) prompt.push_back((7 * i + 3) % e.summary().n_vocab);
        RunOptions ro;
        ro.max_new_tokens = 6;
        ro.ignore_eos = true;
        auto full = e.generate(prompt, ro);
        ASSERT_TRUE(full.ok()) << full.error().message();
        for (Policy policy : {Policy::kLazy, Policy::kStatic, Policy::kRandom}) {
            for (Preset preset : {Preset::kSafe, Preset::kFast}) {
                ro.prune.policy = policy;
                ro.prune.preset = preset;
                auto pruned = e.generate(prompt, ro);
                ASSERT_TRUE(pruned.ok()) << arch << ": " << pruned.error().message();
                EXPECT_EQ(pruned->tokens, full->tokens) << arch;
                EXPECT_EQ(pruned->policy, "full") << arch;
                EXPECT_EQ(pruned->prefill_fraction_computed, 1.0) << arch;
                EXPECT_TRUE(e.open_conversation(ro.prune, 64).ok()) << arch;
            }
        }
        // An explicit schedule without a boundary is refused, and says what it lacks.
        ro.prune.policy = Policy::kLazy;
        ro.prune.schedule = Schedule{};
        auto empty = e.generate(prompt, ro);
        ASSERT_FALSE(empty.ok()) << arch;
        EXPECT_NE(empty.error().message().find("boundary"), std::string::npos)
            << empty.error().message();
    }
}

}  // namespace
}  // namespace lazyllm
