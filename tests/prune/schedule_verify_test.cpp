// Schedule::verify_margin: the rules validate_schedule enforces (finite, >= 0, only with repair),
// its schedule-file and to_string forms, and the overrides that set or drop it.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "prune/schedule.h"
#include "prune/schedule_file_fixture.h"

namespace lazyllm::prune {
namespace {

// The safe preset's shape: late cuts, decode steps that do not select, repair.
Schedule repairing() {
    Schedule s;
    s.boundaries = {21, 27};
    s.keep = {0.35f, 0.1f};
    s.prune_decode = false;
    s.repair = true;
    return s;
}

std::string why(const Status& st) { return st.ok() ? "ok" : st.error().message(); }

TEST(ScheduleVerify, ValidationNamesTheRule) {
    Schedule s = repairing();
    for (float ok : {0.0f, 0.25f, 3.0f}) {
        s.verify_margin = ok;
        EXPECT_TRUE(validate_schedule(s, 30).ok()) << ok << ": " << why(validate_schedule(s, 30));
    }
    for (float bad : {-0.5f, std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::quiet_NaN()}) {
        s.verify_margin = bad;
        const Status st = validate_schedule(s, 30);
        EXPECT_NE(why(st).find("verify_margin must be >= 0 and finite"), std::string::npos)
            << bad << ": " << why(st);
    }
    s.verify_margin = 0.5f;
    s.repair = false;
    const Status st = validate_schedule(s, 30);
    EXPECT_NE(why(st).find("verify_margin 0.5 needs repair"), std::string::npos) << why(st);
}

TEST(ScheduleVerify, ToStringShowsItOnlyWhenSet) {
    Schedule s = repairing();
    const std::string plain = to_string(s);
    EXPECT_EQ(plain.find("verify_margin"), std::string::npos) << plain;
    s.verify_margin = 0.75f;
    EXPECT_EQ(to_string(s), plain + " verify_margin=0.75");
}

TEST_F(ScheduleFileTest, VerifyMarginRoundTripsAndIsWrittenOnlyWhenSet) {
    Schedule s = repairing();
    const std::string p = path("verify.json");
    ASSERT_TRUE(save_schedule_file(p, s, ScheduleFileInfo{"m", 30, "{}"}).ok());
    {
        std::ifstream in(p);
        EXPECT_FALSE(nlohmann::json::parse(in).contains("verify_margin"));
    }
    s.verify_margin = 0.4f;
    ASSERT_TRUE(save_schedule_file(p, s, ScheduleFileInfo{"m", 30, "{}"}).ok());
    {
        std::ifstream in(p);
        EXPECT_DOUBLE_EQ(nlohmann::json::parse(in)["verify_margin"].get<double>(), 0.4);
    }
    Result<Schedule> r = load_schedule_file(p, 30);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->verify_margin, 0.4f);
    EXPECT_EQ(to_string(*r), to_string(s));

    // A wrong type, a negative value and a margin without repair are refused, naming the key.
    const std::string base = R"({"layers": [21, 27], "keep": [0.35, 0.1], "prune_decode": false, )";
    const auto bad = [&](const std::string& name, const std::string& tail, const char* needle) {
        Result<Schedule> b = load_schedule_file(write(name, base + tail), 30);
        ASSERT_FALSE(b.ok()) << tail;
        EXPECT_NE(b.error().message().find(needle), std::string::npos) << b.error().message();
    };
    bad("type.json", R"("repair": true, "verify_margin": "0.4"})", "\"verify_margin\" must be a number");
    bad("neg.json", R"("repair": true, "verify_margin": -1})", "verify_margin must be >= 0");
    bad("norepair.json", R"("verify_margin": 0.4})", "needs repair");
}

TEST(ScheduleVerify, OverridesSetItAndRepairOffDropsIt) {
    Schedule s = repairing();
    ScheduleOverrides o;
    EXPECT_TRUE(o.empty());
    o.verify_margin = 1.5f;
    EXPECT_FALSE(o.empty());
    apply(o, s);
    EXPECT_EQ(s.verify_margin, 1.5f);
    EXPECT_TRUE(validate_schedule(s, 30).ok());

    // Decode steps that select turn a preset's repair off, and its margin with it ...
    Schedule t = s;
    ScheduleOverrides decode;
    decode.prune_decode = true;
    apply(decode, t);
    EXPECT_FALSE(t.repair);
    EXPECT_EQ(t.verify_margin, 0.0f);
    EXPECT_TRUE(validate_schedule(t, 30).ok()) << why(validate_schedule(t, 30));

    // ... but a margin asked for beside repair off is the user's conflict, named by validation.
    Schedule u = s;
    ScheduleOverrides both;
    both.repair = false;
    both.verify_margin = 0.5f;
    apply(both, u);
    EXPECT_FALSE(u.repair);
    EXPECT_EQ(u.verify_margin, 0.5f);
    EXPECT_NE(why(validate_schedule(u, 30)).find("needs repair"), std::string::npos);
}

}  // namespace
}  // namespace lazyllm::prune
