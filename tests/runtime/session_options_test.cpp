// The schedule's options in the step routine (design.md 1.3), on tiny random models: scores
// summed over layers and pooled, decode steps that only revive (or never do), the floor below
// which a step is full bit for bit, the protected recent window, bounded revivals, and revived
// tokens finishing the layer they stopped in.
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

// Score shaping (prune::Schedule::score_layers / score_pool). With keep 1.0 nothing is cut, so
// every run computes the same hidden states and a boundary at layer b traces layer b-1's scores.
std::vector<BoundaryTrace> prefill_traces(const LlamaModel& model, std::vector<int> layers,
                                          std::vector<float> keep, int score_layers, int score_pool,
                                          const std::vector<int32_t>& prompt) {
    std::vector<BoundaryTrace> traces;
    auto opts = lazy_options(std::move(layers), std::move(keep));
    opts.schedule.score_layers = score_layers;
    opts.schedule.score_pool = score_pool;
    opts.on_boundary = [&](const BoundaryTrace& t) { traces.push_back(t); };
    auto s = Session::create(model, opts).value();
    std::vector<float> logits(model.config().n_vocab);
    EXPECT_TRUE(s.step(prompt, logits.data()).ok());
    return traces;
}

TEST(SessionTest, ScoreLayersSumTheLayersBeforeTheBoundaryWithinTheStage) {
    auto model = tiny_session_model(6, "score_layers");
    ASSERT_NE(model, nullptr);
    const auto prompt = ids_for(12, model->config().n_vocab, 3);
    // Layers 1, 2, 3 one by one (boundaries 2, 3, 4 trace layers 1, 2, 3).
    const auto each = prefill_traces(*model, {2, 3, 4}, {1.0f, 1.0f, 1.0f}, 1, 1, prompt);
    ASSERT_EQ(each.size(), 3u);
    const size_t n = each[0].scores.size();
    ASSERT_EQ(n, 12u);
    // One boundary at 4 summing 3 layers: layers 1 + 2 + 3.
    const auto sum3 = prefill_traces(*model, {4}, {1.0f}, 3, 1, prompt);
    ASSERT_EQ(sum3.size(), 1u);
    // Boundaries 2 and 4 summing 3 layers: the stage [2, 4) has two, so layers 2 + 3 at 4.
    const auto stage = prefill_traces(*model, {2, 4}, {1.0f, 1.0f}, 3, 1, prompt);
    ASSERT_EQ(stage.size(), 2u);
    for (size_t j = 0; j < n; ++j) {
        const float l1 = each[0].scores[j], l2 = each[1].scores[j], l3 = each[2].scores[j];
        EXPECT_FLOAT_EQ(sum3[0].scores[j], (l1 + l2) + l3) << j;
        EXPECT_FLOAT_EQ(stage[1].scores[j], l2 + l3) << j;
    }
    // A layer's scores are a distribution over S (the head mean of softmaxes); the sum is not.
    double total = 0.0;
    for (float x : sum3[0].scores) total += x;
    EXPECT_NEAR(total, 3.0, 1e-4);
}

TEST(SessionTest, ScorePoolSelectsOnPooledScores) {
    auto model = tiny_session_model(6, "score_pool");
    ASSERT_NE(model, nullptr);
    const auto prompt = ids_for(20, model->config().n_vocab, 4);
    const auto raw = prefill_traces(*model, {3}, {1.0f}, 1, 1, prompt);
    const auto pooled = prefill_traces(*model, {3}, {0.4f}, 1, 5, prompt);
    ASSERT_EQ(raw.size(), 1u);
    ASSERT_EQ(pooled.size(), 1u);
    std::vector<float> expect;
    prune::pool_scores(raw[0].scores, raw[0].S, 5, expect);
    EXPECT_EQ(pooled[0].scores, expect);
    EXPECT_NE(pooled[0].scores, raw[0].scores);  // the pooling changed something
    const std::vector<int32_t> last = {19};
    EXPECT_EQ(pooled[0].kept, prune::select_top(expect, pooled[0].S, 8, last));
}

TEST(SessionTest, DecodeOffRevivesEverythingOnce) {
    auto model = tiny_session_model(6, "decode_off");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab;
    auto s = Session::create(*model, lazy_options({2, 4}, {0.5f, 0.25f}, /*prune_decode=*/false))
                 .value();
    run_steps(s, ids_for(20, V, 4), 1, V);
    // After the first decode step with no pruning every deferred token has resumed to the end.
    for (int64_t t = 0; t < s.n_past(); ++t) EXPECT_EQ(s.depth()[t], 6) << t;
    EXPECT_DOUBLE_EQ(s.prompt_fraction_computed(), 1.0);
    EXPECT_EQ(s.total_token_layers(), 21 * 6) << "each (token, layer) pair exactly once";
}

