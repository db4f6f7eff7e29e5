#include "model/kv_cache.h"

#include <numeric>

namespace lazyllm {

KvCache::KvCache(int n_layer, int64_t n_ctx, int n_head_kv, int head_dim, kernels::KvType type)
    : n_layer_(n_layer),
      n_ctx_(n_ctx),
      n_head_kv_(n_head_kv),
      head_dim_(head_dim),
      type_(type),
      k_(n_layer),
      v_(n_layer),
      iota_(n_ctx) {
    const size_t block_bytes = bytes() / (2 * static_cast<size_t>(n_layer > 0 ? n_layer : 1));
    for (int il = 0; il < n_layer; ++il) {
        k_[il] = Block(static_cast<std::byte*>(alloc_buffer(block_bytes)), {block_bytes});
        v_[il] = Block(static_cast<std::byte*>(alloc_buffer(block_bytes)), {block_bytes});
    }
    std::iota(iota_.begin(), iota_.end(), 0);
}

size_t KvCache::bytes() const {
    return 2 * static_cast<size_t>(n_layer_) * static_cast<size_t>(n_ctx_) *
           static_cast<size_t>(n_head_kv_) * static_cast<size_t>(head_dim_) *
           kernels::kv_type_size(type_);
}

void KvCache::store(const kernels::KernelContext& ctx, int il, const float* k_src,
                    const float* v_src, int64_t src_stride, int64_t n, const int32_t* pos) {
    const size_t head_bytes = static_cast<size_t>(head_stride()) * kernels::kv_type_size(type_);
    for (int g = 0; g < n_head_kv_; ++g) {
        const int64_t src_off = static_cast<int64_t>(g) * head_dim_;
        kernels::kv_store_rows(ctx, type_, k_src + src_off, src_stride, n, head_dim_, pos,
                               k_[il].get() + g * head_bytes, head_dim_);
        kernels::kv_store_rows(ctx, type_, v_src + src_off, src_stride, n, head_dim_, pos,
                               v_[il].get() + g * head_bytes, head_dim_);
    }
}

}  // namespace lazyllm
