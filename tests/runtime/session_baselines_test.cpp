// The baseline policies (design.md 1.5) in the step routine, on tiny random models: static
// prunes once and never revives, random drops seeded tokens before inference, GemFilter runs
// the whole model on the tokens its first pass kept.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "model/llama_model.h"
#include "prune/schedule.h"
#include "prune/select.h"
#include "runtime/session.h"
#include "runtime/session_fixture.h"
#include "support/cpu.h"

namespace lazyllm {
namespace {

using testing::argmax;
using testing::ids_for;
using testing::lazy_options;
using testing::run_steps;
using testing::tiny_gemma3_session_model;
using testing::tiny_session_model;

TEST(SessionTest, StaticPrunesOnceAndNeverRevives) {
    auto model = tiny_session_model(6, "static");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab;
    SessionOptions o = lazy_options({2}, {0.5f});
    o.policy = prune::Policy::kStatic;
    std::vector<BoundaryTrace> traces;
    o.on_boundary = [&](const BoundaryTrace& t) { traces.push_back(t); };
    auto s = Session::create(*model, o).value();
    run_steps(s, ids_for(16, V, 2), 4, V);
    ASSERT_EQ(traces.size(), 5u);
    const auto& pre = traces[0];
    std::vector<int32_t> pruned;
    std::set_difference(pre.S.begin(), pre.S.end(), pre.kept.begin(), pre.kept.end(),
                        std::back_inserter(pruned));
    EXPECT_EQ(pruned.size(), 8u);
    for (size_t i = 1; i < traces.size(); ++i) {
        EXPECT_TRUE(traces[i].scores.empty()) << "no re-scoring after prefill";
        EXPECT_EQ(traces[i].revived, 0);
        for (int32_t t : pruned) {
            EXPECT_FALSE(std::binary_search(traces[i].kept.begin(), traces[i].kept.end(), t))
                << "token " << t << " came back";
        }
    }
    for (int32_t t : pruned) EXPECT_EQ(s.depth()[t], 2);
}

TEST(SessionTest, RandomDropsSeededTokensBeforeInference) {
    auto model = tiny_session_model(4, "random");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab;
    auto dropped = [&](uint64_t seed) {
        SessionOptions o = lazy_options({1}, {0.5f});
        o.policy = prune::Policy::kRandom;
        o.seed = seed;
        auto s = Session::create(*model, o).value();
        run_steps(s, ids_for(30, V, 3), 3, V);
        std::vector<int32_t> d;
        for (int32_t t = 0; t < 30; ++t) {
            if (s.depth()[t] == 0)
                d.push_back(t);
            else
                EXPECT_EQ(s.depth()[t], 4);
        }
        EXPECT_DOUBLE_EQ(s.prompt_fraction_computed(), 15.0 / 30.0);
        return d;
    };
    const auto a = dropped(1), b = dropped(1), c = dropped(2);
    EXPECT_EQ(a.size(), 15u);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    EXPECT_FALSE(std::binary_search(a.begin(), a.end(), 29)) << "the last token is never dropped";
}

TEST(SessionTest, GemFilterRunsTheWholeModelOnKeptTokens) {
    auto model = tiny_session_model(6, "gemfilter");
    ASSERT_NE(model, nullptr);
    const ModelConfig& c = model->config();
    SessionOptions o = lazy_options({2}, {0.5f});
    o.policy = prune::Policy::kGemFilter;
    auto s = Session::create(*model, o).value();
    const auto prompt = ids_for(24, c.n_vocab, 8);
    std::vector<float> logits(c.n_vocab);
    auto st = s.step(prompt, logits.data()).value();
    std::vector<int32_t> kept;
    for (int32_t t = 0; t < 24; ++t) {
        if (s.depth()[t] == 6)
            kept.push_back(t);
        else
            EXPECT_EQ(s.depth()[t], 2);
    }
    ASSERT_EQ(kept.size(), 12u);
    EXPECT_EQ(st.rows_per_layer, (std::vector<int32_t>{36, 36, 12, 12, 12, 12}));
    // Same logits as running the model on the kept tokens alone at their original positions.
    std::vector<int32_t> kept_ids;
    for (int32_t t : kept) kept_ids.push_back(prompt[t]);
    KvCache kv(c.n_layer, 32, c.n_head_kv, c.head_dim, model->kv_type());
    ForwardScratch scratch;
    std::vector<float> h(kept.size() * static_cast<size_t>(c.n_embd)), want(c.n_vocab);
    ASSERT_TRUE(model->embed(kept_ids.data(), static_cast<int64_t>(kept.size()), h.data()).ok());
    LayerRun run{h.data(),
                 kept.data(),
                 static_cast<int64_t>(kept.size()),
                 kept.data(),
                 static_cast<int64_t>(kept.size()),
                 0,
                 c.n_layer,
                 nullptr};
    run.last_row_out = true;  // as every step runs its last layer
    model->forward_layers(run, kv, scratch);
    model->logits(h.data() + (kept.size() - 1) * c.n_embd, 24, false, want.data(), scratch);
    EXPECT_EQ(0, std::memcmp(want.data(), logits.data(), want.size() * sizeof(float)));
}

}  // namespace
}  // namespace lazyllm