// Decode steps that neither select nor revive (prune_decode off, revive_max 0): every layer
// from a boundary on sees the set prefill left there, plus the new tokens; no deferred token
// moves and each new token runs every layer once.
TEST(SessionTest, DecodeOffReviveZeroKeepsPrefillsSets) {
    auto model = tiny_session_model(6, "decode_frozen");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab;
    SessionOptions opts = lazy_options({2, 4}, {0.5f, 0.25f}, /*prune_decode=*/false);
    opts.schedule.revive_max = 0;
    std::vector<BoundaryTrace> traces;
    opts.on_boundary = [&](const BoundaryTrace& t) { traces.push_back(t); };
    auto s = Session::create(*model, opts).value();
    run_steps(s, ids_for(20, V, 4), 0, V);
    const std::vector<int16_t> depth_after_prefill(s.depth().begin(), s.depth().begin() + 20);
    const double computed = s.prompt_fraction_computed();
    const int64_t token_layers = s.total_token_layers();
    ASSERT_LT(computed, 1.0);
    ASSERT_EQ(traces.size(), 2u);
    const std::vector<BoundaryTrace> prefill = traces;
    traces.clear();
    std::vector<float> logits(V);
    for (int i = 0; i < 3; ++i) {
        const int32_t tok = static_cast<int32_t>((7 + 5 * i) % V);
        auto st = s.step(std::span<const int32_t>(&tok, 1), logits.data());
        ASSERT_TRUE(st.ok()) << st.error().message();
        EXPECT_EQ(st->revived, 0);
        ASSERT_EQ(traces.size(), 2u) << "decode step " << i;
        for (size_t b = 0; b < 2; ++b) {
            std::vector<int32_t> want = prefill[b].kept;
            for (int32_t p = 20; p <= 20 + i; ++p) want.push_back(p);
            EXPECT_EQ(traces[b].kept, want) << "decode step " << i << ", boundary " << b;
        }
        traces.clear();
    }
    for (int64_t t = 0; t < 20; ++t) EXPECT_EQ(s.depth()[t], depth_after_prefill[t]) << t;
    for (int64_t t = 20; t < 23; ++t) EXPECT_EQ(s.depth()[t], 6) << t;
    EXPECT_DOUBLE_EQ(s.prompt_fraction_computed(), computed);
    EXPECT_EQ(s.total_token_layers(), token_layers + 3 * 6);
    // A step of several new tokens (the next turn of a chat) selects afresh and revives what it
    // selects: the bound is for one-token decode steps.
    auto turn = s.step(ids_for(4, V, 9), logits.data());
    ASSERT_TRUE(turn.ok()) << turn.error().message();
    EXPECT_GT(turn->revived, 0);
    EXPECT_GT(s.prompt_fraction_computed(), computed);
}

// Schedule::min_context: steps over a shorter context are the full step bit for bit (no
// boundary is crossed: the trace stays empty, every token reaches the last layer), in prefill
// and decode; the first step whose context reaches min_context prunes.
TEST(SessionTest, BelowMinContextIsFullBitForBit) {
    auto model = tiny_session_model(6, "min_context");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab;
    const auto prompt = ids_for(20, V, 21);
    SessionOptions full;
    full.n_ctx = 128;
    auto a = Session::create(*model, full).value();
    SessionOptions lazy = lazy_options({2, 4}, {0.5f, 0.25f});
    lazy.schedule.min_context = 26;  // prefill (20) and decode steps to context 25 run as full
    std::vector<BoundaryTrace> traces;
    lazy.on_boundary = [&](const BoundaryTrace& t) { traces.push_back(t); };
    auto b = Session::create(*model, lazy).value();
    const auto la = run_steps(a, prompt, 5, V);  // contexts 20, 21, ..., 25
    const auto lb = run_steps(b, prompt, 5, V);
    ASSERT_EQ(la.size(), lb.size());
    for (size_t i = 0; i < la.size(); ++i) EXPECT_EQ(la[i], lb[i]) << "step " << i;
    EXPECT_TRUE(traces.empty());
    EXPECT_EQ(b.total_token_layers(), 25 * 6);
    // Context 26: the decode step selects (keep 0.5 of 26 = 13 at the first boundary).
    std::vector<float> logits(V);
    const int32_t next = argmax(lb.back());
    ASSERT_TRUE(b.step(std::span<const int32_t>(&next, 1), logits.data()).ok());
    ASSERT_EQ(traces.size(), 2u);
    EXPECT_EQ(traces[0].S.size(), 26u);
    EXPECT_EQ(traces[0].kept.size(), 13u);
}

