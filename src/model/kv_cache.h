// KV cache addressed by absolute position, one K and one V block per layer, each laid out
// head by head: [n_head_kv][n_ctx][head_dim], so that a decode step's attention reads each
// head's keys in address order, prefetched ahead while the kernel computes
// (kernels::AttentionArgs::kv_head_stride).
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

#include "base/scratch.h"
#include "kernels/attention.h"

namespace lazyllm {

class KvCache {
public:
    KvCache() = default;
    KvCache(int n_layer, int64_t n_ctx, int n_head_kv, int head_dim,
            kernels::KvType type = kernels::KvType::kF32);

    int n_layer() const { return n_layer_; }
    int64_t n_ctx() const { return n_ctx_; }
    int n_head_kv() const { return n_head_kv_; }
    int head_dim() const { return head_dim_; }
    kernels::KvType type() const { return type_; }
    // Elements from one head's block of a layer to the next's (a position's head g is at
    // g * head_stride() + pos * head_dim()).
    int64_t head_stride() const { return n_ctx_ * head_dim_; }
    // [n_head_kv, n_ctx, head_dim] elements of type(): float, or uint16_t half bits.
    void* k(int il) { return k_[il].get(); }
    void* v(int il) { return v_[il].get(); }
    const void* k(int il) const { return k_[il].get(); }
    const void* v(int il) const { return v_[il].get(); }
    const int32_t* iota() const { return iota_.data(); }  // [n_ctx]: 0, 1, 2, ...
    size_t bytes() const;

    // Rows i of k_src and v_src ([n, n_head_kv * head_dim] fp32, rows src_stride apart, heads
    // side by side) to positions pos[i] of layer il.
    void store(const kernels::KernelContext& ctx, int il, const float* k_src, const float* v_src,
               int64_t src_stride, int64_t n, const int32_t* pos);

private:
    // Cache-line aligned blocks (alloc_buffer), so that each head's rows start on a line
    // boundary (and every row with head_dim * element size a multiple of 64 bytes).
    struct BufferDelete {
        size_t bytes = 0;
        void operator()(std::byte* p) const { free_buffer(p, bytes); }
    };
    using Block = std::unique_ptr<std::byte[], BufferDelete>;

    int n_layer_ = 0;
    int64_t n_ctx_ = 0;
    int n_head_kv_ = 0;
    int head_dim_ = 0;
    kernels::KvType type_ = kernels::KvType::kF32;
    // Left uninitialized: pages are touched only as positions are written, so a large context
    // costs nothing until used (rows are never read before they are written).
    std::vector<Block> k_, v_;
    std::vector<int32_t> iota_;
};

}  // namespace lazyllm
