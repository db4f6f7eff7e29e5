// The step routine (design.md 1.3) on tiny random models: keep fractions of 1.0 are the full
// path bit for bit; the invariants hold over randomized schedules and multi-step generations;
// a hand-worked case is checked set by set against a test-side model of the rules; the last
// layer runs the last row only; bad schedules and inputs are refused. The schedule's options:
// session_options_test.cpp; the baseline policies: session_baselines_test.cpp.
#include "runtime/session.h"

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
#include "runtime/session_fixture.h"
#include "support/cpu.h"
#include "support/kv_rows.h"

namespace lazyllm {
namespace {

using testing::argmax;
using testing::ids_for;
using testing::lazy_options;
using testing::run_steps;
using testing::tiny_gemma3_session_model;
using testing::tiny_session_model;

// Both cache types: fp32 (fp32 GEMMs) and f16 (bf16 GEMMs). The lazy session reads its key
// set by row index, the full one the cache prefix: same values, same order, same bits.
TEST(SessionTest, KeepOneIsBitIdenticalToFull) {
    std::vector<kernels::GemmPrecision> precisions = {kernels::GemmPrecision::kF32};
    if (testing::cpu_has_bf16_gemm()) precisions.push_back(kernels::GemmPrecision::kBf16);
    for (kernels::GemmPrecision precision : precisions) {
        auto model = tiny_session_model(6, "keep1", 5, precision);
        ASSERT_NE(model, nullptr);
        const kernels::KvType type = model->kv_type();
        const int V = model->config().n_vocab;
        const auto prompt = ids_for(33, V, 1);
        SessionOptions full;
        full.n_ctx = 128;
        auto a = Session::create(*model, full).value();
        auto b = Session::create(*model, lazy_options({2, 4}, {1.0f, 1.0f})).value();
        ASSERT_EQ(a.kv().type(), type);
        ASSERT_EQ(b.kv().type(), type);
        const auto la = run_steps(a, prompt, 5, V);
        const auto lb = run_steps(b, prompt, 5, V);
        ASSERT_EQ(la.size(), lb.size());
        for (size_t i = 0; i < la.size(); ++i) {
            ASSERT_EQ(0, std::memcmp(la[i].data(), lb[i].data(), la[i].size() * sizeof(float)))
                << "step " << i << ", kv type " << static_cast<int>(type);
        }
        for (int il = 0; il < model->config().n_layer; ++il) {
            ASSERT_TRUE(testing::same_kv_rows(a.kv(), b.kv(), il, a.n_past())) << "layer " << il;
        }
        EXPECT_DOUBLE_EQ(b.prompt_fraction_computed(), 1.0);
    }
}

// Randomized schedules and generations with check_invariants on (a broken invariant aborts):
// {t in S : d_t <= l} == live at each stage, Aux slot for every 0 < d_t < L, current token in S,
// no (token, layer) pair computed twice; and total work never above full.
TEST(SessionTest, InvariantsHoldOverRandomSchedules) {
    auto model = tiny_session_model(8, "random_sched");
    ASSERT_NE(model, nullptr);
    const int L = model->config().n_layer;
    const int V = model->config().n_vocab;
    std::mt19937 rng(42);
    for (int trial = 0; trial < 40; ++trial) {
        const int n_bounds = 1 + static_cast<int>(rng() % 4);
        std::set<int> layer_set;
        while (static_cast<int>(layer_set.size()) < n_bounds) layer_set.insert(1 + static_cast<int>(rng() % (L - 1)));
        std::vector<int> layers(layer_set.begin(), layer_set.end());
        std::vector<float> keep;
        float k = 1.0f;
        for (int j = 0; j < n_bounds; ++j) {
            k *= 0.3f + 0.7f * static_cast<float>(rng() % 1000) / 1000.0f;
            keep.push_back(std::max(k, 0.01f));
        }
        auto opts = lazy_options(layers, keep, rng() % 3 != 0);
        opts.schedule.keep_first = static_cast<int>(rng() % 3);
        opts.schedule.score_layers = 1 + static_cast<int>(rng() % 3);
        opts.schedule.score_pool = 1 + 2 * static_cast<int>(rng() % 3);
        auto s = Session::create(*model, opts).value();
        const int n_prompt = 2 + static_cast<int>(rng() % 50);
        const int n_decode = 1 + static_cast<int>(rng() % 8);
        run_steps(s, ids_for(n_prompt, V, trial), n_decode, V);
        const int64_t n_total = n_prompt + n_decode;
        EXPECT_LE(s.total_token_layers(), n_total * L);
        for (int64_t t = 0; t < n_total; ++t) {
            EXPECT_GE(s.depth()[t], 0);
            EXPECT_LE(s.depth()[t], L);
        }
        EXPECT_EQ(s.depth()[n_total - 1], L) << "the current token reaches the last layer";
        EXPECT_LE(s.prompt_fraction_computed(), 1.0);
    }
}

// Sliding-window layers: keep 1.0 is full bit for bit; random keep fractions and decode steps
// that prune and revive keep every invariant (check_invariants) with the windows in force
// (prompts far longer than the window); a boundary whose stage scores on local layers only is
// refused, naming the global layers.
TEST(SessionTest, SlidingWindowModelKeepsTheInvariants) {
    auto model = tiny_gemma3_session_model("gemma3_sessions");
    ASSERT_NE(model, nullptr);
    ASSERT_TRUE(model->config().is_swa(0) && !model->config().is_swa(2));
    const int V = model->config().n_vocab;
    const int L = model->config().n_layer;
    const auto prompt = ids_for(40, V, 3);
    SessionOptions full;
    full.n_ctx = 128;
    auto a = Session::create(*model, full).value();
    auto b = Session::create(*model, lazy_options({3, 6}, {1.0f, 1.0f})).value();
    const auto la = run_steps(a, prompt, 4, V);
    const auto lb = run_steps(b, prompt, 4, V);
    for (size_t i = 0; i < la.size(); ++i) {
        ASSERT_EQ(0, std::memcmp(la[i].data(), lb[i].data(), la[i].size() * sizeof(float))) << i;
    }
    std::mt19937 rng(7);
    for (int trial = 0; trial < 12; ++trial) {
        const float k1 = 0.3f + 0.6f * static_cast<float>(rng() % 100) / 100.0f;
        auto opts = lazy_options({3, 6}, {k1, k1 * 0.5f}, trial % 2 == 0);
        opts.schedule.score_layers = 1 + static_cast<int>(rng() % 3);
        auto s = Session::create(*model, opts).value();
        run_steps(s, ids_for(20 + static_cast<int>(rng() % 40), V, 100 + trial), 6, V);
        EXPECT_LE(s.total_token_layers(), static_cast<int64_t>(s.n_past()) * L);
        EXPECT_LT(s.prompt_fraction_computed(), 1.0 + 1e-9);
    }
    auto bad = Session::create(*model, lazy_options({4, 6}, {0.5f, 0.3f}));
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("global layer (2, 5, 8)"), std::string::npos)
        << bad.error().message();
    auto wide = lazy_options({4, 6}, {0.5f, 0.3f});
    wide.schedule.score_layers = 2;  // layers 2..3 for the boundary at 4
    EXPECT_TRUE(Session::create(*model, wide).ok());
}

// A test-side model of the rules (design.md 1.2-1.3), fed with the engine's scores, predicts
// every boundary's kept set and live set and the final depths.
struct RuleModel {
    int L;
    std::vector<int> bounds;
    std::vector<float> keep;
    std::vector<int> depth;

