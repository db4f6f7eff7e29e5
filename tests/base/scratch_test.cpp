#include "base/scratch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>

#include "lazyllm/memory.h"

namespace lazyllm {
namespace {

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kCacheLine == 0; }

// Sizes on both sides of glibc's mmap threshold (128 KiB): a plain std::vector above it sits
// 16 bytes past a page boundary.
TEST(AlignedVectorTest, DataIsCacheLineAlignedAtEverySize) {
    for (size_t n : {1u, 3u, 17u, 1000u, 40000u, 300000u, 5000000u}) {
        AlignedVector<float> f(n);
        AlignedVector<uint16_t> h(n);
        EXPECT_TRUE(aligned(f.data())) << n;
        EXPECT_TRUE(aligned(h.data())) << n;
    }
}

TEST(AlignedVectorTest, GrowKeepsContentsAndAlignment) {
    AlignedVector<int32_t> v(10);
    std::iota(v.begin(), v.end(), 0);
    int32_t* p = grow(v, 100000);
    ASSERT_EQ(v.size(), 100000u);
    EXPECT_TRUE(aligned(p));
    for (int32_t i = 0; i < 10; ++i) EXPECT_EQ(p[i], i);
    for (size_t i = 10; i < v.size(); ++i) ASSERT_EQ(v[i], 0) << i;  // value-initialized
    EXPECT_EQ(grow(v, 5), p);  // never shrinks, never moves when big enough
    EXPECT_EQ(v.size(), 100000u);
}

TEST(AlignedVectorTest, CopySwapAndRefusedSize) {
    AlignedVector<float> a(1000, 1.5f);
    AlignedVector<float> b = a;
    EXPECT_TRUE(aligned(b.data()));
    EXPECT_EQ(a, b);
    AlignedVector<float> c(7, 2.0f);
    std::swap(a, c);
    EXPECT_EQ(a.size(), 7u);
    EXPECT_EQ(c.size(), 1000u);
    AlignedAllocator<double> alloc;
    EXPECT_THROW((void)alloc.allocate(SIZE_MAX / 4), std::bad_array_new_length);
}

TEST(ScratchVectorTest, AlignedAndGrowKeepsContents) {
    for (size_t n : {1u, 17u, 40000u, 300000u, 5000000u}) {
        ScratchVector<float> f(n, 2.5f);  // an explicit value is still written
        EXPECT_TRUE(aligned(f.data())) << n;
        EXPECT_EQ(f.front(), 2.5f);
        EXPECT_EQ(f.back(), 2.5f);
    }
    ScratchVector<int32_t> v(10, 0);
    std::iota(v.begin(), v.end(), 0);
    int32_t* p = grow(v, 100000);
    EXPECT_TRUE(aligned(p));
    for (int32_t i = 0; i < 10; ++i) EXPECT_EQ(p[i], i);
    EXPECT_EQ(grow(v, 5), p);
}

// Growing within the capacity does not write the new elements (that is the point: no pass
// over the memory). unsigned char, whose indeterminate values may be read; that they still
// hold the old bytes is what libstdc++ and glibc do, not a language guarantee.
TEST(ScratchVectorTest, ResizeDoesNotZero) {
    ScratchVector<unsigned char> v(4096, 0x5a);
    const unsigned char* p = v.data();
    v.resize(16);
    v.resize(4096);
    ASSERT_EQ(v.data(), p);
    for (size_t i = 16; i < v.size(); ++i) ASSERT_EQ(v[i], 0x5a) << i;
    AlignedVector<unsigned char> z(4096, 0x5a);  // the value-initializing kind, for contrast
    z.resize(16);
    z.resize(4096);
    EXPECT_EQ(z[100], 0);
}

// release_from: the whole pages past the first n elements read as zeros and leave the resident
// set; the elements before n, and those sharing n's page, keep their values; size and
// capacity stay.
TEST(ScratchVectorTest, ReleaseFromDropsWholePagesPastN) {
    constexpr size_t kFloats = size_t{16} << 18;  // 16 MiB
    ScratchVector<float> v(kFloats, 1.0f);
    const size_t n = 1000003;  // not on a page boundary
    const uint64_t before = resident_bytes();
    release_from(v, n);
    const uint64_t after = resident_bytes();
    ASSERT_EQ(v.size(), kFloats);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], 1.0f) << i;
    const size_t page_floats = 4096 / sizeof(float);
    const auto first_page =
        reinterpret_cast<uintptr_t>(v.data() + n + page_floats - 1) / 4096 * 4096;
    const size_t first_zero =
        static_cast<size_t>(reinterpret_cast<const float*>(first_page) - v.data());
    for (size_t i = n; i < first_zero; ++i) ASSERT_EQ(v[i], 1.0f) << i;
    for (size_t i = first_zero; i < kFloats; i += 997) ASSERT_EQ(v[i], 0.0f) << i;
    if (before > 0 && after > 0) {  // /proc/self/status readable
        EXPECT_GE(before - std::min(before, after),
                  (kFloats - first_zero) * sizeof(float) * 9 / 10);
    }
    release_from(v, kFloats);  // nothing past the end: a no-op
    EXPECT_EQ(v[0], 1.0f);
    v.resize(0);
    release_from(v, 0);  // an empty vector's capacity, released whole
    EXPECT_EQ(v.capacity(), kFloats);
}

