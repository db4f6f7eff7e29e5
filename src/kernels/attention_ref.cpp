// Reference attention: per (query, head), a straightforward two-pass softmax over the keys
// whose position is <= the query's position. fp32 throughout. The definition the tiled
// kernels are tested against.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/attention.h"

namespace lazyllm::kernels::ref {

namespace {

float dot(const float* a, const float* b, int n) {
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) acc += a[i] * b[i];
    return acc;
}

// probs[j] = softmax_j(scale * q . k_j) over visible keys, 0 for the others.
// Returns false when no key is visible.
bool softmax_row(const AttentionArgs& a, const float* q_head, int32_t q_pos, int kv_head,
                 float* probs) {
    const int d = a.head_dim;
    float max_s = -std::numeric_limits<float>::infinity();
    bool any = false;
    for (int64_t j = 0; j < a.n_kv; ++j) {
        if (a.kv_pos[j] > q_pos) {
            probs[j] = 0.0f;
            continue;
        }
        const float* k = a.k + j * a.kv_stride + static_cast<int64_t>(kv_head) * d;
        probs[j] = dot(q_head, k, d) * a.scale;
        max_s = std::max(max_s, probs[j]);
        any = true;
    }
    if (!any) return false;
    float sum = 0.0f;
    for (int64_t j = 0; j < a.n_kv; ++j) {
        if (a.kv_pos[j] > q_pos) continue;
        probs[j] = std::exp(probs[j] - max_s);
        sum += probs[j];
    }
    for (int64_t j = 0; j < a.n_kv; ++j) probs[j] /= sum;
    return true;
}

}  // namespace

void attention(const AttentionArgs& a) {
    const int group = a.n_head / a.n_head_kv;
    const int d = a.head_dim;
    std::vector<float> probs(a.n_kv);  // [n_kv]
    for (int64_t i = 0; i < a.n_q; ++i) {
        for (int h = 0; h < a.n_head; ++h) {
            const int g = h / group;
            const float* q = a.q + i * a.q_stride + static_cast<int64_t>(h) * d;
            float* out = a.out + i * a.out_stride + static_cast<int64_t>(h) * d;
            std::fill(out, out + d, 0.0f);
            if (!softmax_row(a, q, a.q_pos[i], g, probs.data())) continue;
            for (int64_t j = 0; j < a.n_kv; ++j) {
                if (probs[j] == 0.0f) continue;
                const float* v = a.v + j * a.kv_stride + static_cast<int64_t>(g) * d;
                for (int c = 0; c < d; ++c) out[c] += probs[j] * v[c];
            }
        }
    }
}

void attention_scores_head_mean(const AttentionArgs& a, const float* q_row, int32_t q_pos,
                                float* scores) {
    const int group = a.n_head / a.n_head_kv;
    std::vector<float> probs(a.n_kv);  // [n_kv]
    std::fill(scores, scores + a.n_kv, 0.0f);
    for (int h = 0; h < a.n_head; ++h) {
        const float* q = q_row + static_cast<int64_t>(h) * a.head_dim;
        if (!softmax_row(a, q, q_pos, h / group, probs.data())) continue;
        for (int64_t j = 0; j < a.n_kv; ++j) scores[j] += probs[j];
    }
    for (int64_t j = 0; j < a.n_kv; ++j) scores[j] /= static_cast<float>(a.n_head);
}

}  // namespace lazyllm::kernels::ref