    std::vector<int32_t> top(const std::vector<int32_t>& S, const std::vector<float>& scores, float k,
                             int64_t n_total) const {
        int64_t n_keep = static_cast<int64_t>(std::ceil(static_cast<double>(k) * static_cast<double>(n_total)));
        n_keep = std::clamp<int64_t>(n_keep, 1, static_cast<int64_t>(S.size()));
        std::vector<size_t> order(S.size());
        std::iota(order.begin(), order.end(), 0);
        const int32_t last = static_cast<int32_t>(n_total - 1);
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
            const bool la = S[a] == last, lb = S[b] == last;
            if (la != lb) return la;
            return scores[a] > scores[b];  // stable: lower position first on ties
        });
        std::vector<int32_t> kept;
        for (int64_t i = 0; i < n_keep; ++i) kept.push_back(S[order[static_cast<size_t>(i)]]);
        std::sort(kept.begin(), kept.end());
        return kept;
    }
};

TEST(SessionTest, HandWorkedPrefillAndTwoDecodeSteps) {
    auto model = tiny_session_model(6, "hand");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab;
    std::vector<BoundaryTrace> traces;
    auto opts = lazy_options({2, 4}, {0.7f, 0.5f});
    opts.on_boundary = [&](const BoundaryTrace& t) { traces.push_back(t); };
    auto s = Session::create(*model, opts).value();
    RuleModel rm{6, {2, 4}, {0.7f, 0.5f}, std::vector<int>(16, 0)};
    std::vector<float> logits(V);
    size_t bi = 0;  // next trace to check

    auto check_step = [&](int64_t step, int64_t n_total, std::vector<int32_t> live,
                          const std::vector<int>& expect_rows, const StepStats& st) {
        // live: tokens of this step (prefill: all; decode: the new one)
        for (int32_t t : live) rm.depth[t] = 0;
        std::vector<int32_t> S(n_total);
        std::iota(S.begin(), S.end(), 0);
        int start = 0;
        std::vector<int> rows(6, 0);
        for (size_t j = 0; j <= rm.bounds.size(); ++j) {
            const int end = j < rm.bounds.size() ? rm.bounds[j] : rm.L;
            if (j > 0) {
                const BoundaryTrace& tr = traces.at(bi++);
                ASSERT_EQ(tr.step, step);
                ASSERT_EQ(tr.layer, start);
                ASSERT_EQ(tr.S, S) << "candidate set at layer " << start;
                const auto kept = rm.top(S, tr.scores, rm.keep[j - 1], n_total);
                ASSERT_EQ(tr.kept, kept) << "kept set at layer " << start;
                std::vector<int32_t> next_live;
                int64_t revived = 0;
                for (int32_t t : kept) {
                    if (rm.depth[t] == start) {
                        next_live.push_back(t);
                        if (std::find(live.begin(), live.end(), t) == live.end()) ++revived;
                    }
                }
                ASSERT_EQ(tr.live, next_live) << "live set at layer " << start;
                ASSERT_EQ(tr.revived, revived);
                S = kept;
                live = next_live;
            }
            for (int32_t t : live) rm.depth[t] = end;
            for (int l = start; l < end; ++l) rows[l] = static_cast<int>(live.size());
            start = end;
        }
        EXPECT_EQ(std::vector<int32_t>(rows.begin(), rows.end()), st.rows_per_layer);
        if (!expect_rows.empty()) {
            EXPECT_EQ(rows, expect_rows);
        }
        for (int64_t t = 0; t < n_total; ++t) EXPECT_EQ(s.depth()[t], rm.depth[t]) << "depth of token " << t;
    };

    const auto prompt = ids_for(10, V, 9);
    auto st0 = s.step(prompt, logits.data()).value();
    std::vector<int32_t> all(10);
    std::iota(all.begin(), all.end(), 0);
    // 10 tokens; keep ceil(0.7*10) = 7 after layer 2 and ceil(0.5*10) = 5 after layer 4.
    check_step(0, 10, all, {10, 10, 7, 7, 5, 5}, st0);
    EXPECT_EQ(st0.token_layers, 44);  // design.md's worked example: 44 of 60

    for (int step = 1; step <= 2; ++step) {
        const int32_t next = argmax(logits);
        auto st = s.step(std::span<const int32_t>(&next, 1), logits.data()).value();
        // 11 then 12 tokens: keep ceil(0.7 n) then ceil(0.5 n); rows depend on revivals.
        check_step(step, 10 + step, {static_cast<int32_t>(9 + step)}, {}, st);
        EXPECT_EQ(st.rows_per_layer[0], 1);
        EXPECT_EQ(st.rows_per_layer[1], 1);
    }
    EXPECT_EQ(traces.size(), 6u);
}

