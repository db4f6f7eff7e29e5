// Scratch buffers kept across calls: grown, never shrunk, so that steady-state calls (every
// layer of every step) allocate nothing.
//
// Buffers that AMX tiles load from or store to are AlignedVector: cache-line aligned. A plain
// std::vector of more than 128 KiB comes from mmap at 16 bytes past a page boundary, so each
// 64-byte tile row straddles two cache lines: measured on this machine, that halves the rate
// of a tile sequence (the attention block: 370 vs 190 cycles, one thread, docs/benchmarks.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace lazyllm {

inline constexpr size_t kCacheLine = 64;

// std::allocator with kCacheLine alignment.
template <typename T>
struct AlignedAllocator {
    using value_type = T;
    AlignedAllocator() = default;
    template <typename U>
    AlignedAllocator(const AlignedAllocator<U>&) {}  // NOLINT: implicit, as allocators are
    T* allocate(size_t n) {
        if (n > static_cast<size_t>(PTRDIFF_MAX) / sizeof(T)) throw std::bad_array_new_length();
        return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kCacheLine}));
    }
    void deallocate(T* p, size_t) noexcept { ::operator delete(p, std::align_val_t{kCacheLine}); }
    template <typename U>
    bool operator==(const AlignedAllocator<U>&) const {
        return true;
    }
};

template <typename T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;

// v's data, with room for at least n elements (contents kept; new elements value-initialized).
template <typename T, typename Alloc>
T* grow(std::vector<T, Alloc>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
    return v.data();
}

// unique_ptr deleter for std::aligned_alloc / std::malloc memory.
struct FreeDeleter {
    template <typename T>
    void operator()(T* p) const {
        std::free(p);
    }
};

}  // namespace lazyllm
