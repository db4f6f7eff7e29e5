// Session::step_batch (continuous batching in `lazyllm serve`): the decode steps of several
// full-policy sessions as one forward give each session what its own one-token step gives,
// logits bit for bit (the same kernels on the same rows) and state alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "kernels/qgemv.h"
#include "model/llama_model.h"
#include "runtime/session.h"
#include "support/cpu.h"
#include "support/tiny_model.h"

namespace lazyllm {
namespace {

bool has_quantized_decode() {
    kernels::KernelContext kctx;
    kctx.isa = kernels::isa_from_env().value();
    return kernels::QuantLinear::has_fast_path(kctx);
}

// A tiny random model on the quantized decode weights (the batched step's path).
std::unique_ptr<LlamaModel> tiny_model(int n_layer, uint64_t seed, const char* name) {
    testing::TinyModelSpec spec;
    spec.n_layer = n_layer;
    spec.seed = seed;
    const std::string path = ::testing::TempDir() + name;
    if (!testing::write_tiny_model(spec, path).ok()) return nullptr;
    ModelLoadOptions o;
    o.ctx.isa = testing::model_load_isa();
    o.ctx.n_threads = 2;
    auto loaded = LlamaModel::load(path, o);
    if (!loaded.ok() || !(*loaded)->quantized_decode()) return nullptr;
    return std::move(*loaded);
}

TEST(SessionBatch, EqualsEachSessionAlone) {
    if (!has_quantized_decode()) GTEST_SKIP() << "no quantized decode path";
    auto loaded = tiny_model(3, 3, "lazyllm_batch.gguf");
    ASSERT_NE(loaded, nullptr);
    const LlamaModel& model = *loaded;
    const int V = model.config().n_vocab;
    SessionOptions so;
    so.n_ctx = 64;
    so.check_invariants = true;
    // 12 slots where one forward takes them (the AMX limit of 16: the VNNI kernels' passes over
    // more than 8 rows), else as many as one forward takes.
    const int kN = static_cast<int>(std::min<int64_t>(12, model.quant_max_rows()));
    std::vector<Session> batched, alone;
    std::mt19937 rng(5);
    std::vector<float> logits(static_cast<size_t>(V));
    for (int i = 0; i < kN; ++i) {
        std::vector<int32_t> prompt(static_cast<size_t>(5 + 4 * i));
        for (auto& t : prompt) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(V));
        batched.push_back(Session::create(model, so).value());
        alone.push_back(Session::create(model, so).value());
        ASSERT_TRUE(batched.back().step(prompt, logits.data()).ok());
        ASSERT_TRUE(alone.back().step(prompt, logits.data()).ok());
    }
    std::vector<Session*> ptrs;
    for (auto& s : batched) ptrs.push_back(&s);
    std::vector<float> out(static_cast<size_t>(kN) * V);
    for (int step = 0; step < 4; ++step) {
        std::vector<int32_t> tokens(kN);
        for (auto& t : tokens) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(V));
        for (auto* s : ptrs) ASSERT_TRUE(s->batchable());
        ASSERT_TRUE(Session::step_batch(ptrs, tokens, out.data()).ok());
        for (int i = 0; i < kN; ++i) {
            ASSERT_TRUE(alone[i].step(std::span<const int32_t>(&tokens[i], 1), logits.data()).ok());
            float max_diff = 0.0f;
            for (int v = 0; v < V; ++v) max_diff = std::max(max_diff, std::fabs(out[i * V + v] - logits[v]));
            EXPECT_EQ(max_diff, 0.0f) << "session " << i << ", step " << step;
            EXPECT_EQ(batched[i].n_past(), alone[i].n_past());
            EXPECT_EQ(batched[i].tokens(), alone[i].tokens());
            EXPECT_EQ(batched[i].depth(), alone[i].depth());
            EXPECT_EQ(batched[i].total_token_layers(), alone[i].total_token_layers());
        }
    }
    // A lazy session whose decode steps select is not batchable; a mismatch is an error, not a
    // crash.
    SessionOptions lazy = so;
    lazy.policy = prune::Policy::kLazy;
    lazy.schedule.boundaries = {1};
    lazy.schedule.keep = {0.5f};
    lazy.schedule.prune_decode = true;
    auto l = Session::create(model, lazy).value();
    ASSERT_TRUE(l.step(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, logits.data()).ok());
    EXPECT_FALSE(l.batchable());
    ASSERT_TRUE(l.step(std::vector<int32_t>{7}, logits.data()).ok());
    EXPECT_FALSE(l.batchable());
    Session* two[] = {ptrs[0], &l};
    const int32_t toks[] = {1, 2};
    EXPECT_FALSE(Session::step_batch(two, toks, out.data()).ok());
}

