// Session::truncate (the server's multi-turn cache, include/lazyllm/conversation.h): forgetting
// the tokens past n and stepping on gives what a session that never saw them gives, bit for bit
// on the full path; with LazyLLM the invariants (check_invariants) hold across truncations at
// random points, including inside pruned regions whose tokens wait in Aux slots.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "model/llama_model.h"
#include "runtime/session.h"
#include "runtime/session_fixture.h"

namespace lazyllm {
namespace {

using testing::ids_for;

std::unique_ptr<LlamaModel> tiny_model(int n_layer, const std::string& tag) {
    return testing::tiny_session_model(n_layer, "truncate_" + tag, /*seed=*/11);
}

std::vector<float> step(Session& s, const std::vector<int32_t>& ids, int n_vocab) {
    std::vector<float> logits(static_cast<size_t>(n_vocab));
    auto st = s.step(ids, logits.data());
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message());
    return logits;
}

TEST(SessionTruncate, FullPathEqualsASessionThatNeverSawTheTail) {
    auto model = tiny_model(4, "full");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab;
    SessionOptions o;
    o.n_ctx = 96;
    o.check_invariants = true;
    const auto prompt = ids_for(30, V, 1), tail = ids_for(9, V, 2), other = ids_for(7, V, 3);
    auto a = Session::create(*model, o).value();
    step(a, prompt, V);
    step(a, tail, V);
    a.truncate(30);
    EXPECT_EQ(a.n_past(), 30);
    EXPECT_EQ(a.tokens(), prompt);
    const auto la = step(a, other, V);
    auto b = Session::create(*model, o).value();
    step(b, prompt, V);
    const auto lb = step(b, other, V);
    ASSERT_EQ(0, std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)));
    // To zero: the next step is a prefill again.
    a.truncate(0);
    EXPECT_EQ(a.n_past(), 0);
    const auto l0 = step(a, prompt, V);
    auto c = Session::create(*model, o).value();
    const auto lc = step(c, prompt, V);
    ASSERT_EQ(0, std::memcmp(l0.data(), lc.data(), l0.size() * sizeof(float)));
    EXPECT_DOUBLE_EQ(a.prompt_fraction_computed(), 1.0);
}

TEST(SessionTruncate, LazyInvariantsHoldAcrossTruncations) {
    auto model = tiny_model(8, "lazy");
    ASSERT_NE(model, nullptr);
    const int L = model->config().n_layer;
    const int V = model->config().n_vocab;
    std::mt19937 rng(7);
    for (int trial = 0; trial < 20; ++trial) {
        SessionOptions o;
        o.n_ctx = 256;
        o.policy = prune::Policy::kLazy;
        o.schedule.boundaries = {2, 4, 6};
        o.schedule.keep = {0.6f, 0.35f, 0.2f};
        o.schedule.prune_decode = trial % 2 == 0;
        o.schedule.keep_first = static_cast<int>(rng() % 3);
        o.check_invariants = true;  // a broken invariant aborts the step
        auto s = Session::create(*model, o).value();
        step(s, ids_for(20 + static_cast<int>(rng() % 40), V, static_cast<uint32_t>(trial)), V);
        for (int turn = 0; turn < 4; ++turn) {
            for (int k = 0; k < 3; ++k) step(s, ids_for(1, V, static_cast<uint32_t>(100 * trial + k)), V);
            const int64_t n = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(s.n_past()));
            s.truncate(n);
            ASSERT_EQ(s.n_past(), n);
            ASSERT_EQ(static_cast<int64_t>(s.tokens().size()), n);
            for (int64_t t = n; t < s.n_ctx(); ++t) ASSERT_EQ(s.depth()[t], 0) << t;
            step(s, ids_for(2 + static_cast<int>(rng() % 12), V, static_cast<uint32_t>(1000 * trial + turn)), V);
            EXPECT_EQ(s.depth()[s.n_past() - 1], L);
            EXPECT_LE(s.prompt_fraction_computed(), 1.0);
        }
    }
}

}  // namespace
}  // namespace lazyllm
