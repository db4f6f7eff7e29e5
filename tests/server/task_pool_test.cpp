// ElasticPool: the connection threads of `lazyllm serve` grow past the kept ones while every
// thread is held (idle keep-alive connections), never past the cap, and retire when idle.
#include "server/task_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace lazyllm::server {
namespace {

using namespace std::chrono_literals;

// Jobs that hold their thread until released, as a silent connection does.
struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
    std::atomic<int> started{0}, finished{0};

    std::function<void()> job() {
        return [this] {
            ++started;
            std::unique_lock<std::mutex> lock(mu);
            cv.wait(lock, [this] { return open; });
            ++finished;
        };
    }
    void release() {
        {
            std::lock_guard<std::mutex> lock(mu);
            open = true;
        }
        cv.notify_all();
    }
};

// Polls `done` for up to 5 s.
template <typename F>
bool eventually(F done) {
    for (auto t0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t0 < 5s;) {
        if (done()) return true;
        std::this_thread::sleep_for(2ms);
    }
    return done();
}

TEST(ElasticPool, EveryHeldConnectionGetsAThreadUpToTheCap) {
    ElasticPool pool(2, 8, 10s);
    EXPECT_EQ(pool.threads(), 2u);
    Gate gate;
    for (int i = 0; i < 6; ++i) pool.enqueue(gate.job());
    EXPECT_TRUE(eventually([&] { return gate.started == 6; })) << gate.started;
    EXPECT_EQ(pool.threads(), 6u);
    std::atomic<bool> quick{false};
    pool.enqueue([&] { quick = true; });  // a request beside six silent connections
    EXPECT_TRUE(eventually([&] { return quick.load(); }));
    gate.release();
    EXPECT_TRUE(eventually([&] { return gate.finished == 6; }));
}

TEST(ElasticPool, PastTheCapJobsWaitInOrder) {
    ElasticPool pool(1, 3, 10s);
    Gate gate;
    for (int i = 0; i < 5; ++i) pool.enqueue(gate.job());
    EXPECT_TRUE(eventually([&] { return gate.started == 3; }));
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(gate.started, 3);
    EXPECT_EQ(pool.threads(), 3u);
    gate.release();
    EXPECT_TRUE(eventually([&] { return gate.finished == 5; }));
    EXPECT_EQ(pool.peak_threads(), 3u);
    // The waiting jobs run in the order they came (one thread: exactly that order).
    ElasticPool one(1, 1, 10s);
    std::mutex mu;
    std::vector<int> order;
    for (int i = 0; i < 6; ++i) {
        one.enqueue([&, i] {
            std::lock_guard<std::mutex> lock(mu);
            order.push_back(i);
        });
    }
    one.shutdown();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST(ElasticPool, ThreadsBeyondTheKeptOnesRetireWhenIdle) {
    ElasticPool pool(1, 16, 20ms);
    Gate gate;
    for (int i = 0; i < 8; ++i) pool.enqueue(gate.job());
    EXPECT_TRUE(eventually([&] { return gate.started == 8; }));
    gate.release();
    EXPECT_TRUE(eventually([&] { return pool.threads() == 1; })) << pool.threads();
    std::atomic<int> ran{0};
    for (int i = 0; i < 4; ++i) pool.enqueue([&] { ++ran; });  // joins the retired threads too
    EXPECT_TRUE(eventually([&] { return ran == 4; }));
}

TEST(ElasticPool, ShutdownRunsTheQueuedJobsAndJoins) {
    std::atomic<int> ran{0};
    {
        ElasticPool pool(1, 1, 10s);
        for (int i = 0; i < 20; ++i) {
            pool.enqueue([&] {
                std::this_thread::sleep_for(1ms);
                ++ran;
            });
        }
        pool.shutdown();
        EXPECT_EQ(ran, 20);
        EXPECT_EQ(pool.threads(), 0u);
        pool.enqueue([&] { ++ran; });  // dropped after shutdown
    }
    EXPECT_EQ(ran, 20);
}

}  // namespace
}  // namespace lazyllm::server
