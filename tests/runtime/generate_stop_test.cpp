// Engine::generate's stop ids and minimum of new tokens (RunOptions::stop_ids,
// min_new_tokens), as the server's turns have them (Conversation.MinTokensAndStopIds): eval's
// LongBench samsum stops on the "\n" token but never at the first one, as pred.py does.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "lazyllm/engine.h"
#include "runtime/eos_first.h"

namespace lazyllm {
namespace {

TEST(EngineGenerate, MinTokensAndStopIds) {
    const EosFirst m = eos_first_model("lazyllm_gen_min_first");
    ASSERT_NE(m.engine, nullptr);
    const Engine& e = *m.engine;
    RunOptions ro;
    ro.max_new_tokens = 8;
    ro.sampling.temperature = 0.0f;
    auto run = [&](const RunOptions& o) {
        auto g = e.generate(m.prompt, o);
        EXPECT_TRUE(g.ok()) << g.error().message();
        return g.ok() ? *g : GenerateResult{};
    };
    EXPECT_TRUE(run(ro).tokens.empty());  // the end token at once
    ro.min_new_tokens = 3;
    const GenerateResult held = run(ro);
    ASSERT_GE(held.tokens.size(), 3u);
    EXPECT_EQ(std::count(held.tokens.begin(), held.tokens.begin() + 3, m.eos), 0);
    // A stop id ends the answer before it, with reason stop, its text left out.
    ro.min_new_tokens = 0;
    ro.ignore_eos = true;
    const GenerateResult all = run(ro);
    ASSERT_EQ(all.tokens.size(), 8u);
    size_t k = 2;
    const auto seen_before = [&](size_t i) {
        return std::find(all.tokens.begin(), all.tokens.begin() + static_cast<ptrdiff_t>(i),
                         all.tokens[i]) != all.tokens.begin() + static_cast<ptrdiff_t>(i);
    };
    while (k < all.tokens.size() && seen_before(k)) ++k;
    ASSERT_LT(k, all.tokens.size()) << "no token after the second that is new";
    ro.stop_ids = {all.tokens[k]};
    const GenerateResult stopped = run(ro);
    EXPECT_EQ(stopped.tokens, std::vector<TokenId>(all.tokens.begin(),
                                                   all.tokens.begin() + static_cast<ptrdiff_t>(k)));
    EXPECT_EQ(stopped.stop_reason, "stop");
    EXPECT_EQ(all.text.substr(0, stopped.text.size()), stopped.text);
    EXPECT_LT(stopped.text.size(), all.text.size());
    // ... unless min_new_tokens holds it back past k.
    ro.min_new_tokens = static_cast<int>(k) + 1;
    const GenerateResult past = run(ro);
    ASSERT_GT(past.tokens.size(), k);
    EXPECT_NE(past.tokens[k], all.tokens[k]);
    // Bad options are refused, by generate and by validate.
    ro.min_new_tokens = 9;
    EXPECT_FALSE(e.generate(m.prompt, ro).ok());
    EXPECT_FALSE(e.validate(ro).ok());
    ro.min_new_tokens = 0;
    ro.stop_ids = {-1};
    EXPECT_FALSE(e.generate(m.prompt, ro).ok());
    ro.stop_ids = {e.summary().n_vocab};
    EXPECT_FALSE(e.validate(ro).ok());
}

}  // namespace
}  // namespace lazyllm