// Schedule::keep_recent: the last N positions of the context survive every boundary of every
// step, so a generated token is never cut (with decode pruning on) and always reaches the last
// layer in its own step; the window is kept on top of the keep fraction.
TEST(SessionTest, KeepRecentProtectsTheLastTokensInPrefillAndDecode) {
    auto model = tiny_session_model(6, "keep_recent");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab, n = 40, recent = 6;
    SessionOptions o = lazy_options({2, 4}, {0.3f, 0.2f});
    o.schedule.keep_recent = recent;
    std::vector<BoundaryTrace> traces;
    o.on_boundary = [&](const BoundaryTrace& t) { traces.push_back(t); };
    auto s = Session::create(*model, o).value();
    std::vector<float> logits(V);
    ASSERT_TRUE(s.step(ids_for(n, V, 31), logits.data()).ok());
    for (int step = 0; step < 8; ++step) {
        const int32_t next = argmax(logits);
        ASSERT_TRUE(s.step(std::span<const int32_t>(&next, 1), logits.data()).ok());
        // The window and every token generated so far (each was in the window in its own
        // step) hold K/V at every layer.
        for (int64_t t = std::min<int64_t>(n, s.n_past() - recent); t < s.n_past(); ++t) {
            EXPECT_EQ(s.depth()[t], 6) << t;
        }
    }
    ASSERT_FALSE(traces.empty());
    for (const BoundaryTrace& t : traces) {
        const int32_t n_total = t.S.back() + 1;
        for (int32_t p = n_total - recent; p < n_total; ++p) {
            EXPECT_TRUE(std::binary_search(t.kept.begin(), t.kept.end(), p))
                << "step " << t.step << " layer " << t.layer << " cut recent position " << p;
        }
        // The window comes on top of the kept amount (0.3, then 0.2 of the context).
        const int64_t want =
            prune::keep_count(t.layer == 2 ? 0.3 : 0.2, n_total, static_cast<int64_t>(t.S.size()));
        EXPECT_EQ(static_cast<int64_t>(t.kept.size()),
                  std::min<int64_t>(want + recent, static_cast<int64_t>(t.S.size())));
    }
}

// A session over `prompt`, then a one-token decode step per token of `feed`: every boundary's
// trace, each step's logits, and the tokens the decode steps revived.
struct TracedRun {
    std::vector<BoundaryTrace> traces;
    std::vector<std::vector<float>> logits;
    int64_t decode_revived = 0;
};
TracedRun traced_run(const LlamaModel& model, SessionOptions opts,
                     const std::vector<int32_t>& prompt, const std::vector<int32_t>& feed) {
    TracedRun r;
    opts.on_boundary = [&r](const BoundaryTrace& t) { r.traces.push_back(t); };
    auto s = Session::create(model, opts).value();
    std::vector<float> lg(model.config().n_vocab);
    EXPECT_TRUE(s.step(prompt, lg.data()).ok());
    r.logits.push_back(lg);
    for (int32_t id : feed) {
        auto st = s.step(std::span<const int32_t>(&id, 1), lg.data());
        EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message());
        if (st.ok()) r.decode_revived += st->revived;
        r.logits.push_back(lg);
    }
    return r;
}