// Buffers of kMappedBytes or more are mapped for themselves: freed, their pages leave the
// process (glibc's heap would keep them once its mmap threshold had risen).
TEST(AllocBufferTest, MappedBlocksLeaveTheProcessWhenFreed) {
    if (kMappedBytes == SIZE_MAX) GTEST_SKIP() << "AddressSanitizer build: operator new only";
    constexpr size_t kBytes = size_t{64} << 20;
    const uint64_t base = resident_bytes();
    if (base == 0) GTEST_SKIP() << "no /proc/self/status";
    for (int round = 0; round < 3; ++round) {
        {
            ScratchVector<unsigned char> v(kBytes, 0x11);
            EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % 4096, 0u);
            EXPECT_GE(resident_bytes(), base + kBytes * 9 / 10) << round;
        }
        EXPECT_LT(resident_bytes(), base + kBytes / 4) << round;
    }
    void* small = alloc_buffer(100);
    EXPECT_TRUE(aligned(small));
    free_buffer(small, 100);
    free_buffer(nullptr, kBytes);  // a no-op, as delete of null
}

// alloc_weights: `align`-aligned below kHugeWeightBytes, 2 MiB aligned from it (the huge-page
// advice), every byte writable, freed by FreeDeleter; sizes that are not a multiple of the
// alignment included.
TEST(AllocWeightsTest, AlignedAndWritable) {
    for (const size_t bytes : {size_t{1}, size_t{100}, size_t{4096} + 3, kHugeWeightBytes - 1,
                               kHugeWeightBytes, kHugeWeightBytes + 12345}) {
        for (const size_t align : {size_t{64}, size_t{128}}) {
            std::unique_ptr<unsigned char, FreeDeleter> p(
                static_cast<unsigned char*>(alloc_weights(bytes, align)));
            ASSERT_NE(p, nullptr) << bytes;
            const auto addr = reinterpret_cast<uintptr_t>(p.get());
            EXPECT_EQ(addr % align, 0u) << bytes;
            if (bytes >= kHugeWeightBytes) {
                EXPECT_EQ(addr % kHugePageBytes, 0u) << bytes;
            }
            std::memset(p.get(), 0x3c, bytes);
            EXPECT_EQ(p.get()[bytes - 1], 0x3c);
        }
    }
}

// alloc_weights pads to whole huge pages and advises only those the weights fill, so the
// padding past them never becomes resident: 8 MiB + 4 KiB of weights take 10 MiB of address
// space, and a huge page over the tail would make all 2 MiB of it resident for its 4 KiB of
// weights (where THP is off this holds trivially).
TEST(AllocWeightsTest, PaddingPastTheWeightsStaysOutOfMemory) {
    if (kMappedBytes == SIZE_MAX) GTEST_SKIP() << "AddressSanitizer build: its shadow is resident";
    const size_t bytes = kHugeWeightBytes + 4096;
    const uint64_t base = resident_bytes();
    if (base == 0) GTEST_SKIP() << "no /proc/self/status";
    std::unique_ptr<unsigned char, FreeDeleter> p(
        static_cast<unsigned char*>(alloc_weights(bytes, 64)));
    ASSERT_NE(p, nullptr);
    std::memset(p.get(), 0x5a, bytes);
    EXPECT_GE(resident_bytes(), base + bytes * 9 / 10);
    EXPECT_LT(resident_bytes(), base + bytes + (size_t{1} << 20));
}

}  // namespace
}  // namespace lazyllm
