// The K/V bytes a test compares or copies: positions [0, n) of one layer, head by head, as
// KvCache lays them out (rows past n are never written, and hold anything).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model/kv_cache.h"

namespace lazyllm::testing {

// K (v = false) or V of positions [first, first + n) of layer il: n_head_kv blocks of n rows.
inline std::vector<uint8_t> kv_rows(const KvCache& kv, int il, int64_t first, int64_t n, bool v) {
    const size_t elem = kernels::kv_type_size(kv.type());
    const size_t head_bytes = static_cast<size_t>(kv.head_stride()) * elem;
    const size_t row_bytes = static_cast<size_t>(kv.head_dim()) * elem;
    const auto* base = static_cast<const uint8_t*>(v ? kv.v(il) : kv.k(il)) + first * row_bytes;
    std::vector<uint8_t> out;
    out.reserve(n * row_bytes * kv.n_head_kv());
    for (int g = 0; g < kv.n_head_kv(); ++g) {
        out.insert(out.end(), base + g * head_bytes, base + g * head_bytes + n * row_bytes);
    }
    return out;
}

// The same as fp32 values (a cache of KvType::kF32).
inline std::vector<float> kv_rows_f32(const KvCache& kv, int il, int64_t n, bool v) {
    const std::vector<uint8_t> bytes = kv_rows(kv, il, 0, n, v);
    std::vector<float> out(bytes.size() / sizeof(float));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
    return out;
}

// Whether layer il of a and b holds the same K and V bytes at positions [0, n).
inline bool same_kv_rows(const KvCache& a, const KvCache& b, int il, int64_t n) {
    return kv_rows(a, il, 0, n, false) == kv_rows(b, il, 0, n, false) &&
           kv_rows(a, il, 0, n, true) == kv_rows(b, il, 0, n, true);
}

// Positions [0, n) of layer il, K and V, from src to dst (caches of the same shape and type).
inline void copy_kv_rows(KvCache& dst, const KvCache& src, int il, int64_t n) {
    const size_t elem = kernels::kv_type_size(src.type());
    const size_t head_bytes = static_cast<size_t>(src.head_stride()) * elem;
    const size_t rows_bytes = static_cast<size_t>(n * src.head_dim()) * elem;
    for (int g = 0; g < src.n_head_kv(); ++g) {
        const size_t off = g * head_bytes;
        std::memcpy(static_cast<uint8_t*>(dst.k(il)) + off,
                    static_cast<const uint8_t*>(src.k(il)) + off, rows_bytes);
        std::memcpy(static_cast<uint8_t*>(dst.v(il)) + off,
                    static_cast<const uint8_t*>(src.v(il)) + off, rows_bytes);
    }
}

}  // namespace lazyllm::testing
