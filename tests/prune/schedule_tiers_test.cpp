// Schedule::tiers: which cuts a step takes by its context size, the rules validate_schedule
// enforces (with the tier named in each error), the schedule file and to_string forms, the
// overrides that drop them, and the lazy policy's plans.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "prune/policy.h"
#include "prune/schedule.h"
#include "prune/schedule_file_fixture.h"

namespace lazyllm::prune {
namespace {

// 21,27 / 0.35,0.1 below 3072 tokens of context, 9,15,27 / 0.4,0.25,0.15 from there, 12 / 0.2
// from 8192: a base schedule and two tiers (the safe preset has one tier).
Schedule tiered() {
    Schedule s;
    s.boundaries = {21, 27};
    s.keep = {0.35f, 0.1f};
    s.keep_recent = 64;
    s.min_context = 256;
    s.prune_decode = false;
    s.repair = true;
    s.tiers = {{3072, {9, 15, 27}, {0.4f, 0.25f, 0.15f}}, {8192, {12}, {0.2f}}};
    return s;
}

std::string message(const Status& st) { return st.ok() ? "ok" : st.error().message(); }

TEST(ScheduleTiers, CutsForTakesTheLastTierTheContextReaches) {
    const Schedule s = tiered();
    EXPECT_EQ(cuts_for(s, 100).boundaries, (std::vector<int>{21, 27}));
    EXPECT_EQ(cuts_for(s, 3071).boundaries, (std::vector<int>{21, 27}));
    EXPECT_EQ(cuts_for(s, 3072).boundaries, (std::vector<int>{9, 15, 27}));
    EXPECT_EQ(cuts_for(s, 3072).keep, (std::vector<float>{0.4f, 0.25f, 0.15f}));
    EXPECT_EQ(cuts_for(s, 8191).boundaries, (std::vector<int>{9, 15, 27}));
    EXPECT_EQ(cuts_for(s, 8192).boundaries, (std::vector<int>{12}));
    EXPECT_EQ(cuts_for(s, 100000).keep, (std::vector<float>{0.2f}));
    Schedule plain = s;
    plain.tiers.clear();
    EXPECT_EQ(cuts_for(plain, 100000).boundaries, (std::vector<int>{21, 27}));
}

TEST(ScheduleTiers, ValidationNamesTheTierAndTheRule) {
    EXPECT_EQ(message(validate_schedule(tiered(), 30)), "ok");
    const auto expect_error = [](const Schedule& s, const std::string& what) {
        const std::string m = message(validate_schedule(s, 30));
        EXPECT_NE(m.find(what), std::string::npos) << m;
    };
    Schedule s = tiered();
    s.repair = false;
    expect_error(s, "tiers need repair");
    s = tiered();
    s.tiers[1].min_context = 3072;
    expect_error(s, "tiers[1].min_context 3072 is not above tiers[0]'s 3072");
    s = tiered();
    s.tiers[0].min_context = 0;
    expect_error(s, "tiers[0].min_context must be >= 1");
    s = tiered();
    s.tiers[0].boundaries = {9, 30, 27};
    expect_error(s, "tiers[0].layers[1] = 30");
    s = tiered();
    s.tiers[0].boundaries = {15, 9, 27};
    expect_error(s, "tiers[0].layers[1] = 9 comes after tiers[0].layers[0] = 15");
    s = tiered();
    s.tiers[0].keep = {0.4f, 0.5f, 0.1f};
    expect_error(s, "tiers[0].keep[1] = 0.5 is larger than tiers[0].keep[0]");
    s = tiered();
    s.tiers[1].keep = {0.2f, 0.1f};
    expect_error(s, "tiers[1].layers has 1 entries but tiers[1].keep has 2");
    s = tiered();
    s.tiers[1].boundaries.clear();
    s.tiers[1].keep.clear();
    expect_error(s, "tiers[1] has no boundary");
}

// A schedule left without repair (decode steps that select, or an explicit repair off) drops
// the tiers it was chosen with; other overrides keep them.
TEST(ScheduleTiers, OverridesThatTurnRepairOffDropTheTiers) {
    Schedule s = tiered();
    ScheduleOverrides keep;
    keep.keep_recent = 32;
    keep.min_context = 4096;
    apply(keep, s);
    EXPECT_EQ(s.tiers.size(), 2u);
    EXPECT_EQ(message(validate_schedule(s, 30)), "ok");
    for (int which = 0; which < 3; ++which) {
        Schedule t = tiered();
        ScheduleOverrides o;
        if (which == 0) o.prune_decode = true;
        if (which == 1) o.revive_max = 0;
        if (which == 2) o.repair = false;
        apply(o, t);
        EXPECT_FALSE(t.repair) << which;
        EXPECT_TRUE(t.tiers.empty()) << which;
        EXPECT_EQ(message(validate_schedule(t, 30)), "ok") << which;
    }
}

TEST(ScheduleTiers, ToString) {
    EXPECT_EQ(to_string(tiered()),
              "layers=21,27 keep=0.35,0.1 keep_recent=64 min_context=256 prune_decode=false "
              "repair=true tiers=3072:9,15,27/0.4,0.25,0.15;8192:12/0.2");
}

using ScheduleTiersFile = ScheduleFileTest;

TEST_F(ScheduleTiersFile, RoundTrip) {
    const std::string p = path("tiered.json");
    ASSERT_EQ(message(save_schedule_file(p, tiered(), ScheduleFileInfo{"m", 30, "{}"})), "ok");
    Result<Schedule> r = load_schedule_file(p, 30);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->tiers, tiered().tiers);  // exact floats
    EXPECT_EQ(to_string(*r), to_string(tiered()));
    std::ifstream in(p);
    const nlohmann::json doc = nlohmann::json::parse(in);
    EXPECT_EQ(doc["tiers"][0]["min_context"], 3072);
    EXPECT_EQ(doc["tiers"][0]["layers"].dump(), "[9,15,27]");
    EXPECT_EQ(doc["tiers"][0]["keep"].dump(), "[0.4,0.25,0.15]");  // short decimals
    // No tiers, no key: files without them read as before.
    Schedule plain = tiered();
    plain.tiers.clear();
    ASSERT_EQ(message(save_schedule_file(p, plain, ScheduleFileInfo{"m", 30, "{}"})), "ok");
    std::ifstream in2(p);
    EXPECT_FALSE(nlohmann::json::parse(in2).contains("tiers"));
    // A model too shallow for a tier's boundary (not the schedule's own): the file names the tier.
    Schedule deep_tier = tiered();
    deep_tier.boundaries = {11, 17};
    deep_tier.tiers[1].boundaries = {19};
    ASSERT_EQ(message(save_schedule_file(p, deep_tier, ScheduleFileInfo{})), "ok");
    Result<Schedule> shallow = load_schedule_file(p, 20);
    ASSERT_FALSE(shallow.ok());
    EXPECT_NE(shallow.error().message().find("tiers[0].layers[2] = 27"), std::string::npos)
        << shallow.error().message();
}

TEST_F(ScheduleTiersFile, BadTiersAreNamed) {
    const std::string head =
        R"({"layers": [21], "keep": [0.35], "prune_decode": false, "repair": true, "tiers": )";
    for (const auto& [tiers, what] : std::vector<std::pair<std::string, std::string>>{
             {R"({"min_context": 3072})", "\"tiers\" must be an array"},
             {R"([5])", "tiers[0] must be an object"},
             {R"([{"min_context": 3072, "layers": [9], "keep": [0.4], "when": 1}])",
              "tiers[0]: unknown key 'when'"},
             {R"([{"layers": [9], "keep": [0.4]}])", "tiers[0].min_context must be present"},
             {R"([{"min_context": 0, "layers": [9], "keep": [0.4]}])",
              "\"tiers[0].min_context\" must be an integer >= 1"},
             {R"([{"min_context": 3072, "layers": [9]}])", "\"tiers[0].keep\" must be present"},
             {R"([{"min_context": 3072, "layers": [9.5], "keep": [0.4]}])",
              "tiers[0].layers[0] = 9.5 is not an integer"},
             {R"([{"min_context": 3072, "layers": [9], "keep": ["x"]}])",
              "tiers[0].keep[0] = \"x\" is not a number"},
         }) {
        Result<Schedule> r = load_schedule_file(write("bad.json", head + tiers + "}"), 30);
        ASSERT_FALSE(r.ok()) << tiers;
        EXPECT_NE(r.error().message().find(what), std::string::npos) << r.error().message();
    }
    Result<Schedule> no_repair = load_schedule_file(
        write(
            "no_repair.json",
            R"({"layers": [21], "keep": [0.35], "tiers": [{"min_context": 3072, "layers": [9], "keep": [0.4]}]})"),
        30);
    ASSERT_FALSE(no_repair.ok());
    EXPECT_NE(no_repair.error().message().find("tiers need repair"), std::string::npos);
}

// Integers past int's range are refused, not wrapped (an unsigned 2^64 - 1 once read as -1).
TEST_F(ScheduleTiersFile, HugeIntegersAreRefused) {
    for (const std::string& body :
         {std::string(R"({"layers": [3], "keep": [0.5], "revive_max": 18446744073709551615})"),
          std::string(R"({"layers": [18446744073709551615], "keep": [0.5]})"),
          std::string(R"({"layers": [3], "keep": [0.5], "prune_decode": false, "repair": true,
              "tiers": [{"min_context": 4294967297, "layers": [2], "keep": [0.4]}]})")}) {
        Result<Schedule> r = load_schedule_file(write("huge.json", body), 30);
        ASSERT_FALSE(r.ok()) << body;
    }
}

// The lazy policy plans a step by its context size; a decode step with nothing deferred plans
// nothing whatever the tier.
TEST(ScheduleTiers, LazyPolicyPlansByContextSize) {
    const Schedule s = tiered();
    auto policy = make_policy(Policy::kLazy, s, 0);
    const auto layers = [&](StepInfo info) {
        std::vector<Boundary> plan;
        policy->plan(info, plan);
        std::vector<int> out;
        for (const Boundary& b : plan) {
            EXPECT_EQ(b.mode, BoundaryMode::kSelect);
            out.push_back(b.layer);
        }
        return out;
    };
    EXPECT_EQ(layers({true, true, 2000, 2000, false}), (std::vector<int>{21, 27}));
    EXPECT_EQ(layers({true, true, 4000, 4000, false}), (std::vector<int>{9, 15, 27}));
    EXPECT_EQ(layers({false, true, 100, 9000, false}), (std::vector<int>{12}));  // a new turn
    EXPECT_TRUE(layers({false, true, 1, 9001, false}).empty());
}

}  // namespace
}  // namespace lazyllm::prune
