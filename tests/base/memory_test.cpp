// Process and machine memory from /proc: the figures `run -v`, bench's RSS column and the
// load's choice of prefill weights read.
#include "lazyllm/memory.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>

namespace lazyllm {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(Memory, ReadsThisMachineAndProcess) {
    EXPECT_GT(available_memory_bytes(), 16 * kMiB);
    EXPECT_GT(resident_bytes(), 0u);
    EXPECT_GE(peak_resident_bytes(), resident_bytes());
}

// 64 MiB touched raise the peak by about that much; after they are freed, a reset brings the
// peak back down to the resident set (which under ASan still holds the freed buffer, in its
// quarantine).
TEST(Memory, PeakFollowsATouchedBufferAndResets) {
    ASSERT_TRUE(reset_peak_resident());
    const uint64_t before = peak_resident_bytes();
    {
        const size_t n = 64 * kMiB;
        std::unique_ptr<char[]> buf(new char[n]);
        std::memset(buf.get(), 1, n);
        EXPECT_GE(resident_bytes(), before + 60 * kMiB);
        EXPECT_GE(peak_resident_bytes(), before + 60 * kMiB);
        EXPECT_EQ(buf[n - 1], 1);
    }
    const uint64_t high = peak_resident_bytes();
    ASSERT_TRUE(reset_peak_resident());
    const uint64_t after = peak_resident_bytes();
    EXPECT_LE(after, resident_bytes() + 4 * kMiB);
    EXPECT_LE(after, high + 4 * kMiB);  // (the resident set may grow a little in between)
}

// The default thread count follows the affinity mask (taskset, a container's cpuset), which
// hardware_concurrency ignores.
TEST(Cores, UsableCoresFollowTheAffinityMask) {
    const int all = usable_cores();
    EXPECT_GE(all, 1);
    EXPECT_LE(all, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    cpu_set_t saved;
    ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
    int first = 0;
    while (!CPU_ISSET(first, &saved)) ++first;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    EXPECT_EQ(usable_cores(), 1);
    ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
    EXPECT_EQ(usable_cores(), all);
}

}  // namespace
}  // namespace lazyllm
