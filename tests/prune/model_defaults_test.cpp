// The per-model presets (model_defaults.h): the shipped SmolLM2 schedules against the files
// tune wrote, the generic layouts by depth and around global layers, and what every safe
// preset protects.
#include "prune/model_defaults.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "prune/schedule.h"

namespace lazyllm::prune {
namespace {

// Both presets are schedules `lazyllm tune` wrote, committed with their provenance (fast: the
// score objective; safe: the answers objective), the safe one run with repair instead of
// revival and from a floor of 3072 tokens, the fast one with weighted revivals.
TEST(ModelDefaults, SmolLM2HasItsTunedSchedules) {
    for (const auto& [preset, file] :
         {std::pair(Preset::kFast, "fast"), std::pair(Preset::kSafe, "safe")}) {
        SCOPED_TRACE(file);
        std::string_view source;
        const Schedule s = model_default_schedule({"llama", 30, 576, 9, 49152}, preset, &source);
        auto tuned = load_schedule_file(
            std::string(LAZYLLM_SOURCE_DIR) + "/schedules/smollm2-135m-instruct-" + file + ".json",
            30);
        ASSERT_TRUE(tuned.ok()) << tuned.error().message();
        EXPECT_FALSE(tuned->repair);
        EXPECT_EQ(tuned->revive_weight, 1.0f);
        Schedule shipped = *tuned;
        shipped.repair = preset == Preset::kSafe;
        // The fast one's decode steps, chosen after the tune (docs/lazyllm.md, "The revival
        // weight"), weigh the tokens they would revive by a quarter.
        if (preset == Preset::kFast) shipped.revive_weight = 0.25f;
        // The safe one: nothing below 3072 tokens; from there the cuts tuned with repair, ...
        if (preset == Preset::kSafe) {
            auto long_cuts = load_schedule_file(
                std::string(LAZYLLM_SOURCE_DIR) + "/schedules/smollm2-135m-instruct-safe-long.json",
                30);
            ASSERT_TRUE(long_cuts.ok()) << long_cuts.error().message();
            EXPECT_TRUE(long_cuts->repair);
            // ... with the same protection and shaping as the tuned late cuts, ...
            Schedule protection = *long_cuts;
            protection.boundaries = shipped.boundaries;
            protection.keep = shipped.keep;
            EXPECT_EQ(to_string(protection), to_string(shipped));
            // ... and from 6144 on the late cuts after a first one at layer 15: the 8k tier,
            // whose file is the whole preset as measured (docs/evaluation.md, "Tiers").
            auto tier8k = load_schedule_file(
                std::string(LAZYLLM_SOURCE_DIR) + "/schedules/smollm2-135m-instruct-safe-8k.json",
                30);
            ASSERT_TRUE(tier8k.ok()) << tier8k.error().message();
            ASSERT_EQ(tier8k->tiers.size(), 2u);
            EXPECT_EQ(tier8k->tiers.back().min_context, 6144);
            EXPECT_EQ(tier8k->tiers.back().boundaries, (std::vector<int>{15, 21, 27}));
            shipped.tiers = {{3072, long_cuts->boundaries, long_cuts->keep},
                             {6144, tier8k->tiers.back().boundaries, tier8k->tiers.back().keep}};
            shipped.min_context = 3072;
            shipped.verify_margin = 0.2f;  // a near tie takes full's first token
            EXPECT_EQ(to_string(*tier8k), to_string(shipped));
        }
        EXPECT_EQ(to_string(s), to_string(shipped));
        EXPECT_EQ(s.score_layers, 3);
        EXPECT_EQ(s.score_pool, 11);
        EXPECT_NE(source, "generic");
        EXPECT_TRUE(validate_schedule(s, 30).ok());
    }
    EXPECT_EQ(model_default_schedule({"llama", 30, 576, 9, 49152}, Preset::kFast).boundaries,
              (std::vector<int>{9, 18, 21}));
}

TEST(ModelDefaults, UnknownModelsGetTheGenericLayout) {
    for (Preset preset : {Preset::kSafe, Preset::kFast}) {
        std::string_view source;
        const Schedule s = model_default_schedule({"llama", 32, 4096, 32, 32000}, preset, &source);
        EXPECT_EQ(source, "generic");
        if (preset == Preset::kFast) {  // SmolLM2's fast preset (9, 18, 21 of 30) by depth
            EXPECT_EQ(s.boundaries, (std::vector<int>{10, 19, 22}));
            EXPECT_EQ(s.keep, (std::vector<float>{0.2f, 0.15f, 0.1f}));
            EXPECT_EQ(s.keep_first, 40);
            EXPECT_EQ(s.score_layers, 3);
            EXPECT_EQ(s.score_pool, 11);
        } else {  // one cut at 70% of the depth keeping a quarter, the paper's score
            EXPECT_EQ(s.boundaries, (std::vector<int>{22}));
            EXPECT_EQ(s.keep, (std::vector<float>{0.25f}));
            EXPECT_EQ(s.keep_first, 0);
            EXPECT_EQ(s.score_layers, 1);
            EXPECT_EQ(s.score_pool, 1);
        }
        EXPECT_EQ(s.prune_decode, preset == Preset::kFast);
        EXPECT_EQ(s.repair, preset == Preset::kSafe);
        EXPECT_EQ(s.verify_margin, preset == Preset::kSafe ? 0.2f : 0.0f);
        EXPECT_EQ(s.keep_recent > 0, preset == Preset::kSafe);
        EXPECT_EQ(s.min_context > 0, preset == Preset::kSafe);
        EXPECT_TRUE(validate_schedule(s, 32).ok());
    }
}

// The generic fast preset is SmolLM2's measured one laid out by depth: on another 30-layer model
// it is the same schedule; at every depth it is valid, and it computes about 40% of the prompt.
TEST(ModelDefaults, GenericFastIsSmolLM2sFastByDepth) {
    const Schedule smollm2 = model_default_schedule({"llama", 30, 576, 9, 49152}, Preset::kFast);
    const Schedule other = model_default_schedule({"llama", 30, 2048, 16, 32000}, Preset::kFast);
    EXPECT_EQ(to_string(other), to_string(smollm2));
    for (int n_layer = 1; n_layer <= 128; ++n_layer) {
        for (Preset preset : {Preset::kSafe, Preset::kFast}) {
            const Schedule s = model_default_schedule({"llama", n_layer, 64, 2, 100}, preset);
            EXPECT_TRUE(validate_schedule(s, n_layer).ok()) << n_layer;
        }
    }
    for (int n_layer : {16, 24, 28, 32, 80}) {
        const double f = predicted_prefill_fraction(
            model_default_schedule({"llama", n_layer, 64, 2, 100}, Preset::kFast), n_layer);
        EXPECT_GT(f, 0.38) << n_layer;
        EXPECT_LT(f, 0.43) << n_layer;
    }
}

// On a sliding-window model a cut goes after a global layer, never after the last layer; the
// safe preset's single cut is the one nearest 70% of the depth.
TEST(ModelDefaults, SlidingWindowModelsCutAfterGlobalLayers) {
    const ModelShape shape{"gemma3", 26, 1152, 4, 262144, {5, 11, 17, 23, 25}};
    const Schedule fast = model_default_schedule(shape, Preset::kFast);
    EXPECT_EQ(fast.boundaries, (std::vector<int>{6, 12, 18}));
    EXPECT_EQ(fast.keep, (std::vector<float>{0.5f, 0.25f, 0.1f}));
    const Schedule safe = model_default_schedule(shape, Preset::kSafe);
    EXPECT_EQ(safe.boundaries, (std::vector<int>{18}));  // 0.7 * 26 = 18.2
    EXPECT_EQ(safe.keep, (std::vector<float>{0.25f}));
    EXPECT_TRUE(validate_schedule(safe, 26).ok());
    EXPECT_TRUE(validate_schedule(fast, 26).ok());
    EXPECT_TRUE(safe.repair);
    EXPECT_FALSE(fast.repair);
    // Only the last layer global: nowhere to cut, so neither preset prunes.
    for (Preset preset : {Preset::kSafe, Preset::kFast}) {
        const Schedule none = model_default_schedule({"gemma3", 6, 64, 2, 100, {5}}, preset);
        EXPECT_TRUE(none.boundaries.empty());
    }
}

// One layer leaves no room for a boundary.
TEST(ModelDefaults, OneLayerModelsAreNotPruned) {
    for (Preset preset : {Preset::kSafe, Preset::kFast}) {
        EXPECT_TRUE(model_default_schedule({"llama", 1, 64, 2, 100}, preset).boundaries.empty());
    }
}

// The safe preset (the default) protects the answer: a recent window, a context floor and
// repair instead of revival (the answer after the first token is full's); the fast one has none
// of them and its decode steps select. It also prunes later and keeps more at every layer.
TEST(ModelDefaults, SafePresetProtectsTheAnswer) {
    const ModelShape smollm2{"llama", 30, 576, 9, 49152};
    const Schedule safe = model_default_schedule(smollm2);
    const Schedule fast = model_default_schedule(smollm2, Preset::kFast);
    EXPECT_EQ(to_string(safe), to_string(model_default_schedule(smollm2, Preset::kSafe)));
    EXPECT_TRUE(validate_schedule(safe, 30).ok());
    EXPECT_GT(safe.keep_recent, 0);
    EXPECT_GT(safe.min_context, 0);
    EXPECT_FALSE(safe.prune_decode);
    EXPECT_EQ(fast.keep_recent, 0);
    EXPECT_EQ(fast.min_context, 0);
    EXPECT_TRUE(fast.prune_decode);
    EXPECT_TRUE(safe.repair);
    EXPECT_FALSE(fast.repair);
    EXPECT_EQ(safe.verify_margin, 0.2f);
    EXPECT_EQ(fast.verify_margin, 0.0f);
    EXPECT_GE(safe.min_context, 3072);  // nothing cut at 1k-2k
    // At every length each layer keeps at least what the fast preset keeps there.
    const std::vector<float> fast_keep = keep_profile(fast, 30);
    ASSERT_FALSE(safe.tiers.empty());
    Schedule at_length = safe;
    for (size_t t = 0; t <= safe.tiers.size(); ++t) {
        if (t > 0) {
            at_length.boundaries = safe.tiers[t - 1].boundaries;
            at_length.keep = safe.tiers[t - 1].keep;
        }
        const std::vector<float> safe_keep = keep_profile(at_length, 30);
        for (int layer = 0; layer < 30; ++layer) {
            EXPECT_GE(safe_keep[layer], fast_keep[layer]) << "tier " << t << ", layer " << layer;
        }
    }
    // Late cuts below 3072 (under a lowered floor); from 6144 a first cut after the fast one's.
    EXPECT_GT(safe.boundaries.front(), fast.boundaries.front());
    EXPECT_GT(safe.tiers.back().boundaries.front(), fast.boundaries.front());
}

TEST(Schedule, KeepProfileAndPredictedFraction) {
    Schedule s;
    s.boundaries = {10, 20};
    s.keep = {0.5f, 0.25f};
    const std::vector<float> p = keep_profile(s, 30);
    ASSERT_EQ(p.size(), 30u);
    EXPECT_EQ(p[9], 1.0f);
    EXPECT_EQ(p[10], 0.5f);
    EXPECT_EQ(p[19], 0.5f);
    EXPECT_EQ(p[20], 0.25f);
    EXPECT_EQ(p[29], 0.25f);
    EXPECT_NEAR(predicted_prefill_fraction(s, 30), (10 + 5 + 2.5) / 30.0, 1e-9);
    EXPECT_EQ(predicted_prefill_fraction(Schedule{}, 30), 1.0);
    EXPECT_TRUE(keep_profile(s, 0).empty());
}

TEST(ModelDefaults, PresetNames) {
    EXPECT_EQ(parse_preset("safe").value(), Preset::kSafe);
    EXPECT_EQ(parse_preset("fast").value(), Preset::kFast);
    EXPECT_EQ(preset_name(Preset::kFast), "fast");
    auto bad = parse_preset("quick");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("unknown preset 'quick' (expected safe or fast)"),
              std::string::npos);
}

}  // namespace
}  // namespace lazyllm::prune
