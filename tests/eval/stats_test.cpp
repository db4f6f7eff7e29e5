// The sign test and the Wilson interval against values worked by hand (binomial tables).
#include <gtest/gtest.h>

#include "eval/stats.h"

namespace lazyllm::eval {
namespace {

TEST(StatsTest, SignTestMatchesTheBinomialTail) {
    EXPECT_DOUBLE_EQ(sign_test_p(0, 0), 1.0);     // no untied pair
    EXPECT_DOUBLE_EQ(sign_test_p(3, 3), 1.0);     // capped at 1
    EXPECT_NEAR(sign_test_p(0, 5), 0.0625, 1e-12);  // 2 * 2^-5
    EXPECT_NEAR(sign_test_p(5, 0), 0.0625, 1e-12);  // symmetric
    EXPECT_NEAR(sign_test_p(1, 9), 0.021484375, 1e-12);  // 2 * 11 / 1024
    EXPECT_NEAR(sign_test_p(2, 8), 0.109375, 1e-12);     // 2 * 56 / 1024
    EXPECT_LT(sign_test_p(10, 90), 1e-15);  // large n stays finite
    EXPECT_GT(sign_test_p(10, 90), 0.0);
}

TEST(StatsTest, WilsonIntervalBracketsTheProportion) {
    auto [lo, hi] = wilson_interval(0, 0);
    EXPECT_DOUBLE_EQ(lo, 0.0);
    EXPECT_DOUBLE_EQ(hi, 1.0);
    std::tie(lo, hi) = wilson_interval(18, 18);  // all agree: upper bound 1, lower 0.82
    EXPECT_DOUBLE_EQ(hi, 1.0);
    EXPECT_NEAR(lo, 0.8241, 1e-4);
    std::tie(lo, hi) = wilson_interval(50, 100);
    EXPECT_NEAR(lo, 0.4038, 1e-4);
    EXPECT_NEAR(hi, 0.5962, 1e-4);
    std::tie(lo, hi) = wilson_interval(0, 10);
    EXPECT_DOUBLE_EQ(lo, 0.0);
    EXPECT_NEAR(hi, 0.2775, 1e-4);
}

}  // namespace
}  // namespace lazyllm::eval
