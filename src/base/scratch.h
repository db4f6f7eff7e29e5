// Scratch buffers kept across calls: grown, never shrunk, so that steady-state calls (every
// layer of every step) allocate nothing.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace lazyllm {

// v's data, with room for at least n elements (contents kept; new elements value-initialized).
template <typename T>
T* grow(std::vector<T>& v, int64_t n) {
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