// Schedule::revive_max, in lockstep with an unbounded session fed the same tokens: prefill is
// unchanged; the first decode step's first boundary (same S, same scores) revives exactly the
// `max` best-scored of the tokens the unbounded session revives there, and keeps the rest of
// its kept set; no decode boundary revives more than `max`; max 0 revives nothing; a bound no
// boundary reaches gives the unbounded logits bit for bit.
TEST(SessionTest, ReviveMaxRevivesOnlyTheBestScoredCandidates) {
    auto model = tiny_session_model(6, "revive_max");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab, n = 40;
    const auto prompt = ids_for(n, V, 11);
    const auto feed = ids_for(6, V, 12);
    auto run = [&](int revive_max) {
        auto opts = lazy_options({2, 4}, {0.5f, 0.25f});
        opts.schedule.revive_max = revive_max;
        return traced_run(*model, opts, prompt, feed);
    };
    const TracedRun all = run(-1);
    const int kMax = 2;
    const TracedRun bounded = run(kMax);
    ASSERT_EQ(all.traces.size(), 2u * (1 + feed.size()));
    ASSERT_EQ(bounded.traces.size(), all.traces.size());
    for (int i = 0; i < 2; ++i) {  // prefill: nothing to revive, nothing differs
        EXPECT_EQ(bounded.traces[i].kept, all.traces[i].kept);
        EXPECT_EQ(bounded.traces[i].revived, 0);
    }
    EXPECT_EQ(bounded.logits[0], all.logits[0]);

    const BoundaryTrace& a = all.traces[2];  // first decode step, boundary at layer 2
    const BoundaryTrace& b = bounded.traces[2];
    ASSERT_EQ(a.step, 1);
    ASSERT_EQ(a.layer, 2);
    ASSERT_EQ(b.S, a.S);
    ASSERT_EQ(b.scores, a.scores);
    // The unbounded revivals: the live rows but the new token (position n).
    std::vector<std::pair<float, int32_t>> revived;
    for (int32_t t : a.live) {
        if (t == n) continue;
        const auto si = std::lower_bound(a.S.begin(), a.S.end(), t) - a.S.begin();
        revived.emplace_back(a.scores[si], t);
    }
    ASSERT_EQ(static_cast<int64_t>(revived.size()), a.revived);
    ASSERT_GT(revived.size(), static_cast<size_t>(kMax)) << "the test needs more revivals";
    std::sort(revived.begin(), revived.end(), [](const auto& x, const auto& y) {
        return x.first > y.first || (x.first == y.first && x.second < y.second);
    });
    std::vector<int32_t> want_live, want_kept = a.kept;
    for (int i = 0; i < kMax; ++i) want_live.push_back(revived[i].second);
    want_live.push_back(n);
    std::sort(want_live.begin(), want_live.end());
    for (size_t i = kMax; i < revived.size(); ++i) std::erase(want_kept, revived[i].second);
    EXPECT_EQ(b.live, want_live);
    EXPECT_EQ(b.kept, want_kept);
    EXPECT_EQ(b.revived, kMax);
    for (const BoundaryTrace& t : bounded.traces)
        EXPECT_LE(t.revived, kMax) << t.step << " " << t.layer;

    for (const BoundaryTrace& t : run(0).traces)
        EXPECT_EQ(t.revived, 0) << t.step << " " << t.layer;
    int64_t most = 0;
    for (const BoundaryTrace& t : all.traces) most = std::max(most, t.revived);
    const TracedRun loose = run(static_cast<int>(most));
    EXPECT_EQ(loose.logits, all.logits);
    for (size_t i = 0; i < all.traces.size(); ++i)
        EXPECT_EQ(loose.traces[i].kept, all.traces[i].kept);
}

// Schedule::revive_weight, in lockstep with the paper's rule fed the same tokens: prefill is
// unchanged; the first decode step's first boundary selects on the same scores with those of
// the tokens prefill cut there (deferred at that layer) counted times the weight, and revives
// fewer; over the decode steps fewer tokens revive.
TEST(SessionTest, ReviveWeightKeepsComputedTokensOverDeferredOnes) {
    auto model = tiny_session_model(6, "revive_weight");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab, n = 40;
    const auto prompt = ids_for(n, V, 11);
    const auto feed = ids_for(6, V, 12);
    constexpr float kWeight = 0.25f;
    const auto opts_for = [](float weight) {
        auto opts = lazy_options({2, 4}, {0.5f, 0.25f});
        opts.schedule.revive_weight = weight;
        return opts;
    };
    const TracedRun paper = traced_run(*model, opts_for(1.0f), prompt, feed);
    const TracedRun weighted = traced_run(*model, opts_for(kWeight), prompt, feed);
    ASSERT_EQ(weighted.traces.size(), paper.traces.size());
    for (int i = 0; i < 2; ++i) EXPECT_EQ(weighted.traces[i].kept, paper.traces[i].kept);
    EXPECT_EQ(weighted.logits[0], paper.logits[0]);

    const BoundaryTrace& a = paper.traces[2];  // first decode step, boundary at layer 2
    const BoundaryTrace& b = weighted.traces[2];
    ASSERT_EQ(a.step, 1);
    ASSERT_EQ(a.layer, 2);
    ASSERT_EQ(b.S, a.S);
    const std::vector<int32_t>& prefill_kept = paper.traces[0].kept;
    std::vector<float> want = a.scores;
    for (size_t i = 0; i < a.S.size(); ++i) {
        const int32_t t = a.S[i];
        if (t != n && !std::binary_search(prefill_kept.begin(), prefill_kept.end(), t))
            want[i] *= kWeight;
    }
    EXPECT_EQ(b.scores, want);
    prune::CutScratch scratch;
    std::vector<int32_t> kept;
    prune::select_kept(opts_for(kWeight).schedule, a.S, want, 0.5f, n + 1, scratch, kept);
    EXPECT_EQ(b.kept, kept);
    EXPECT_GT(a.revived, 0) << "the test needs revivals";
    EXPECT_LT(b.revived, a.revived);
    EXPECT_LT(weighted.decode_revived, paper.decode_revived);
}

