#include "prune/schedule.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "prune/schedule_file_fixture.h"

namespace lazyllm::prune {
namespace {

// The paper's layout (its Llama 2 7B analysis figure: boundaries at 28/59/88% of the depth).
Schedule paper_layout(int n_layer) {
    constexpr double kDepth[] = {0.28, 0.59, 0.88};
    constexpr float kKeep[] = {0.5f, 0.25f, 0.1f};
    return depth_schedule(n_layer, kDepth, kKeep);
}

// Expects an kInvalidArgument error whose message contains every one of `needles`.
void expect_parse_error(std::string_view layers, std::string_view keep, int n_layer,
                        std::initializer_list<std::string_view> needles) {
    Result<Schedule> r = parse_schedule(layers, keep, n_layer);
    ASSERT_FALSE(r.ok()) << "layers='" << layers << "' keep='" << keep << "' parsed as "
                         << to_string(*r);
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    for (std::string_view needle : needles) {
        EXPECT_NE(r.error().message().find(needle), std::string::npos)
            << "message '" << r.error().message() << "' lacks '" << needle << "'";
    }
}

TEST(ParseSchedule, LayerIndices) {
    Result<Schedule> r = parse_schedule("9,19,28", "0.5,0.25,0.1", 32);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->boundaries, (std::vector<int>{9, 19, 28}));
    EXPECT_EQ(r->keep, (std::vector<float>{0.5f, 0.25f, 0.1f}));
    EXPECT_EQ(r->keep_first, 0);
    EXPECT_TRUE(r->prune_decode);
}

TEST(ParseSchedule, SpacesAroundItems) {
    Result<Schedule> r = parse_schedule(" 9, 19 ,28 ", "0.5 , 0.25,0.1", 32);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->boundaries, (std::vector<int>{9, 19, 28}));
}

TEST(ParseSchedule, DepthFractionsAt32Layers) {
    // The paper's Llama 2 7B boundaries: 0.28 / 0.59 / 0.88 of 32 -> 8.96 / 18.88 / 28.16.
    Result<Schedule> r = parse_schedule("0.28,0.59,0.88", "0.5,0.25,0.1", 32);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->boundaries, (std::vector<int>{9, 19, 28}));
}

TEST(ParseSchedule, DepthFractionsAt30Layers) {
    // SmolLM2-135M: 8.4 / 17.7 / 26.4.
    Result<Schedule> r = parse_schedule("0.28,0.59,0.88", "0.5,0.25,0.1", 30);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->boundaries, (std::vector<int>{8, 18, 26}));
}

TEST(ParseSchedule, AnyDotMakesTheListFractions) {
    // "1." is the fraction 1.0, which is outside (0, 1): the whole list is read as fractions.
    expect_parse_error("0.5,1.", "0.5,0.2", 30, {"layers item 2", "'1.'", "(0, 1)"});
    // "9" among fractions is the fraction 9.
    expect_parse_error("0.3,9", "0.5,0.2", 30, {"layers item 2", "'9'", "(0, 1)"});
    // Leading-dot and exponent forms are fractions too.
    Result<Schedule> r = parse_schedule(".5", "0.5", 30);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->boundaries, (std::vector<int>{15}));
}

TEST(ParseSchedule, SingleBoundaryAndKeepOne) {
    Result<Schedule> r = parse_schedule("1", "1", 2);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->boundaries, (std::vector<int>{1}));
    EXPECT_EQ(r->keep, (std::vector<float>{1.0f}));
    // Equal keep fractions are allowed (non-increasing).
    EXPECT_TRUE(parse_schedule("3,5", "0.4,0.4", 8).ok());
}

