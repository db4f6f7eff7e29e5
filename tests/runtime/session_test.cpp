// The step routine (design.md 1.3) on tiny random models: keep fractions of 1.0 are the full
// path bit for bit; the invariants hold over randomized schedules and multi-step generations;
// a hand-worked case is checked set by set against a test-side model of the rules; and the
// baseline policies (static, random, gemfilter) show their defining behaviour.
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
#include "support/cpu.h"
#include "support/tiny_model.h"

namespace lazyllm {
namespace {

std::unique_ptr<LlamaModel> load_spec(const testing::TinyModelSpec& spec, const std::string& tag,
                                      kernels::GemmPrecision precision) {
    const std::string path = ::testing::TempDir() + "lazyllm_session_" + tag + ".gguf";
    EXPECT_TRUE(testing::write_tiny_model(spec, path).ok());
    ModelLoadOptions o;
    o.ctx.isa = kernels::isa_from_env().value();
    o.ctx.n_threads = 2;
    o.precision = precision;
    auto m = LlamaModel::load(path, o);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message());
    return m.ok() ? std::move(m).value() : nullptr;
}

std::unique_ptr<LlamaModel> tiny_model(
    int n_layer, const std::string& tag, uint64_t seed = 5,
    kernels::GemmPrecision precision = kernels::GemmPrecision::kF32) {
    testing::TinyModelSpec spec;
    spec.n_layer = n_layer;
    spec.seed = seed;
    spec.weight_scale = 0.2f;  // peaky attention, so scores differ clearly
    return load_spec(spec, tag, precision);
}

// Gemma 3's layer shape at test size: 9 layers, every third global (2, 5, 8), the others with
// a 6-position window.
std::unique_ptr<LlamaModel> tiny_gemma3(const std::string& tag) {
    testing::TinyModelSpec spec;
    spec.arch = "gemma3";
    spec.n_layer = 9;
    spec.n_head_kv = 1;
    spec.head_dim = 32;
    spec.sliding_window = 6;
    spec.swa_pattern = 3;
    spec.tied_embeddings = true;
    spec.weight_scale = 0.2f;
    return load_spec(spec, tag, kernels::GemmPrecision::kF32);
}

std::vector<int32_t> ids_for(int n, int n_vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> ids(n);
    for (auto& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
    return ids;
}

int32_t argmax(const std::vector<float>& v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Prefill then greedy decode steps; returns every step's logits.
std::vector<std::vector<float>> run_steps(Session& s, const std::vector<int32_t>& prompt, int n_decode,
                                          int n_vocab) {
    std::vector<std::vector<float>> out;
    std::vector<float> logits(n_vocab);
    EXPECT_TRUE(s.step(prompt, logits.data()).ok());
    out.push_back(logits);
    for (int i = 0; i < n_decode; ++i) {
        const int32_t next = argmax(logits);
        auto st = s.step(std::span<const int32_t>(&next, 1), logits.data());
        EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message());
        out.push_back(logits);
    }
    return out;
}

SessionOptions lazy_options(std::vector<int> layers, std::vector<float> keep, bool prune_decode = true) {
    SessionOptions o;
    o.n_ctx = 128;
    o.policy = prune::Policy::kLazy;
    o.schedule.boundaries = std::move(layers);
    o.schedule.keep = std::move(keep);
    o.schedule.prune_decode = prune_decode;
    o.check_invariants = true;
    return o;
}

// Both cache types: fp32 (fp32 GEMMs) and f16 (bf16 GEMMs). The lazy session reads its key
// set by row index, the full one the cache prefix: same values, same order, same bits.
TEST(SessionTest, KeepOneIsBitIdenticalToFull) {
    std::vector<kernels::GemmPrecision> precisions = {kernels::GemmPrecision::kF32};
    if (testing::cpu_has_bf16_gemm()) precisions.push_back(kernels::GemmPrecision::kBf16);
    for (kernels::GemmPrecision precision : precisions) {
        auto model = tiny_model(6, "keep1", 5, precision);
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
        const size_t bytes = static_cast<size_t>(a.n_past()) * a.kv().row_bytes();
        for (int il = 0; il < model->config().n_layer; ++il) {
            ASSERT_EQ(0, std::memcmp(a.kv().k(il), b.kv().k(il), bytes)) << "layer " << il;
            ASSERT_EQ(0, std::memcmp(a.kv().v(il), b.kv().v(il), bytes)) << "layer " << il;
        }
        EXPECT_DOUBLE_EQ(b.prompt_fraction_computed(), 1.0);
    }
}

// Randomized schedules and generations with check_invariants on (a broken invariant aborts):
// {t in S : d_t <= l} == live at each stage, Aux slot for every 0 < d_t < L, current token in S,
// no (token, layer) pair computed twice; and total work never above full.
TEST(SessionTest, InvariantsHoldOverRandomSchedules) {
    auto model = tiny_model(8, "random_sched");
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
    auto model = tiny_gemma3("gemma3_sessions");
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
    auto model = tiny_model(6, "hand");
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

// Score shaping (prune::Schedule::score_layers / score_pool). With keep 1.0 nothing is cut, so
// every run computes the same hidden states and a boundary at layer b traces layer b-1's scores.
std::vector<BoundaryTrace> prefill_traces(const LlamaModel& model, std::vector<int> layers,
                                          std::vector<float> keep, int score_layers,
                                          int score_pool, const std::vector<int32_t>& prompt) {
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
    auto model = tiny_model(6, "score_layers");
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
    auto model = tiny_model(6, "score_pool");
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
    auto model = tiny_model(6, "decode_off");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab;
    auto s = Session::create(*model, lazy_options({2, 4}, {0.5f, 0.25f}, /*prune_decode=*/false)).value();
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
    auto model = tiny_model(6, "decode_frozen");
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
    auto model = tiny_model(6, "min_context");
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
    auto model = tiny_model(6, "keep_recent");
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
        const int64_t want = prune::keep_count(t.layer == 2 ? 0.3 : 0.2, n_total,
                                               static_cast<int64_t>(t.S.size()));
        EXPECT_EQ(static_cast<int64_t>(t.kept.size()),
                  std::min<int64_t>(want + recent, static_cast<int64_t>(t.S.size())));
    }
}

// Schedule::revive_max, in lockstep with an unbounded session fed the same tokens: prefill is
// unchanged; the first decode step's first boundary (same S, same scores) revives exactly the
// `max` best-scored of the tokens the unbounded session revives there, and keeps the rest of
// its kept set; no decode boundary revives more than `max`; max 0 revives nothing; a bound no
// boundary reaches gives the unbounded logits bit for bit.
TEST(SessionTest, ReviveMaxRevivesOnlyTheBestScoredCandidates) {
    auto model = tiny_model(6, "revive_max");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab, n = 40;
    const auto prompt = ids_for(n, V, 11);
    const auto feed = ids_for(6, V, 12);
    struct Run {
        std::vector<BoundaryTrace> traces;
        std::vector<std::vector<float>> logits;
    };
    auto run = [&](int revive_max) {
        Run r;
        auto opts = lazy_options({2, 4}, {0.5f, 0.25f});
        opts.schedule.revive_max = revive_max;
        opts.on_boundary = [&r](const BoundaryTrace& t) { r.traces.push_back(t); };
        auto s = Session::create(*model, opts).value();
        std::vector<float> lg(V);
        EXPECT_TRUE(s.step(prompt, lg.data()).ok());
        r.logits.push_back(lg);
        for (int32_t id : feed) {
            auto st = s.step(std::span<const int32_t>(&id, 1), lg.data());
            EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message());
            r.logits.push_back(lg);
        }
        return r;
    };
    const Run all = run(-1);
    const int kMax = 2;
    const Run bounded = run(kMax);
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
    for (const BoundaryTrace& t : bounded.traces) EXPECT_LE(t.revived, kMax) << t.step << " " << t.layer;

    for (const BoundaryTrace& t : run(0).traces) EXPECT_EQ(t.revived, 0) << t.step << " " << t.layer;
    int64_t most = 0;
    for (const BoundaryTrace& t : all.traces) most = std::max(most, t.revived);
    const Run loose = run(static_cast<int>(most));
    EXPECT_EQ(loose.logits, all.logits);
    for (size_t i = 0; i < all.traces.size(); ++i) EXPECT_EQ(loose.traces[i].kept, all.traces[i].kept);
}

// Tokens cut at a boundary stop inside the layer before it (their K/V stored, its attention
// and FFN not run) and finish it when revived (LayerRun::cut). With one boundary the keys of
// that layer are every earlier token in any step, so a decode step that revives them all
// (--lazy-decode off) must give what running that layer for every row at prefill would: the
// reference below does so with the model alone (layers [0, b) on every prompt row, [b, L) on
// the kept ones; then the new token's layers [0, b), and [b, L) on it with the cut tokens).
TEST(SessionTest, RevivedTokensFinishTheLayerTheyStoppedIn) {
    auto model = tiny_model(6, "finish_layer");
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

    KvCache kv(L, 32, c.n_embd_kv(), model->kv_type());
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
    LayerRun tail{rows.data(), rows_pos.data(), static_cast<int64_t>(kept.size()), kept.data(),
                  static_cast<int64_t>(kept.size()), b, L, nullptr};
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
    LayerRun rest{rows.data(), rows_pos.data(), static_cast<int64_t>(rows_pos.size()), nullptr,
                  n + 1, b, L, nullptr};
    rest.last_row_out = true;
    model->forward_layers(rest, kv, scratch);
    model->logits(rows.data() + (rows_pos.size() - 1) * E, 1, false, want.data(), scratch);
    check(got[1], "decode");
}

TEST(SessionTest, StaticPrunesOnceAndNeverRevives) {
    auto model = tiny_model(6, "static");
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
    std::set_difference(pre.S.begin(), pre.S.end(), pre.kept.begin(), pre.kept.end(), std::back_inserter(pruned));
    EXPECT_EQ(pruned.size(), 8u);
    for (size_t i = 1; i < traces.size(); ++i) {
        EXPECT_TRUE(traces[i].scores.empty()) << "no re-scoring after prefill";
        EXPECT_EQ(traces[i].revived, 0);
        for (int32_t t : pruned) {
            EXPECT_FALSE(std::binary_search(traces[i].kept.begin(), traces[i].kept.end(), t)) << "token " << t << " came back";
        }
    }
    for (int32_t t : pruned) EXPECT_EQ(s.depth()[t], 2);
}

TEST(SessionTest, RandomDropsSeededTokensBeforeInference) {
    auto model = tiny_model(4, "random");
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
            if (s.depth()[t] == 0) d.push_back(t);
            else EXPECT_EQ(s.depth()[t], 4);
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
    auto model = tiny_model(6, "gemfilter");
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
        if (s.depth()[t] == 6) kept.push_back(t);
        else EXPECT_EQ(s.depth()[t], 2);
    }
    ASSERT_EQ(kept.size(), 12u);
    EXPECT_EQ(st.rows_per_layer, (std::vector<int32_t>{36, 36, 12, 12, 12, 12}));
    // Same logits as running the model on the kept tokens alone at their original positions.
    std::vector<int32_t> kept_ids;
    for (int32_t t : kept) kept_ids.push_back(prompt[t]);
    KvCache kv(c.n_layer, 32, c.n_embd_kv(), model->kv_type());
    ForwardScratch scratch;
    std::vector<float> h(kept.size() * static_cast<size_t>(c.n_embd)), want(c.n_vocab);
    ASSERT_TRUE(model->embed(kept_ids.data(), static_cast<int64_t>(kept.size()), h.data()).ok());
    LayerRun run{h.data(), kept.data(), static_cast<int64_t>(kept.size()), kept.data(),
                 static_cast<int64_t>(kept.size()), 0, c.n_layer, nullptr};
    run.last_row_out = true;  // as every step runs its last layer
    model->forward_layers(run, kv, scratch);
    model->logits(h.data() + (kept.size() - 1) * c.n_embd, 24, false, want.data(), scratch);
    EXPECT_EQ(0, std::memcmp(want.data(), logits.data(), want.size() * sizeof(float)));
}

// A step's last layer runs Wo, the FFN and attention for the last row only (its only output
// is that row's logits), and QKV for every row (the K/V cache needs them); so does the layer
// before a lazy boundary for the rows cut there (LayerRun::cut): the profile's FLOP counts say
// which rows each op ran on.
TEST(SessionTest, LastLayerRunsTheLastRowOnly) {
    auto model = tiny_model(4, "last_row");
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
            KvCache kv(c.n_layer, 128, c.n_embd_kv(), model->kv_type());
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
    auto model = tiny_model(4, "errors");
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
}

}  // namespace
}  // namespace lazyllm