// A step's last layer runs Wo, the FFN and attention for the last row only (its only output
// is that row's logits), and QKV for every row (the K/V cache needs them); so does the layer
// before a lazy boundary for the rows cut there (LayerRun::cut): the profile's FLOP counts say
// which rows each op ran on.
TEST(SessionTest, LastLayerRunsTheLastRowOnly) {
    auto model = tiny_session_model(4, "last_row");
    ASSERT_NE(model, nullptr);
    const ModelConfig& c = model->config();
    const double E = c.n_embd, Q = c.n_embd_q(), F = c.n_ff, QKV = c.n_qkv();
    const int V = c.n_vocab;
    const auto prompt = ids_for(40, V, 3);
    SessionOptions full;
    full.n_ctx = 128;
    full.profile = true;
    SessionOptions lazy = lazy_options({2}, {0.5f});
    lazy.profile = true;
    for (const SessionOptions& o : {full, lazy}) {
        auto s = Session::create(*model, o).value();
        std::vector<float> logits(V);
        auto st = s.step(prompt, logits.data());
        ASSERT_TRUE(st.ok());
        // Rows per layer, and the rows that ran Wo / FFN: all but the last layer's and, in
        // lazy, the layer before the boundary's (the 20 kept of 40).
        const bool lazy = o.policy == prune::Policy::kLazy;
        double rows = 0.0, rows_out = 0.0;
        for (int il = 0; il < c.n_layer; ++il) {
            rows += st->rows_per_layer[il];
            const double want_out = il + 1 == c.n_layer ? 1.0
                                    : lazy && il == 1   ? 20.0
                                                        : st->rows_per_layer[il];
            EXPECT_EQ(st->tail_rows_per_layer[il], want_out) << il;
            rows_out += want_out;
        }
        EXPECT_EQ(st->rows_per_layer[1], 40);
        const auto flops = [&](OpKind k) { return s.profile().flops[static_cast<size_t>(k)]; };
        const std::string what = prune::policy_name(o.policy).data();
        EXPECT_DOUBLE_EQ(flops(OpKind::kQkv), 2.0 * E * QKV * rows) << what;
        EXPECT_DOUBLE_EQ(flops(OpKind::kAttnOut), 2.0 * Q * E * rows_out) << what;
        EXPECT_DOUBLE_EQ(flops(OpKind::kDown), 2.0 * F * E * rows_out) << what;
        EXPECT_GT(st->rows_per_layer[c.n_layer - 1], 1);
        // The last row's logits equal a forward that runs every row of every layer.
        if (o.policy == prune::Policy::kFull) {
            std::vector<float> h(prompt.size() * c.n_embd), want(V);
            KvCache kv(c.n_layer, 128, c.n_head_kv, c.head_dim, model->kv_type());
            ForwardScratch scratch;
            std::vector<int32_t> pos(prompt.size());
            std::iota(pos.begin(), pos.end(), 0);
            ASSERT_TRUE(model->embed(prompt.data(), 40, h.data()).ok());
            LayerRun run{h.data(), pos.data(), 40, nullptr, 40, 0, c.n_layer, nullptr};
            model->forward_layers(run, kv, scratch);
            model->logits(h.data() + 39 * c.n_embd, 40, false, want.data(), scratch);
            for (int t = 0; t < V; ++t) {
                ASSERT_NEAR(logits[t], want[t], 1e-4f * (1.0f + std::abs(want[t]))) << t;
            }
        }
    }
}