void lazy_session_joins_once_nothing_waits(bool repair) {
    auto loaded = tiny_model(4, 4, "lazyllm_batch_lazy.gguf");
    ASSERT_NE(loaded, nullptr);
    const LlamaModel& model = *loaded;
    const int V = model.config().n_vocab;
    SessionOptions full;
    full.n_ctx = 64;
    full.check_invariants = true;
    SessionOptions safe = full;
    safe.policy = prune::Policy::kLazy;
    safe.schedule.boundaries = {1, 3};
    safe.schedule.keep = {0.5f, 0.25f};
    safe.schedule.prune_decode = false;
    safe.schedule.repair = repair;
    std::mt19937 rng(7);
    std::vector<int32_t> prompt(24);
    for (auto& t : prompt) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(V));
    std::vector<float> logits(static_cast<size_t>(V));
    auto f = Session::create(model, full).value();
    auto lz = Session::create(model, safe).value();
    auto lz_alone = Session::create(model, safe).value();
    ASSERT_TRUE(f.step(prompt, logits.data()).ok());
    ASSERT_TRUE(lz.step(prompt, logits.data()).ok());
    ASSERT_TRUE(lz_alone.step(prompt, logits.data()).ok());
    ASSERT_LT(lz.prompt_fraction_computed(), 1.0);  // the prompt step deferred tokens
    EXPECT_FALSE(lz.batchable());
    EXPECT_EQ(lz.repair_pending(), repair);
    EXPECT_EQ(lz.aux_bytes() == 0, repair) << "repair keeps no Aux slots";
    const int32_t first = 5;
    auto st = lz.step(std::span<const int32_t>(&first, 1), logits.data());
    ASSERT_TRUE(st.ok());
    EXPECT_GT(st->revived, 0);
    EXPECT_EQ(st->repaired > 0, repair);
    ASSERT_TRUE(lz_alone.step(std::span<const int32_t>(&first, 1), logits.data()).ok());
    ASSERT_TRUE(f.step(std::span<const int32_t>(&first, 1), logits.data()).ok());
    EXPECT_TRUE(lz.batchable());
    Session* ptrs[] = {&f, &lz};
    std::vector<float> out(static_cast<size_t>(2) * V);
    for (int step = 0; step < 3; ++step) {
        const int32_t toks[] = {static_cast<int32_t>(rng() % static_cast<uint32_t>(V)),
                                static_cast<int32_t>(rng() % static_cast<uint32_t>(V))};
        ASSERT_TRUE(Session::step_batch(ptrs, toks, out.data()).ok());
        auto a = lz_alone.step(std::span<const int32_t>(&toks[1], 1), logits.data());
        ASSERT_TRUE(a.ok());
        EXPECT_EQ(a->revived, 0);
        float max_diff = 0.0f;
        for (int v = 0; v < V; ++v) max_diff = std::max(max_diff, std::fabs(out[V + v] - logits[v]));
        EXPECT_EQ(max_diff, 0.0f) << "step " << step;
        EXPECT_EQ(lz.depth(), lz_alone.depth());
        EXPECT_EQ(lz.total_token_layers(), lz_alone.total_token_layers());
        EXPECT_EQ(lz.prompt_fraction_computed(), lz_alone.prompt_fraction_computed());
    }
}

// LazyLLM with decode steps that do not select (the safe preset): after the prompt step tokens
// wait in Aux slots (or for the repair), so the session steps alone; once its first decode
// step has revived (repaired) them, every later step is the full step and joins the batch, bit
// for bit what it gives alone.
TEST(SessionBatch, LazySessionJoinsOnceNothingWaits) {
    if (!has_quantized_decode()) GTEST_SKIP() << "no quantized decode path";
    for (bool repair : {false, true}) {
        SCOPED_TRACE(repair ? "repair" : "revival");
        lazy_session_joins_once_nothing_waits(repair);
    }
}

}  // namespace
}  // namespace lazyllm