TEST(ParseSchedule, ErrorsNameTheItemAndTheRule) {
    // Unordered layers.
    expect_parse_error("9,28,19", "0.5,0.25,0.1", 32,
                       {"layers item 3 '19'", "item 2 '28'", "increasing"});
    // Duplicate indices.
    expect_parse_error("9,9", "0.5,0.25", 32, {"layers item 2 '9'", "duplicates", "distinct"});
    // Duplicates after rounding fractions: 0.28 * 32 = 8.96 and 0.29 * 32 = 9.28 both give 9.
    expect_parse_error("0.28,0.29", "0.5,0.25", 32,
                       {"layers item 2 '0.29' (layer 9)", "item 1 '0.28' (layer 9)", "distinct"});
    // Layer index out of range.
    expect_parse_error("0,9", "0.5,0.25", 32, {"layers item 1 '0'", "[1, 31]"});
    expect_parse_error("9,32", "0.5,0.25", 32, {"layers item 2 '32'", "[1, 31]"});
    expect_parse_error("-3", "0.5", 32, {"layers item 1 '-3'", "[1, 31]"});
    // Fraction mapping outside [1, n_layer - 1]: 0.01 * 30 = 0.3 -> 0; 0.99 * 30 = 29.7 -> 30.
    expect_parse_error("0.01", "0.5", 30, {"layers item 1 '0.01' (layer 0)", "[1, 29]"});
    expect_parse_error("0.99", "0.5", 30, {"layers item 1 '0.99' (layer 30)", "[1, 29]"});
    // Fractions outside (0, 1).
    expect_parse_error("0.0,0.5", "0.5,0.25", 30, {"layers item 1 '0.0'", "(0, 1)"});
    expect_parse_error("1.0", "0.5", 30, {"layers item 1 '1.0'", "(0, 1)"});
    expect_parse_error("-0.5", "0.5", 30, {"layers item 1 '-0.5'", "(0, 1)"});
    // Keep fractions outside (0, 1].
    expect_parse_error("9", "0", 32, {"keep item 1 '0'", "(0, 1]"});
    expect_parse_error("9", "1.5", 32, {"keep item 1 '1.5'", "(0, 1]"});
    expect_parse_error("9", "-0.2", 32, {"keep item 1 '-0.2'", "(0, 1]"});
    expect_parse_error("9", "1e-60", 32, {"keep item 1 '1e-60'", "(0, 1]"});
    // Keep increasing.
    expect_parse_error("9,19", "0.25,0.5", 32,
                       {"keep item 2 '0.5'", "item 1 '0.25'", "non-increasing"});
    // More boundaries than n_layer - 1.
    expect_parse_error("1,2,3,4", "0.5,0.4,0.3,0.2", 4, {"4 items", "at most 3", "n_layer - 1"});
    // Empty items and junk.
    expect_parse_error("9,,x", "0.5,0.4,0.3", 32, {"layers item 2 is empty", "'9,,x'"});
    expect_parse_error("9,x", "0.5,0.4", 32, {"layers item 2 'x'", "layer index"});
    expect_parse_error("9,", "0.5,0.4", 32, {"layers item 2 is empty"});
    expect_parse_error(",9", "0.5,0.4", 32, {"layers item 1 is empty"});
    expect_parse_error("9a", "0.5", 32, {"layers item 1 '9a'", "layer index"});
    expect_parse_error("0.5x", "0.5", 32, {"layers item 1 '0.5x'", "not a number"});
    expect_parse_error("0.5.1", "0.5", 32, {"layers item 1 '0.5.1'", "not a number"});
    expect_parse_error("9", "half", 32, {"keep item 1 'half'", "not a number"});
    expect_parse_error("9", "nan", 32, {"keep item 1 'nan'", "not a number"});
    expect_parse_error("9", "0.5,", 32, {"keep item 2 is empty"});
    expect_parse_error("", "0.5", 32, {"layers is empty"});
    expect_parse_error("9", " ", 32, {"keep is empty"});
    // Counts must match.
    expect_parse_error("9,19", "0.5", 32, {"layers has 2", "keep has 1"});
    expect_parse_error("9", "0.5,0.25", 32, {"layers has 1", "keep has 2"});
    // A model too small to prune.
    expect_parse_error("1", "0.5", 1, {"n_layer must be >= 2"});
}