TEST(SessionTest, ErrorsAreClear) {
    auto model = tiny_session_model(4, "errors");
    ASSERT_NE(model, nullptr);
    SessionOptions bad = lazy_options({3, 2}, {0.5f, 0.2f});
    auto r = Session::create(*model, bad);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("boundary"), std::string::npos);
    SessionOptions big;
    big.n_ctx = 1 << 20;
    EXPECT_FALSE(Session::create(*model, big).ok());
    SessionOptions small;
    small.n_ctx = 8;
    auto s = Session::create(*model, small).value();
    std::vector<float> logits(model->config().n_vocab);
    auto over = s.step(ids_for(9, model->config().n_vocab, 1), logits.data());
    ASSERT_FALSE(over.ok());
    EXPECT_NE(over.error().message().find("context"), std::string::npos);
    EXPECT_FALSE(s.step({}, logits.data()).ok());
    // A revival bound without pruning in decode steps would do nothing: refused.
    SessionOptions no_decode = lazy_options({2}, {0.5f}, /*prune_decode=*/false);
    no_decode.schedule.revive_max = 4;
    auto nd = Session::create(*model, no_decode);
    ASSERT_FALSE(nd.ok());
    EXPECT_NE(nd.error().message().find("revive_max 4 needs pruning in decode steps"),
              std::string::npos)
        << nd.error().message();
    no_decode.schedule.revive_max = -1;
    EXPECT_TRUE(Session::create(*model, no_decode).ok());
    no_decode.schedule.revive_max = 0;  // never revive: allowed
    EXPECT_TRUE(Session::create(*model, no_decode).ok());
    no_decode.schedule.revive_max = -1;
    no_decode.schedule.revive_weight = 0.25f;  // weighs a selection that never happens
    auto nw = Session::create(*model, no_decode);
    ASSERT_FALSE(nw.ok());
    EXPECT_NE(nw.error().message().find("revive_weight 0.25 needs pruning in decode steps"),
              std::string::npos)
        << nw.error().message();
}

}  // namespace
}  // namespace lazyllm
