// LazyLLM's importance score (attention.h, attention_scores_head_mean): the last token's
// attention probabilities over the visible keys, averaged over the query heads. Each K row is
// read once for its group of query heads (group_logits, attention_inl.h), keys in chunks over
// the threads; the same bits for any thread count.
#include <algorithm>
#include <vector>

#include "kernels/attention.h"
#include "kernels/attention_isa.h"
#include "kernels/workspace.h"

namespace lazyllm::kernels {

namespace {

// Scratch of attention_scores_head_mean: every query head's probabilities over the keys.
struct ScoreScratch {
    std::vector<float> probs;  // [n_head][n_vis]
};

// [n_head, n_vis] of ScoreScratch: ctx.ws's part where the caller passes one, else `local`.
float* score_logits(const KernelContext& ctx, std::vector<float>& local, int n_head,
                    int64_t n_vis) {
    std::vector<float>& probs = ctx.ws != nullptr ? ctx.ws->caller<ScoreScratch>().probs : local;
    if (static_cast<int64_t>(probs.size()) < n_head * n_vis) probs.resize(n_head * n_vis);
    return probs.data();
}

}  // namespace

void attention_scores_head_mean(const KernelContext& ctx, const AttentionArgs& a,
                                const float* q_row, int32_t q_pos, float* scores) {
    detail::validate_attention(a);
    // Vectorized on AVX2 and AVX-512 without a sliding window (the reference elsewhere).
    const int width = isa_dispatch(ctx.isa, []<Isa I>() { return kVecWidth<I>; });
    if (a.window > 0 || width == 0 || a.head_dim % width != 0) {
        ref::attention_scores_head_mean(a, q_row, q_pos, scores);
        return;
    }
    // Visible keys are the prefix [0, n_vis) of the sorted key set.
    const int64_t n_vis = std::upper_bound(a.kv_pos, a.kv_pos + a.n_kv, q_pos) - a.kv_pos;
    if (n_vis == 0) {
        std::fill(scores, scores + a.n_kv, 0.0f);
        return;
    }
    const int group = a.n_head / a.n_head_kv;
    const int64_t d = a.head_dim;
    std::vector<float> local;
    float* probs = score_logits(ctx, local, a.n_head, n_vis);
    // Logits in (KV head, key chunk) items, each K row read once for its group of query heads;
    // chunks are a multiple of every vector width, so each key's logit is the same in any split.
    constexpr int64_t kChunk = 1024;
    const int64_t n_chunks = (n_vis + kChunk - 1) / kChunk;
#pragma omp parallel num_threads(std::max(1, ctx.n_threads))
    {
#pragma omp for schedule(dynamic, 1)
        for (int64_t item = 0; item < a.n_head_kv * n_chunks; ++item) {
            const int g = static_cast<int>(item / n_chunks);
            const int64_t j0 = item % n_chunks * kChunk, j1 = std::min(n_vis, j0 + kChunk);
            isa_dispatch(ctx.isa, [&]<Isa I>() {
                if constexpr (I != Isa::kRef) {
                    detail::group_logits<I>(a, q_row + g * group * d, group, g, j0, j1,
                                            probs + g * group * n_vis, n_vis);
                }
            });
        }
        detail::head_mean_from_logits(ctx, a.n_head, n_vis, a.n_kv, probs, scores);
    }
}

namespace detail {

void head_mean_from_logits(const KernelContext& ctx, int n_head, int64_t n_vis, int64_t n_kv,
                           float* probs, float* scores) {
    constexpr int64_t kChunk = 1024;
    const float n_heads = static_cast<float>(n_head);
#pragma omp for schedule(dynamic, 1)
    for (int h = 0; h < n_head; ++h) {
        isa_dispatch(ctx.isa, [&]<Isa I>() {
            if constexpr (I != Isa::kRef) detail::softmax_in_place<I>(probs + h * n_vis, n_vis);
        });
    }
    // Same order as the reference: sum over heads, then divide.
#pragma omp for schedule(static)
    for (int64_t j0 = 0; j0 < n_kv; j0 += kChunk) {
        const int64_t j1 = std::min(n_kv, j0 + kChunk);
        const int64_t v1 = std::min(n_vis, j1);
        std::fill(scores + j0, scores + j1, 0.0f);
        for (int h = 0; h < n_head; ++h) {
            const float* p = probs + h * n_vis;
            for (int64_t j = j0; j < v1; ++j) scores[j] += p[j];
        }
        for (int64_t j = j0; j < v1; ++j) scores[j] /= n_heads;
    }
}

}  // namespace detail

}  // namespace lazyllm::kernels