TEST(ScheduleToString, Format) {
    Result<Schedule> r = parse_schedule("9,19,28", "0.5,0.25,0.1", 32);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(to_string(*r), "layers=9,19,28 keep=0.5,0.25,0.1");
    Schedule s = *r;
    s.keep_first = 4;
    s.prune_decode = false;
    EXPECT_EQ(to_string(s), "layers=9,19,28 keep=0.5,0.25,0.1 keep_first=4 prune_decode=false");
    s.score_layers = 3;
    s.score_pool = 11;
    EXPECT_EQ(to_string(s), "layers=9,19,28 keep=0.5,0.25,0.1 keep_first=4 prune_decode=false "
                            "score_layers=3 score_pool=11");
    s.revive_max = 0;
    EXPECT_EQ(to_string(s), "layers=9,19,28 keep=0.5,0.25,0.1 keep_first=4 prune_decode=false "
                            "score_layers=3 score_pool=11 revive_max=0");
    EXPECT_EQ(to_string(Schedule{}), "layers= keep=");
    s.keep_recent = 64;
    s.min_context = 1024;
    EXPECT_EQ(to_string(s), "layers=9,19,28 keep=0.5,0.25,0.1 keep_first=4 keep_recent=64 "
                            "min_context=1024 prune_decode=false score_layers=3 score_pool=11 "
                            "revive_max=0");
    s.revive_weight = 0.25f;
    EXPECT_EQ(to_string(s),
              "layers=9,19,28 keep=0.5,0.25,0.1 keep_first=4 keep_recent=64 "
              "min_context=1024 prune_decode=false score_layers=3 score_pool=11 "
              "revive_max=0 revive_weight=0.25");
}

TEST(DepthSchedule, RoundsClampsAndDrops) {
    Schedule s32 = paper_layout(32);
    EXPECT_EQ(s32.boundaries, (std::vector<int>{9, 19, 28}));
    EXPECT_EQ(s32.keep, (std::vector<float>{0.5f, 0.25f, 0.1f}));
    EXPECT_EQ(paper_layout(30).boundaries, (std::vector<int>{8, 18, 26}));
    for (int n_layer = 1; n_layer <= 128; ++n_layer) {
        Schedule s = paper_layout(n_layer);
        EXPECT_TRUE(validate_schedule(s, n_layer).ok())
            << n_layer << ": " << validate_schedule(s, n_layer).error().message();
        EXPECT_EQ(s.boundaries.size(), static_cast<size_t>(std::min(3, n_layer - 1)))
            << "n_layer " << n_layer;
    }
    // Tiny models: pushed up to stay distinct, then dropped when no room is left.
    EXPECT_EQ(paper_layout(4).boundaries, (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(paper_layout(3).boundaries, (std::vector<int>{1, 2}));
    EXPECT_EQ(paper_layout(3).keep, (std::vector<float>{0.5f, 0.25f}));
    EXPECT_EQ(paper_layout(2).boundaries, (std::vector<int>{1}));
    EXPECT_TRUE(paper_layout(1).boundaries.empty());
}

TEST(ValidateSchedule, NamesTheEntry) {
    Schedule s;
    s.boundaries = {3, 7};
    s.keep = {0.5f, 0.6f};
    Status st = validate_schedule(s, 10);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("keep[1] = 0.6"), std::string::npos)
        << st.error().message();
    s.keep = {0.5f, 0.4f};
    EXPECT_TRUE(validate_schedule(s, 10).ok());
    s.keep_first = -1;
    EXPECT_FALSE(validate_schedule(s, 10).ok());
    s.keep_first = 0;
    s.keep_recent = -3;
    st = validate_schedule(s, 10);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("keep_recent must be >= 0, got -3"), std::string::npos);
    s.keep_recent = 0;
    s.min_context = -1;
    st = validate_schedule(s, 10);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("min_context must be >= 0, got -1"), std::string::npos);
    s.min_context = 0;
    st = validate_schedule(s, 7);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("layers[1] = 7"), std::string::npos)
        << st.error().message();
    EXPECT_TRUE(validate_schedule(Schedule{}, 10).ok());  // no boundaries: nothing is pruned
}

