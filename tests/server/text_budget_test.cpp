// TextBudget (tools/server/text_budget.h): the bytes of request text tokenized at once.
#include "server/text_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace lazyllm::server {
namespace {

using namespace std::chrono_literals;

const auto kNever = [] { return false; };

TEST(TextBudget, TextsWithinTheCapGoAtOnce) {
    TextBudget budget(100);
    EXPECT_TRUE(budget.acquire(60, kNever));
    EXPECT_TRUE(budget.acquire(40, kNever));
    EXPECT_EQ(budget.in_flight(), 100u);
    budget.release(60);
    budget.release(40);
    EXPECT_EQ(budget.in_flight(), 0u);
    // A text over the cap runs, alone.
    EXPECT_TRUE(budget.acquire(500, kNever));
    budget.release(500);
}

TEST(TextBudget, AFullBudgetWaitsForARelease) {
    TextBudget budget(100);
    ASSERT_TRUE(budget.acquire(80, kNever));
    std::atomic<bool> got{false};
    std::thread waiter([&] {
        EXPECT_TRUE(budget.acquire(30, kNever, 5ms));
        got = true;
    });
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(got.load()) << "80 + 30 bytes over a cap of 100";
    budget.release(80);
    waiter.join();
    EXPECT_TRUE(got.load());
    EXPECT_EQ(budget.in_flight(), 30u);
    budget.release(30);
}

TEST(TextBudget, GivingUpTakesNothing) {
    TextBudget budget(100);
    ASSERT_TRUE(budget.acquire(500, kNever));  // alone, over the cap
    int asked = 0;
    EXPECT_FALSE(budget.acquire(
        1, [&] { return ++asked == 3; }, 1ms));
    EXPECT_EQ(asked, 3);
    EXPECT_EQ(budget.in_flight(), 500u);
    budget.release(500);
    EXPECT_TRUE(budget.acquire(1, [] { return true; }));  // fits: give_up is never asked
    { TextBudgetHold hold(budget, 1); }
    EXPECT_EQ(budget.in_flight(), 0u);
}

}  // namespace
}  // namespace lazyllm::server
