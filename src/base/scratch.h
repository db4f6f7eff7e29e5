// Scratch buffers kept across calls: grown, never shrunk, so that steady-state calls (every
// layer of every step) allocate nothing; pages a caller knows idle can go back to the system
// (release_from).
//
// Buffers that AMX tiles load from or store to are AlignedVector, or ScratchVector where every
// user writes before reading (no zeroing on growth): cache-line aligned. A plain
// std::vector of more than 128 KiB comes from mmap at 16 bytes past a page boundary, so each
// 64-byte tile row straddles two cache lines: measured on this machine, that halves the rate
// of a tile sequence (the attention block: 370 vs 190 cycles, one thread; docs/history.md).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace lazyllm {

inline constexpr size_t kCacheLine = 64;

// Buffers of kMappedBytes or more are mapped pages of their own (mmap), unmapped when freed,
// so that their memory leaves the process at once. From malloc they would not: after its first
// free of a mapped block glibc raises its mmap threshold to that size (up to 32 MiB) and serves
// later blocks up to it from its heap, which keeps freed pages; sessions created and destroyed
// in turn (bench's runs) then grew the peak resident set by about 70 MiB a run on a 1B model.
// (Under AddressSanitizer every buffer comes from operator new, which it checks.)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LAZYLLM_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(LAZYLLM_ASAN)
inline constexpr size_t kMappedBytes = SIZE_MAX;
#else
inline constexpr size_t kMappedBytes = size_t{1} << 20;
#endif

// bytes of memory, kCacheLine aligned (page aligned and mapped from kMappedBytes on);
// throws std::bad_alloc. Not zeroed but for mapped blocks. Freed by free_buffer, same bytes.
inline void* alloc_buffer(size_t bytes) {
    if (bytes < kMappedBytes) return ::operator new (bytes, std::align_val_t{kCacheLine});
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
}
inline void free_buffer(void* p, size_t bytes) noexcept {
    if (p == nullptr) return;
    if (bytes < kMappedBytes) {
        ::operator delete (p, std::align_val_t{kCacheLine});
    } else {
        ::munmap(p, bytes);
    }
}

// std::allocator with kCacheLine alignment (alloc_buffer).
template <typename T>
struct AlignedAllocator {
    using value_type = T;
    AlignedAllocator() = default;
    template <typename U>
    AlignedAllocator(const AlignedAllocator<U>&) {}  // NOLINT: implicit, as allocators are
    T* allocate(size_t n) {
        if (n > static_cast<size_t>(PTRDIFF_MAX) / sizeof(T)) throw std::bad_array_new_length();
        return static_cast<T*>(alloc_buffer(n * sizeof(T)));
    }
    void deallocate(T* p, size_t n) noexcept { free_buffer(p, n * sizeof(T)); }
    template <typename U>
    bool operator==(const AlignedAllocator<U>&) const {
        return true;
    }
};

template <typename T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;

// AlignedAllocator whose resize() leaves new elements default-initialized (for arithmetic
// types: not written at all) instead of zeroed. For buffers every user writes before reading,
// such as the forward's activations: zeroing them cost a pass over tens of MiB per prefill
// (at 4k tokens, 60 MB of scratch and hidden states: several ms of a lazy prefill's 270).
template <typename T>
struct UninitAlignedAllocator : AlignedAllocator<T> {
    using value_type = T;
    template <typename U>
    struct rebind {
        using other = UninitAlignedAllocator<U>;
    };
    UninitAlignedAllocator() = default;
    template <typename U>
    UninitAlignedAllocator(const UninitAlignedAllocator<U>&) {}  // NOLINT: implicit
    template <typename U>
    void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
        ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

// Cache-line aligned, and grown without zeroing: write before you read.
template <typename T>
using ScratchVector = std::vector<T, UninitAlignedAllocator<T>>;

// v's data, with room for at least n elements (contents kept; new elements value-initialized,
// except in a ScratchVector).
template <typename T, typename Alloc>
T* grow(std::vector<T, Alloc>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
    return v.data();
}

// Gives the whole pages of v's storage past its first n elements (up to its capacity) back to
// the system (madvise MADV_DONTNEED): they stop counting as resident, and read as zeros once
// touched again. For a ScratchVector whose elements from n on are written before they are read
// again; size and capacity stay as they are.
template <typename T>
void release_from(ScratchVector<T>& v, size_t n) {
    constexpr uintptr_t kPage = 4096;
    if (n >= v.capacity()) return;
    const auto begin = (reinterpret_cast<uintptr_t>(v.data() + n) + kPage - 1) / kPage * kPage;
    const auto end = reinterpret_cast<uintptr_t>(v.data() + v.capacity()) / kPage * kPage;
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

// unique_ptr deleter for std::aligned_alloc / std::malloc memory.
struct FreeDeleter {
    template <typename T>
    void operator()(T* p) const {
        std::free(p);
    }
};

// Memory for `bytes` of weights packed at load (freed with FreeDeleter), `align`-aligned. From
// kHugeWeightBytes on it is 2 MiB aligned, sized in whole 2 MiB pages, and the huge pages the
// weights fill are advised as transparent huge pages (madvise MADV_HUGEPAGE; nothing where THP
// is off): a decode step that streams every weight misses the TLB once per 2 MiB instead of per
// 4 KiB (Llama-3.2-1B shapes on Zen 5: decode 3-25% faster; load time unchanged within noise).
// The tail past the last whole huge page stays in 4 KiB pages (MADV_NOHUGEPAGE, also where THP
// is always on), so the padding up to the 2 MiB size is never resident: a huge page there
// would hold 1 MiB of nothing per matrix on average. nullptr when out of memory.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
inline constexpr size_t kHugeWeightBytes = 4 * kHugePageBytes;
inline void* alloc_weights(size_t bytes, size_t align) {
    if (bytes < kHugeWeightBytes) {
        return std::aligned_alloc(align, (bytes + align - 1) / align * align);
    }
    const size_t size = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* p = std::aligned_alloc(kHugePageBytes, size);
    if (p == nullptr) return nullptr;
    const size_t whole = bytes / kHugePageBytes * kHugePageBytes;
    ::madvise(p, whole, MADV_HUGEPAGE);
    if (whole < size) ::madvise(static_cast<std::byte*>(p) + whole, size - whole, MADV_NOHUGEPAGE);
    return p;
}

}  // namespace lazyllm