TEST(ValidateSchedule, ScoreShaping) {
    Schedule s;
    s.boundaries = {3, 7};
    s.keep = {0.5f, 0.4f};
    s.score_layers = 3;
    s.score_pool = 11;
    EXPECT_TRUE(validate_schedule(s, 10).ok());
    s.score_layers = kMaxScoreLayers;
    s.score_pool = kMaxScorePool;
    EXPECT_TRUE(validate_schedule(s, 10).ok());
    struct Case {
        int layers, pool;
        const char* needle;
    };
    for (const Case& c : {Case{0, 1, "score_layers must be in [1, 64], got 0"},
                          Case{kMaxScoreLayers + 1, 1, "score_layers"},
                          Case{1, 0, "score_pool must be an odd number in [1, 255], got 0"},
                          Case{1, 4, "got 4"}, Case{1, -3, "got -3"},
                          Case{1, kMaxScorePool + 2, "score_pool"}}) {
        s.score_layers = c.layers;
        s.score_pool = c.pool;
        Status st = validate_schedule(s, 10);
        ASSERT_FALSE(st.ok()) << c.layers << " " << c.pool;
        EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
        EXPECT_NE(st.error().message().find(c.needle), std::string::npos) << st.error().message();
    }
    s.score_layers = 1;
    s.score_pool = 1;
    for (int ok : {-1, 0, 1000}) {
        s.revive_max = ok;
        EXPECT_TRUE(validate_schedule(s, 10).ok()) << ok;
    }
    s.revive_max = -2;
    Status st = validate_schedule(s, 10);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("revive_max must be >= 0, or -1 for no bound, got -2"),
              std::string::npos)
        << st.error().message();
    s.revive_max = -1;
    for (float ok : {0.01f, 0.25f, 1.0f}) {
        s.revive_weight = ok;
        EXPECT_TRUE(validate_schedule(s, 10).ok()) << ok;
    }
    for (float bad : {0.0f, -0.1f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
        s.revive_weight = bad;
        st = validate_schedule(s, 10);
        ASSERT_FALSE(st.ok()) << bad;
        EXPECT_NE(st.error().message().find("revive_weight must be in (0, 1]"), std::string::npos)
            << st.error().message();
    }
}

TEST_F(ScheduleFileTest, RoundTrip) {
    Schedule s;
    s.boundaries = {8, 18, 26};
    s.keep = {0.5f, 0.25f, 0.1f};
    s.keep_first = 4;
    s.keep_recent = 48;
    s.min_context = 900;
    s.prune_decode = false;
    s.score_layers = 3;
    s.score_pool = 7;
    s.revive_max = 16;
    s.revive_weight = 0.3f;
    ScheduleFileInfo info;
    info.model = "SmolLM2-135M-Instruct";
    info.n_layer = 30;
    info.meta_json = R"({"score": 0.91, "speedup": 2.5, "calibration": "passkey-4k"})";
    const std::string p = path("smollm2.json");
    Status saved = save_schedule_file(p, s, info);
    ASSERT_TRUE(saved.ok()) << saved.error().message();
    EXPECT_FALSE(std::filesystem::exists(p + ".tmp"));

    Result<ScheduleFile> r = read_schedule_file(p, 30);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->schedule.boundaries, s.boundaries);
    EXPECT_EQ(r->schedule.keep, s.keep);  // exact floats
    EXPECT_EQ(r->schedule.keep_first, 4);
    EXPECT_EQ(r->schedule.keep_recent, 48);
    EXPECT_EQ(r->schedule.min_context, 900);
    EXPECT_FALSE(r->schedule.prune_decode);
    EXPECT_EQ(r->schedule.score_layers, 3);
    EXPECT_EQ(r->schedule.score_pool, 7);
    EXPECT_EQ(r->schedule.revive_max, 16);
    EXPECT_EQ(r->schedule.revive_weight, 0.3f);  // exact float
    EXPECT_EQ(r->info.model, info.model);
    EXPECT_EQ(r->info.n_layer, 30);
    nlohmann::json meta = nlohmann::json::parse(r->info.meta_json);
    EXPECT_DOUBLE_EQ(meta["score"].get<double>(), 0.91);
    EXPECT_DOUBLE_EQ(meta["speedup"].get<double>(), 2.5);
    EXPECT_EQ(meta["calibration"], "passkey-4k");

    Result<Schedule> loaded = load_schedule_file(p, 30);
    ASSERT_TRUE(loaded.ok());
    EXPECT_EQ(to_string(*loaded), to_string(s));

    // The file is readable JSON with short decimals for the keep fractions.
    std::ifstream in(p);
    nlohmann::json doc = nlohmann::json::parse(in);
    EXPECT_EQ(doc["version"], 1);
    EXPECT_EQ(doc["layers"], nlohmann::json({8, 18, 26}));
    EXPECT_EQ(doc["keep"].dump(), "[0.5,0.25,0.1]");
}

