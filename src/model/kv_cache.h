// KV cache addressed by absolute position, one K and one V block per layer.
// Keys are stored after RoPE (design.md 1.2), so K/V written in different steps mix safely.
// Rows of positions never computed at a layer hold stale data and are never read: the
// runtime tracks per-token depth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace lazyllm {

class KvCache {
public:
    KvCache() = default;
    KvCache(int n_layer, int64_t n_ctx, int n_embd_kv);

    int n_layer() const { return n_layer_; }
    int64_t n_ctx() const { return n_ctx_; }
    int n_embd_kv() const { return n_embd_kv_; }
    float* k(int il) { return k_[il].get(); }  // [n_ctx, n_embd_kv]
    float* v(int il) { return v_[il].get(); }  // [n_ctx, n_embd_kv]
    const float* k(int il) const { return k_[il].get(); }
    const float* v(int il) const { return v_[il].get(); }
    const int32_t* iota() const { return iota_.data(); }  // [n_ctx]: 0, 1, 2, ...
    size_t bytes() const;

private:
    int n_layer_ = 0;
    int64_t n_ctx_ = 0;
    int n_embd_kv_ = 0;
    // Left uninitialized: pages are touched only as positions are written, so a large context
    // costs nothing until used (rows are never read before they are written).
    std::vector<std::unique_ptr<float[]>> k_, v_;
    std::vector<int32_t> iota_;
};

}  // namespace lazyllm
