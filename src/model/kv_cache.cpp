#include "model/kv_cache.h"

#include <numeric>

namespace lazyllm {

KvCache::KvCache(int n_layer, int64_t n_ctx, int n_embd_kv, kernels::KvType type)
    : n_layer_(n_layer),
      n_ctx_(n_ctx),
      n_embd_kv_(n_embd_kv),
      type_(type),
      k_(n_layer),
      v_(n_layer),
      iota_(n_ctx) {
    const size_t block_bytes = static_cast<size_t>(n_ctx) * row_bytes();
    for (int il = 0; il < n_layer; ++il) {
        k_[il].reset(static_cast<std::byte*>(::operator new[](block_bytes, kAlign)));
        v_[il].reset(static_cast<std::byte*>(::operator new[](block_bytes, kAlign)));
    }
    std::iota(iota_.begin(), iota_.end(), 0);
}

size_t KvCache::bytes() const {
    return 2 * static_cast<size_t>(n_layer_) * static_cast<size_t>(n_ctx_) * row_bytes();
}

}  // namespace lazyllm