// "revive_max" is written only when it bounds revivals, so files of schedules without a bound
// still load in builds that predate the key (unknown keys are errors).
TEST_F(ScheduleFileTest, ReviveMaxIsWrittenOnlyWhenSet) {
    Schedule s = paper_layout(30);
    const std::string p = path("unbounded.json");
    ASSERT_TRUE(save_schedule_file(p, s, ScheduleFileInfo{"m", 30, "{}"}).ok());
    {
        std::ifstream in(p);
        EXPECT_FALSE(nlohmann::json::parse(in).contains("revive_max"));
    }
    s.revive_max = 0;
    ASSERT_TRUE(save_schedule_file(p, s, ScheduleFileInfo{"m", 30, "{}"}).ok());
    Result<Schedule> r = load_schedule_file(p, 30);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->revive_max, 0);
    {
        std::ifstream in(p);  // "revive_weight" likewise: only when not 1
        EXPECT_FALSE(nlohmann::json::parse(in).contains("revive_weight"));
    }
}

// "repair" likewise: written only when true; it round-trips, shows in to_string, and is
// refused beside decode steps that select or never revive.
TEST_F(ScheduleFileTest, RepairRoundTripsAndNeedsDecodeStepsThatRevive) {
    Schedule s = paper_layout(30);
    s.prune_decode = false;
    const std::string p = path("repair.json");
    ASSERT_TRUE(save_schedule_file(p, s, ScheduleFileInfo{"m", 30, "{}"}).ok());
    {
        std::ifstream in(p);
        EXPECT_FALSE(nlohmann::json::parse(in).contains("repair"));
    }
    s.repair = true;
    EXPECT_EQ(to_string(s), to_string(paper_layout(30)) + " prune_decode=false repair=true");
    ASSERT_TRUE(save_schedule_file(p, s, ScheduleFileInfo{"m", 30, "{}"}).ok());
    Result<Schedule> r = load_schedule_file(p, 30);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_TRUE(r->repair);
    EXPECT_FALSE(load_schedule_file(write("bad.json", R"({"layers": [3], "keep": [0.5],
        "prune_decode": false, "repair": 1})"),
                                    30)
                     .ok());
    s.prune_decode = true;
    Status st = validate_schedule(s, 30);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("prune_decode on"), std::string::npos)
        << st.error().message();
    ScheduleOverrides o;
    o.prune_decode = false;
    o.repair = false;
    EXPECT_FALSE(o.empty());
    apply(o, s);
    EXPECT_FALSE(s.repair);
    EXPECT_TRUE(validate_schedule(s, 30).ok());
    // Asking for decode steps that select, or that never revive, turns a preset's repair off;
    // asking for repair as well leaves the conflict to validate_schedule.
    for (const auto& [decode, revive_max] : {std::pair{true, -1}, std::pair{false, 0}}) {
        Schedule r = s;
        r.prune_decode = false;
        r.repair = true;
        ScheduleOverrides d;
        if (decode) d.prune_decode = true;
        if (revive_max == 0) d.revive_max = 0;
        apply(d, r);
        EXPECT_FALSE(r.repair);
        EXPECT_TRUE(validate_schedule(r, 30).ok());
        d.repair = true;
        apply(d, r);
        EXPECT_TRUE(r.repair);
        EXPECT_FALSE(validate_schedule(r, 30).ok());
    }
}

TEST_F(ScheduleFileTest, MinimalFileUsesDefaults) {
    const std::string p = write("min.json", R"({"layers": [3, 5], "keep": [0.5, 0.2]})");
    Result<ScheduleFile> r = read_schedule_file(p, 8);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->schedule.boundaries, (std::vector<int>{3, 5}));
    EXPECT_EQ(r->schedule.keep_first, 0);
    EXPECT_EQ(r->schedule.keep_recent, 0);
    EXPECT_EQ(r->schedule.min_context, 0);
    EXPECT_TRUE(r->schedule.prune_decode);
    EXPECT_EQ(r->schedule.score_layers, 1);  // the paper's score
    EXPECT_EQ(r->schedule.score_pool, 1);
    EXPECT_EQ(r->schedule.revive_max, -1);  // no bound, as the paper
    EXPECT_EQ(r->schedule.revive_weight, 1.0f);  // the paper's selection
    EXPECT_EQ(r->info.n_layer, 0);
    EXPECT_EQ(r->info.meta_json, "{}");
}

TEST_F(ScheduleFileTest, NLayerMismatchIsAnError) {
    Schedule s = paper_layout(30);
    ScheduleFileInfo info{"SmolLM2-135M", 30, "{}"};
    const std::string p = path("s.json");
    ASSERT_TRUE(save_schedule_file(p, s, info).ok());
    Result<Schedule> r = load_schedule_file(p, 32);
    ASSERT_FALSE(r.ok());
    const std::string& m = r.error().message();
    EXPECT_NE(m.find("a model of 30 layers"), std::string::npos) << m;
    EXPECT_NE(m.find("32 layers"), std::string::npos) << m;
    EXPECT_NE(m.find("SmolLM2-135M"), std::string::npos) << m;
    EXPECT_NE(m.find(p), std::string::npos) << m;
}

