// Schedule::repair on tiny random models: the step after a pruned prompt step recomputes that
// step's tokens from its first boundary on, so from then on the K/V cache, the logits and the
// repaired prompt's own last logits are full's bit for bit (fp32 and bf16 GEMMs); a new turn
// is repaired the same way; truncation shortens what is repaired; and the schedule refuses
// repair beside decode steps that select or never revive.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "prune/schedule.h"
#include "runtime/session.h"
#include "runtime/session_fixture.h"
#include "support/cpu.h"
#include "support/kv_rows.h"

namespace lazyllm {
namespace {

using testing::argmax;
using testing::ids_for;
using testing::lazy_options;
using testing::tiny_session_model;

std::vector<kernels::GemmPrecision> precisions() {
    std::vector<kernels::GemmPrecision> p = {kernels::GemmPrecision::kF32};
    if (testing::cpu_has_bf16_gemm()) p.push_back(kernels::GemmPrecision::kBf16);
    return p;
}

SessionOptions repair_options() {
    SessionOptions o = lazy_options({3, 6}, {0.4f, 0.2f}, /*prune_decode=*/false);
    o.schedule.repair = true;
    o.repair_logits = true;
    return o;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// K/V rows [0, n) of every layer.
void expect_same_cache(const Session& a, const Session& b, int64_t n, const std::string& what) {
    for (int il = 0; il < a.kv().n_layer(); ++il) {
        EXPECT_TRUE(testing::same_kv_rows(a.kv(), b.kv(), il, n)) << what << ", layer " << il;
    }
}

// One step of `tokens` on both sessions; returns their logits.
std::pair<std::vector<float>, std::vector<float>> step_both(Session& full, Session& lazy,
                                                            const std::vector<int32_t>& tokens,
                                                            StepTokens kind, int n_vocab,
                                                            StepStats* lazy_stats = nullptr) {
    std::vector<float> a(static_cast<size_t>(n_vocab)), b(a.size());
    auto sa = full.step(tokens, a.data(), kind);
    auto sb = lazy.step(tokens, b.data(), kind);
    EXPECT_TRUE(sa.ok() && sb.ok());
    if (lazy_stats != nullptr && sb.ok()) *lazy_stats = *sb;
    return {a, b};
}

// A tiny model with a full session and a repairing lazy one over it.
struct FullAndLazy {
    std::unique_ptr<LlamaModel> model;
    Session full, lazy;
    int n_vocab = 0;
};

FullAndLazy full_and_lazy(const std::string& tag,
                          kernels::GemmPrecision precision = kernels::GemmPrecision::kF32) {
    auto model = tiny_session_model(8, tag, 5, precision);
    EXPECT_NE(model, nullptr);
    SessionOptions fo;
    fo.n_ctx = 128;
    Session full = Session::create(*model, fo).value();
    Session lazy = Session::create(*model, repair_options()).value();
    const int V = model->config().n_vocab;
    return {std::move(model), std::move(full), std::move(lazy), V};
}

TEST(SessionRepairTest, AfterTheFirstTokenEverythingIsFullsBitForBit) {
    for (kernels::GemmPrecision precision : precisions()) {
        auto [model, full, lazy, V] = full_and_lazy("repair", precision);
        const int L = model->config().n_layer;
        const auto prompt = ids_for(40, V, 3);

        auto [f0, l0] = step_both(full, lazy, prompt, StepTokens::kPrompt, V);
        ASSERT_FALSE(same_bits(f0, l0)) << "the cuts must change the prefill for this test";
        ASSERT_TRUE(lazy.repair_pending());
        ASSERT_LT(lazy.prompt_fraction_computed(), 1.0);
        EXPECT_EQ(lazy.aux_bytes(), 0u) << "repair reads no Aux slot, so it keeps none";
        EXPECT_TRUE(lazy.repaired_logits().empty());

        // Both continue with full's tokens: every step from here is full's.
        int32_t next = argmax(f0);
        int64_t repaired = 0;
        for (int i = 0; i < 4; ++i) {
            StepStats st;
            auto [f, l] = step_both(full, lazy, {next}, StepTokens::kGenerated, V, &st);
            EXPECT_TRUE(same_bits(f, l))
                << "decode step " << i << ", precision " << static_cast<int>(precision);
            if (i == 0) {
                EXPECT_TRUE(same_bits(lazy.repaired_logits(), f0))
                    << "the repaired prompt's last logits are full prefill's";
                // 40 rows from layer 2 (inside the cut at 3), and the new token's L layers; the
                // layers a row had already computed from layer 2 on ran again.
                EXPECT_EQ(st.token_layers, 40 * (L - 2) + L);
                EXPECT_EQ(st.earlier_repair_token_layers, 40 * (L - 2)) << "the repair's share";
                EXPECT_GT(st.repaired, 0);
                EXPECT_LT(st.repaired, 40 * (L - 2));
                repaired = st.repaired;
                EXPECT_GT(st.revived, 0);
                EXPECT_FALSE(lazy.repair_pending());
            } else {
                EXPECT_EQ(st.repaired, 0);
                EXPECT_EQ(st.earlier_repair_token_layers, 0);
            }
            next = argmax(f);
        }
        expect_same_cache(full, lazy, full.n_past(), "after 4 decode steps");
        for (int64_t t = 0; t < lazy.n_past(); ++t) EXPECT_EQ(lazy.depth()[t], L) << t;
        // Every pair once, and the repaired ones a second time.
        EXPECT_EQ(lazy.total_token_layers(), 44 * L + repaired);
        EXPECT_DOUBLE_EQ(lazy.prompt_fraction_computed(),
                         static_cast<double>(40 * L + repaired) / (40 * L));
    }
}

// Schedule::tiers: a prompt that reaches a tier's context size runs exactly as the tier's cuts
// alone would (logits and cache bits), a shorter one as the schedule's own; both are then
// repaired to full's.
TEST(SessionRepairTest, TiersCutAsTheirOwnCutsAlone) {
    auto model = tiny_session_model(8, "tiers", 5, kernels::GemmPrecision::kF32);
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab;
    SessionOptions tiered = repair_options();  // 3, 6 / 0.4, 0.2
    tiered.schedule.tiers = {{32, {2, 5}, {0.5f, 0.3f}}};
    SessionOptions tier_alone = repair_options();
    tier_alone.schedule.boundaries = {2, 5};
    tier_alone.schedule.keep = {0.5f, 0.3f};
    SessionOptions fo;
    fo.n_ctx = 128;
    for (const auto& [n, alone] : {std::pair{40, tier_alone}, std::pair{24, repair_options()}}) {
        SCOPED_TRACE(n);
        Session a = Session::create(*model, tiered).value();
        Session b = Session::create(*model, alone).value();
        Session full = Session::create(*model, fo).value();
        const auto prompt = ids_for(n, V, 3);
        auto [la, lb] = step_both(a, b, prompt, StepTokens::kPrompt, V);
        EXPECT_TRUE(same_bits(la, lb));
        EXPECT_EQ(a.depth(), b.depth());
        // The K/V rows a token holds: layers below its depth (the rest are never read).
        for (int il = 0; il < a.kv().n_layer(); ++il) {
            for (int64_t t = 0; t < n; ++t) {
                if (a.depth()[t] <= il) continue;
                for (const bool v : {false, true}) {
                    EXPECT_EQ(testing::kv_rows(a.kv(), il, t, 1, v),
                              testing::kv_rows(b.kv(), il, t, 1, v))
                        << (v ? "V" : "K") << ", layer " << il << " row " << t;
                }
            }
        }
        ASSERT_TRUE(a.repair_pending());
        std::vector<float> f(static_cast<size_t>(V));
        ASSERT_TRUE(full.step(prompt, f.data(), StepTokens::kPrompt).ok());
        auto [fa, l2] = step_both(full, a, {argmax(la)}, StepTokens::kGenerated, V);
        EXPECT_TRUE(same_bits(fa, l2)) << "repaired to full's";
    }
}

// A prompt step of `turn` on both, then the generated token `next`: the lazy prompt step cut (its
// logits differ from full's), and the next step repaired it from layer `from` (every row of the
// turn from there, and the new token's L layers) and gave full's logits; the repaired rows' last
// logits are full's for the turn.
void expect_turn_repaired(Session& full, Session& lazy, const std::vector<int32_t>& turn,
                          int32_t next, int from, int V) {
    const int L = lazy.kv().n_layer();
    auto [f0, l0] = step_both(full, lazy, turn, StepTokens::kPrompt, V);
    ASSERT_FALSE(same_bits(f0, l0)) << "the cuts must change the turn for this test";
    ASSERT_TRUE(lazy.repair_pending());
    StepStats st;
    auto [f1, l1] = step_both(full, lazy, {next}, StepTokens::kGenerated, V, &st);
    EXPECT_TRUE(same_bits(f1, l1));
    EXPECT_TRUE(same_bits(lazy.repaired_logits(), f0));
    EXPECT_EQ(st.token_layers, static_cast<int64_t>(turn.size()) * (L - from) + L);
}

// A conversation whose first turn is below a tier and whose second reaches it: the first turn
// cuts at the schedule's own boundaries and is repaired from layer 2, the second at the tier's
// and is repaired from layer 1, and every step after a repair is full's bit for bit.
TEST(SessionRepairTest, TurnsOnBothSidesOfATier) {
    auto [model, full, lazy, V] = full_and_lazy("repair_tier_turns");
    SessionOptions tiered = repair_options();  // 3, 6 / 0.4, 0.2
    tiered.schedule.tiers = {{48, {2, 5}, {0.5f, 0.3f}}};
    lazy = Session::create(*model, tiered).value();
    expect_turn_repaired(full, lazy, ids_for(30, V, 3), 7, 2, V);   // 31 tokens: the cut at 3
    expect_turn_repaired(full, lazy, ids_for(24, V, 8), 11, 1, V);  // 55: the tier's cut at 2
    expect_same_cache(full, lazy, full.n_past(), "after the second turn");
}

// A new turn (a prompt step over the cached conversation) prunes and is repaired by the step
// after it, like the first prompt.
TEST(SessionRepairTest, ANewTurnIsRepairedToo) {
    auto [model, full, lazy, V] = full_and_lazy("repair_turn");
    step_both(full, lazy, ids_for(40, V, 3), StepTokens::kPrompt, V);
    step_both(full, lazy, {7}, StepTokens::kGenerated, V);
    step_both(full, lazy, {9}, StepTokens::kGenerated, V);
    expect_turn_repaired(full, lazy, ids_for(24, V, 8), 11, 2, V);  // the turn from layer 2
    expect_same_cache(full, lazy, full.n_past(), "after the second turn");
}

// A short turn whose rows are all kept (inside keep_recent) over a context whose older tokens
// are cut as keys: no row of the turn stopped short, but its K/V from the first boundary on
// attended over the kept keys only, so it is repaired all the same (a review found it skipped).
TEST(SessionRepairTest, AShortTurnInsideTheRecentWindowIsRepaired) {
    auto [model, full, lazy, V] = full_and_lazy("repair_short_turn");
    SessionOptions o = repair_options();
    o.schedule.keep_recent = 8;
    lazy = Session::create(*model, o).value();
    step_both(full, lazy, ids_for(60, V, 3), StepTokens::kPrompt, V);
    step_both(full, lazy, {7}, StepTokens::kGenerated, V);
    const std::vector<int32_t> turn = ids_for(6, V, 8);
    auto [f0, l0] = step_both(full, lazy, turn, StepTokens::kPrompt, V);
    ASSERT_FALSE(same_bits(f0, l0)) << "the cut keys must change the turn for this test";
    const int L = lazy.kv().n_layer();
    for (int64_t t = lazy.n_past() - 6; t < lazy.n_past(); ++t) {
        ASSERT_EQ(lazy.depth()[t], L) << "every row of the turn is kept";
    }
    EXPECT_TRUE(lazy.repair_pending());
    int32_t next = argmax(f0);
    for (int i = 0; i < 3; ++i) {
        auto [f, l] = step_both(full, lazy, {next}, StepTokens::kGenerated, V);
        EXPECT_TRUE(same_bits(f, l)) << "decode step " << i << " after the short turn";
        next = argmax(f);
    }
    expect_same_cache(full, lazy, full.n_past(), "after the short turn");
}

// Truncating into the pruned step (a request that diverges from the cache) repairs only the
// tokens that stay. The repair step computes the 30 tokens in a call of 31 rows where full
// computed them in one of 40: bit for bit on our GEMMs, close on oneDNN's.
TEST(SessionRepairTest, TruncationShortensTheRepair) {
    auto [model, full, lazy, V] = full_and_lazy("repair_truncate");
    step_both(full, lazy, ids_for(40, V, 3), StepTokens::kPrompt, V);
    full.truncate(30);
    lazy.truncate(30);
    ASSERT_TRUE(lazy.repair_pending());
    StepStats st;
    auto [f, l] = step_both(full, lazy, {5}, StepTokens::kGenerated, V, &st);
    EXPECT_EQ(st.token_layers, 30 * 6 + 8);
    if (testing::gemms_row_invariant(*model, kernels::GemmPrecision::kF32)) {
        EXPECT_TRUE(same_bits(f, l));
        expect_same_cache(full, lazy, 31, "after truncating to 30");
    } else {
        testing::expect_close(l.data(), f.data(), f.size(), "logits");
        for (int il = 0; il < full.kv().n_layer(); ++il) {
            const std::string layer = "layer " + std::to_string(il);
            for (const bool v : {false, true}) {
                const std::vector<float> got = testing::kv_rows_f32(lazy.kv(), il, 31, v);
                const std::vector<float> want = testing::kv_rows_f32(full.kv(), il, 31, v);
                testing::expect_close(got.data(), want.data(), want.size(),
                                      (v ? "V, " : "K, ") + layer);
            }
        }
    }
    lazy.truncate(10);
    EXPECT_FALSE(lazy.repair_pending());
}

// Nothing cut (keep 1): nothing to repair.
TEST(SessionRepairTest, NothingDeferredNothingRepaired) {
    auto model = tiny_session_model(8, "repair_none");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab;
    SessionOptions o = repair_options();
    o.schedule.keep = {1.0f, 1.0f};
    auto lazy = Session::create(*model, o).value();
    std::vector<float> logits(static_cast<size_t>(V));
    ASSERT_TRUE(lazy.step(ids_for(40, V, 3), logits.data(), StepTokens::kPrompt).ok());
    EXPECT_FALSE(lazy.repair_pending());
}

TEST(SessionRepairTest, NeedsDecodeStepsThatNeitherSelectNorLeaveTokensOut) {
    auto model = tiny_session_model(8, "repair_refused");
    ASSERT_NE(model, nullptr);
    SessionOptions o = repair_options();
    o.schedule.prune_decode = true;
    auto s = Session::create(*model, o);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message().find("prune_decode on"), std::string::npos)
        << s.error().message();
    o.schedule.prune_decode = false;
    o.schedule.revive_max = 0;
    s = Session::create(*model, o);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message().find("revive_max 0"), std::string::npos) << s.error().message();
}

// Schedule::verify_margin: a prompt step whose last logits' two best lie within the margin
// repairs itself before it returns, so its logits are full prefill's bits and the next step
// has nothing left to repair (and is full's too); a margin the step's gap exceeds leaves the
// pruned logits and the repair for the next step. fp32 and bf16 GEMMs.
TEST(SessionRepairTest, VerifyMarginRepairsANearTieBeforeItsToken) {
    for (kernels::GemmPrecision precision : precisions()) {
        auto [model, full, lazy, V] = full_and_lazy("verify", precision);
        const int L = model->config().n_layer;
        const auto prompt = ids_for(40, V, 3);
        SessionOptions o = repair_options();
        o.schedule.verify_margin = 1e6f;  // every gap is a near tie
        Session verified = Session::create(*model, o).value();
        o.schedule.verify_margin = 1e-30f;  // no gap is (the logits never tie exactly here)
        Session unverified = Session::create(*model, o).value();

        StepStats cut;
        auto [f0, l0] = step_both(full, lazy, prompt, StepTokens::kPrompt, V, &cut);
        ASSERT_FALSE(same_bits(f0, l0)) << "the cuts must change the prefill for this test";
        std::vector<float> v0(static_cast<size_t>(V)), u0(v0.size());
        auto sv = verified.step(prompt, v0.data(), StepTokens::kPrompt);
        auto su = unverified.step(prompt, u0.data(), StepTokens::kPrompt);
        ASSERT_TRUE(sv.ok() && su.ok());
        EXPECT_TRUE(sv->verified);
        EXPECT_TRUE(same_bits(v0, f0)) << "a verified step returns full's logits";
        EXPECT_TRUE(same_bits(verified.repaired_logits(), f0));
        EXPECT_FALSE(verified.repair_pending());
        EXPECT_GT(sv->repaired, 0);
        EXPECT_EQ(sv->token_layers, cut.token_layers + 40 * (L - 2)) << "the repair counts in it";
        // Its rows per layer too: the 40 rows from layer 2 on, the last row alone at the last
        // layer's attention and FFN.
        for (int il = 0; il < L; ++il) {
            const int32_t extra = il < 2 ? 0 : 40;
            EXPECT_EQ(sv->rows_per_layer[il], cut.rows_per_layer[il] + extra) << il;
            EXPECT_EQ(sv->tail_rows_per_layer[il],
                      cut.tail_rows_per_layer[il] + (il == L - 1 ? 1 : extra))
                << il;
        }
        EXPECT_FALSE(su->verified);
        EXPECT_TRUE(same_bits(u0, l0)) << "above the margin the pruned logits stand";
        EXPECT_TRUE(unverified.repair_pending());

        // The next step: full's bits on all three; only the unverified one repairs in it.
        const std::vector<int32_t> next = {argmax(f0)};
        std::vector<float> f1(static_cast<size_t>(V)), v1(f1.size()), u1(f1.size());
        ASSERT_TRUE(full.step(next, f1.data(), StepTokens::kGenerated).ok());
        auto nv = verified.step(next, v1.data(), StepTokens::kGenerated);
        auto nu = unverified.step(next, u1.data(), StepTokens::kGenerated);
        ASSERT_TRUE(nv.ok() && nu.ok());
        EXPECT_TRUE(same_bits(v1, f1));
        EXPECT_TRUE(same_bits(u1, f1));
        EXPECT_EQ(nv->repaired, 0);
        EXPECT_EQ(nv->token_layers, L);
        EXPECT_FALSE(nv->verified);
        EXPECT_GT(nu->repaired, 0);
        expect_same_cache(full, verified, full.n_past(), "verified, after one decode step");
        EXPECT_EQ(verified.total_token_layers(), unverified.total_token_layers())
            << "the same work, the repair only earlier";
    }
}

// A step that cut nothing has nothing to repair, so no margin verifies it.
TEST(SessionRepairTest, VerifyMarginLeavesUncutStepsAlone) {
    auto model = tiny_session_model(8, "verify_none");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab;
    SessionOptions o = repair_options();
    o.schedule.verify_margin = 1e6f;
    o.schedule.min_context = 64;  // a 40-token prompt runs as full
    auto lazy = Session::create(*model, o).value();
    std::vector<float> logits(static_cast<size_t>(V));
    auto st = lazy.step(ids_for(40, V, 3), logits.data(), StepTokens::kPrompt);
    ASSERT_TRUE(st.ok());
    EXPECT_FALSE(st->verified);
    EXPECT_EQ(st->token_layers, 40 * model->config().n_layer);
    EXPECT_FALSE(lazy.repair_pending());
}

}  // namespace
}  // namespace lazyllm
