#include "model/kv_cache.h"

#include <numeric>

namespace lazyllm {

KvCache::KvCache(int n_layer, int64_t n_ctx, int n_embd_kv)
    : n_layer_(n_layer), n_ctx_(n_ctx), n_embd_kv_(n_embd_kv), k_(n_layer), v_(n_layer), iota_(n_ctx) {
    for (int il = 0; il < n_layer; ++il) {
        k_[il].reset(new float[static_cast<size_t>(n_ctx * n_embd_kv)]);
        v_[il].reset(new float[static_cast<size_t>(n_ctx * n_embd_kv)]);
    }
    std::iota(iota_.begin(), iota_.end(), 0);
}

size_t KvCache::bytes() const {
    return 2 * static_cast<size_t>(n_layer_) * static_cast<size_t>(n_ctx_) * n_embd_kv_ * sizeof(float);
}

}  // namespace lazyllm