TEST_F(ScheduleFileTest, BadFiles) {
    struct Case {
        const char* text;
        ErrorCode code;
        const char* needle;
    };
    const Case cases[] = {
        {"{", ErrorCode::kCorrupt, "invalid JSON"},
        // Found by tests/fuzz/schedule_file_fuzz: a number too large for a double threw out of
        // the reader (nlohmann out_of_range 406) instead of giving an error.
        {R"({"layers": [3], "keep": [6666666e666666]})", ErrorCode::kCorrupt, "invalid JSON"},
        {"[1, 2]", ErrorCode::kCorrupt, "object"},
        {R"({"layers": [3], "keep": [0.5], "kep_first": 1})", ErrorCode::kInvalidArgument,
         "unknown key 'kep_first'"},
        {R"({"version": 2, "layers": [3], "keep": [0.5]})", ErrorCode::kUnsupported, "version 2"},
        {R"({"keep": [0.5]})", ErrorCode::kInvalidArgument, "\"layers\""},
        {R"({"layers": [3], "keep": 0.5})", ErrorCode::kInvalidArgument, "\"keep\""},
        {R"({"layers": [3.5], "keep": [0.5]})", ErrorCode::kInvalidArgument, "layers[0] = 3.5"},
        {R"({"layers": [3], "keep": ["a"]})", ErrorCode::kInvalidArgument, "keep[0]"},
        {R"({"layers": [5, 3], "keep": [0.5, 0.2]})", ErrorCode::kInvalidArgument, "layers[1] = 3"},
        {R"({"layers": [3, 9], "keep": [0.5, 0.2]})", ErrorCode::kInvalidArgument, "layers[1] = 9"},
        {R"({"layers": [3], "keep": [1.5]})", ErrorCode::kInvalidArgument, "keep[0] = 1.5"},
        {R"({"layers": [3], "keep": [0.5, 0.2]})", ErrorCode::kInvalidArgument, "keep has 2"},
        {R"({"layers": [3], "keep": [0.5], "keep_first": -1})", ErrorCode::kInvalidArgument,
         "keep_first"},
        {R"({"layers": [3], "keep": [0.5], "keep_recent": -1})", ErrorCode::kInvalidArgument,
         "\"keep_recent\" must be an integer >= 0"},
        {R"({"layers": [3], "keep": [0.5], "min_context": 1.5})", ErrorCode::kInvalidArgument,
         "\"min_context\" must be an integer >= 0"},
        {R"({"layers": [3], "keep": [0.5], "prune_decode": 1})", ErrorCode::kInvalidArgument,
         "prune_decode"},
        {R"({"layers": [3], "keep": [0.5], "meta": []})", ErrorCode::kInvalidArgument, "meta"},
        {R"({"layers": [3], "keep": [0.5], "score_pool": 4})", ErrorCode::kInvalidArgument,
         "score_pool must be an odd number"},
        {R"({"layers": [3], "keep": [0.5], "score_pool": 1.5})", ErrorCode::kInvalidArgument,
         "\"score_pool\" must be an integer"},
        {R"({"layers": [3], "keep": [0.5], "score_layers": 0})", ErrorCode::kInvalidArgument,
         "\"score_layers\" must be an integer >= 1"},
        {R"({"layers": [3], "keep": [0.5], "n_layer": "8"})", ErrorCode::kInvalidArgument,
         "n_layer"},
        {R"({"layers": [3], "keep": [0.5], "revive_max": -2})", ErrorCode::kInvalidArgument,
         "\"revive_max\" must be an integer >= -1"},
        {R"({"layers": [3], "keep": [0.5], "revive_max": "all"})", ErrorCode::kInvalidArgument,
         "revive_max"},
        {R"({"layers": [3], "keep": [0.5], "revive_weight": "0.5"})", ErrorCode::kInvalidArgument,
         "\"revive_weight\" must be a number"},
        {R"({"layers": [3], "keep": [0.5], "revive_weight": 2})", ErrorCode::kInvalidArgument,
         "revive_weight must be in (0, 1]"},
    };
    int i = 0;
    for (const Case& c : cases) {
        const std::string p = write("bad" + std::to_string(i++) + ".json", c.text);
        Result<Schedule> r = load_schedule_file(p, 8);
        ASSERT_FALSE(r.ok()) << c.text;
        EXPECT_EQ(r.error().code(), c.code) << c.text << ": " << r.error().message();
        EXPECT_NE(r.error().message().find(c.needle), std::string::npos)
            << c.text << ": " << r.error().message();
        EXPECT_NE(r.error().message().find(p), std::string::npos) << r.error().message();
    }
    Result<Schedule> missing = load_schedule_file(path("nope.json"), 8);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

TEST_F(ScheduleFileTest, SaveRejectsBadInput) {
    Schedule s;
    s.boundaries = {3, 2};
    s.keep = {0.5f, 0.2f};
    // Order is checked even when n_layer is unknown.
    EXPECT_FALSE(save_schedule_file(path("a.json"), s, ScheduleFileInfo{}).ok());
    s.boundaries = {3, 12};
    EXPECT_TRUE(save_schedule_file(path("b.json"), s, ScheduleFileInfo{}).ok());
    EXPECT_FALSE(save_schedule_file(path("c.json"), s, ScheduleFileInfo{"m", 10, "{}"}).ok());
    s.boundaries = {3, 5};
    Status bad_meta = save_schedule_file(path("d.json"), s, ScheduleFileInfo{"m", 10, "{oops"});
    ASSERT_FALSE(bad_meta.ok());
    EXPECT_NE(bad_meta.error().message().find("meta"), std::string::npos);
    EXPECT_FALSE(save_schedule_file(path("e.json"), s, ScheduleFileInfo{"m", 10, "[1]"}).ok());
    EXPECT_FALSE(std::filesystem::exists(path("d.json")));
    Status no_dir = save_schedule_file(path("missing_dir/f.json"), s, ScheduleFileInfo{});
    ASSERT_FALSE(no_dir.ok());
    EXPECT_EQ(no_dir.error().code(), ErrorCode::kNotFound);
}

// --lazy-revive-weight (a request's "revive_weight") replaces the schedule's and counts as an
// override; it leaves a preset's repair alone (validate_schedule and Session::create judge it).
// Turning decode selection off drops a schedule's weight (the fast preset with --lazy-decode
// off), unless the weight is given too.
TEST(ScheduleOverrides, ReviveWeightReplacesTheSchedules) {
    Schedule s = paper_layout(30);
    ScheduleOverrides o;
    EXPECT_TRUE(o.empty());
    o.revive_weight = 0.5f;
    EXPECT_FALSE(o.empty());
    apply(o, s);
    EXPECT_EQ(s.revive_weight, 0.5f);
    s.prune_decode = false;
    s.repair = true;
    apply(o, s);
    EXPECT_TRUE(s.repair);
    EXPECT_EQ(s.revive_weight, 0.5f);

    Schedule fast = paper_layout(30);
    fast.revive_weight = 0.25f;
    ScheduleOverrides off;
    off.prune_decode = false;
    apply(off, fast);
    EXPECT_EQ(fast.revive_weight, 1.0f);
    off.revive_weight = 0.25f;
    apply(off, fast);
    EXPECT_EQ(fast.revive_weight, 0.25f);
    ScheduleOverrides on;
    on.prune_decode = true;
    apply(on, fast);
    EXPECT_EQ(fast.revive_weight, 0.25f);
}

TEST(Policy, ParseAndName) {
    const Policy all[] = {Policy::kFull, Policy::kLazy, Policy::kStatic, Policy::kRandom,
                          Policy::kGemFilter};
    for (Policy p : all) {
        Result<Policy> r = parse_policy(policy_name(p));
        ASSERT_TRUE(r.ok()) << policy_name(p);
        EXPECT_EQ(*r, p);
    }
    EXPECT_EQ(policy_name(Policy::kGemFilter), "gemfilter");
    Result<Policy> bad = parse_policy("snapkv");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(bad.error().message().find("'snapkv'"), std::string::npos);
    EXPECT_NE(bad.error().message().find("gemfilter"), std::string::npos);
    EXPECT_FALSE(parse_policy("").ok());
    EXPECT_FALSE(parse_policy("Lazy").ok());
}

}  // namespace
}  // namespace lazyllm::prune
