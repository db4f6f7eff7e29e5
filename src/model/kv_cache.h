// KV cache addressed by absolute position, one K and one V block per layer.
// Keys are stored after RoPE (design.md 1.2), so K/V written in different steps mix safely.
// Rows of positions never computed at a layer hold stale data and are never read: the
// runtime tracks per-token depth.
//
// Elements are fp32 or IEEE half (kernels::KvType). The bf16 GEMM path stores f16, as
// llama.cpp does by default: half the memory and half the bytes a decode step streams, with a
// rounding (2^-11 relative) finer than the bf16 activations the GEMMs already round to
// (2^-8). The fp32 path keeps fp32 so that it stays an exact reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "kernels/attention.h"

namespace lazyllm {

class KvCache {
public:
    KvCache() = default;
    KvCache(int n_layer, int64_t n_ctx, int n_embd_kv,
            kernels::KvType type = kernels::KvType::kF32);

    int n_layer() const { return n_layer_; }
    int64_t n_ctx() const { return n_ctx_; }
    int n_embd_kv() const { return n_embd_kv_; }
    kernels::KvType type() const { return type_; }
    size_t row_bytes() const {
        return static_cast<size_t>(n_embd_kv_) * kernels::kv_type_size(type_);
    }
    // [n_ctx, n_embd_kv] elements of type(): float, or uint16_t half bits.
    void* k(int il) { return k_[il].get(); }
    void* v(int il) { return v_[il].get(); }
    const void* k(int il) const { return k_[il].get(); }
    const void* v(int il) const { return v_[il].get(); }
    const int32_t* iota() const { return iota_.data(); }  // [n_ctx]: 0, 1, 2, ...
    size_t bytes() const;

private:
    // Cache-line aligned blocks, so that a row's per-head segments start on line boundaries.
    static constexpr std::align_val_t kAlign{64};
    struct AlignedDelete {
        void operator()(std::byte* p) const { ::operator delete[](p, kAlign); }
    };
    using Block = std::unique_ptr<std::byte[], AlignedDelete>;

    int n_layer_ = 0;
    int64_t n_ctx_ = 0;
    int n_embd_kv_ = 0;
    kernels::KvType type_ = kernels::KvType::kF32;
    // Left uninitialized: pages are touched only as positions are written, so a large context
    // costs nothing until used (rows are never read before they are written).
    std::vector<Block> k_, v_;
    std::vector<int32_t> iota_;
};

}  // namespace lazyllm