// Tokens cut at a boundary stop inside the layer before it (their K/V stored, its attention
// and FFN not run) and finish it when revived (LayerRun::cut). With one boundary the keys of
// that layer are every earlier token in any step, so a decode step that revives them all
// (--lazy-decode off) must give what running that layer for every row at prefill would: the
// reference below does so with the model alone (layers [0, b) on every prompt row, [b, L) on
// the kept ones; then the new token's layers [0, b), and [b, L) on it with the cut tokens).
TEST(SessionTest, RevivedTokensFinishTheLayerTheyStoppedIn) {
    auto model = tiny_session_model(6, "finish_layer");
    ASSERT_NE(model, nullptr);
    const ModelConfig& c = model->config();
    const int V = c.n_vocab, L = c.n_layer, b = 3, n = 24;
    const int64_t E = c.n_embd;
    std::vector<BoundaryTrace> traces;
    auto opts = lazy_options({b}, {0.4f}, /*prune_decode=*/false);
    opts.on_boundary = [&](const BoundaryTrace& t) { traces.push_back(t); };
    auto s = Session::create(*model, opts).value();
    const auto prompt = ids_for(n, V, 6);
    const auto got = run_steps(s, prompt, 1, V);
    ASSERT_EQ(traces.size(), 2u);
    const std::vector<int32_t>& kept = traces[0].kept;
    ASSERT_EQ(kept.size(), 10u);
    EXPECT_EQ(traces[1].revived, n - 10);

    KvCache kv(L, 32, c.n_head_kv, c.head_dim, model->kv_type());
    ForwardScratch scratch;
    std::vector<int32_t> pos(n + 1);
    std::iota(pos.begin(), pos.end(), 0);
    std::vector<float> h(static_cast<size_t>(n) * E), want(V);
    ASSERT_TRUE(model->embed(prompt.data(), n, h.data()).ok());
    model->forward_layers({h.data(), pos.data(), n, nullptr, n, 0, b, nullptr}, kv, scratch);
    const std::vector<float> h_b = h;  // every prompt row at layer b's input
    std::vector<float> rows;
    std::vector<int32_t> rows_pos;
    auto gather = [&](const std::vector<int32_t>& ts) {
        rows.clear();
        rows_pos.clear();
        for (int32_t t : ts) {
            rows.insert(rows.end(), h_b.begin() + t * E, h_b.begin() + (t + 1) * E);
            rows_pos.push_back(t);
        }
    };
    auto check = [&](const std::vector<float>& logits, const char* what) {
        for (int t = 0; t < V; ++t) {
            ASSERT_NEAR(logits[t], want[t], 1e-4f * (1.0f + std::abs(want[t]))) << what << " " << t;
        }
    };
    gather(kept);
    LayerRun tail{rows.data(),
                  rows_pos.data(),
                  static_cast<int64_t>(kept.size()),
                  kept.data(),
                  static_cast<int64_t>(kept.size()),
                  b,
                  L,
                  nullptr};
    tail.last_row_out = true;
    model->forward_layers(tail, kv, scratch);
    model->logits(rows.data() + (kept.size() - 1) * E, n, false, want.data(), scratch);
    check(got[0], "prefill");

    // The decode step: the new token through [0, b), then with every cut token through [b, L).
    const int32_t next = argmax(got[0]);
    std::vector<float> h_new(E);
    ASSERT_TRUE(model->embed(&next, 1, h_new.data()).ok());
    model->forward_layers({h_new.data(), pos.data() + n, 1, nullptr, n + 1, 0, b, nullptr}, kv,
                          scratch);
    std::vector<int32_t> cut;
    for (int32_t t = 0; t < n; ++t) {
        if (!std::binary_search(kept.begin(), kept.end(), t)) cut.push_back(t);
    }
    gather(cut);
    rows.insert(rows.end(), h_new.begin(), h_new.end());
    rows_pos.push_back(n);
    LayerRun rest{rows.data(), rows_pos.data(), static_cast<int64_t>(rows_pos.size()),
                  nullptr,     n + 1,           b,
                  L,           nullptr};
    rest.last_row_out = true;
    model->forward_layers(rest, kv, scratch);
    model->logits(rows.data() + (rows_pos.size() - 1) * E, 1, false, want.data(), scratch);
    check(got[1], "decode");
}

}  // namespace
}  // namespace lazyllm
