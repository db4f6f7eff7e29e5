// Reference attention: per (query, head), a straightforward two-pass softmax over the keys
// whose position is <= the query's position (and within its window, if any). fp32 throughout
// (half K/V converted exactly).
// The definition the tiled kernels are tested against.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/attention.h"
#include "kernels/gemm_convert.h"
#include "kernels/quant_blocks.h"

namespace lazyllm::kernels::ref {

namespace {

float dot(const float* a, const float* b, int n) {
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) acc += a[i] * b[i];
    return acc;
}

// probs[j] = softmax_j(scale * q . k_j) over visible keys, 0 for the others.
// Returns false when no key is visible. k_row: [head_dim] scratch.
bool softmax_row(const AttentionArgs& a, const float* q_head, int32_t q_pos, int kv_head,
                 float* probs, float* k_row) {
    float max_s = -std::numeric_limits<float>::infinity();
    bool any = false;
    for (int64_t j = 0; j < a.n_kv; ++j) {
        if (!key_visible(a, a.kv_pos[j], q_pos)) {
            probs[j] = 0.0f;
            continue;
        }
        load_kv_row(a, a.k, j, kv_head, k_row);
        probs[j] = dot(q_head, k_row, a.head_dim) * a.scale;
        max_s = std::max(max_s, probs[j]);
        any = true;
    }
    if (!any) return false;
    float sum = 0.0f;
    for (int64_t j = 0; j < a.n_kv; ++j) {
        if (!key_visible(a, a.kv_pos[j], q_pos)) continue;
        probs[j] = std::exp(probs[j] - max_s);
        sum += probs[j];
    }
    for (int64_t j = 0; j < a.n_kv; ++j) probs[j] /= sum;
    return true;
}

}  // namespace

void load_kv_row(const AttentionArgs& a, const void* base, int64_t j, int kv_head, float* out) {
    const int64_t row = kv_row_of(a, j);
    const int64_t off = row * a.kv_stride + kv_head_offset(a, kv_head);
    if (a.kv_type == KvType::kF16) {
        const uint16_t* src = static_cast<const uint16_t*>(base) + off;
        for (int c = 0; c < a.head_dim; ++c) out[c] = quant::fp16_to_fp32_scalar(src[c]);
    } else {
        std::memcpy(out, static_cast<const float*>(base) + off, sizeof(float) * a.head_dim);
    }
}

void attention(const AttentionArgs& a) {
    const int group = a.n_head / a.n_head_kv;
    const int d = a.head_dim;
    std::vector<float> probs(a.n_kv);  // [n_kv]
    std::vector<float> row(d);         // [head_dim] one K or V row as fp32
    for (int64_t i = 0; i < a.n_q; ++i) {
        for (int h = 0; h < a.n_head; ++h) {
            const int g = h / group;
            const float* q = a.q + i * a.q_stride + static_cast<int64_t>(h) * d;
            float* out = a.out + i * a.out_stride + static_cast<int64_t>(h) * d;
            std::fill(out, out + d, 0.0f);
            if (!softmax_row(a, q, a.q_pos[i], g, probs.data(), row.data())) continue;
            for (int64_t j = 0; j < a.n_kv; ++j) {
                if (probs[j] == 0.0f) continue;
                load_kv_row(a, a.v, j, g, row.data());
                for (int c = 0; c < d; ++c) out[c] += probs[j] * row[c];
            }
        }
    }
}

void attention_scores_head_mean(const AttentionArgs& a, const float* q_row, int32_t q_pos,
                                float* scores) {
    const int group = a.n_head / a.n_head_kv;
    std::vector<float> probs(a.n_kv);    // [n_kv]
    std::vector<float> row(a.head_dim);  // [head_dim]
    std::fill(scores, scores + a.n_kv, 0.0f);
    for (int h = 0; h < a.n_head; ++h) {
        const float* q = q_row + static_cast<int64_t>(h) * a.head_dim;
        if (!softmax_row(a, q, q_pos, h / group, probs.data(), row.data())) continue;
        for (int64_t j = 0; j < a.n_kv; ++j) scores[j] += probs[j];
    }
    for (int64_t j = 0; j < a.n_kv; ++j) scores[j] /= static_cast<float>(a.n_head);
}

void kv_store_rows(KvType type, const float* src, int64_t src_stride, int64_t n_rows, int64_t width,
                   const int32_t* rows, void* dst, int64_t dst_stride) {
    for (int64_t i = 0; i < n_rows; ++i) {
        const float* s = src + i * src_stride;
        const int64_t off = static_cast<int64_t>(rows[i]) * dst_stride;
        if (type == KvType::kF16) {
            uint16_t* d = static_cast<uint16_t*>(dst) + off;
            for (int64_t c = 0; c < width; ++c) d[c] = quant::fp32_to_fp16_scalar(s[c]);
        } else {
            std::memcpy(static_cast<float*>(dst) + off, s, sizeof(float) * width);
        }
    }
}

void attention_parallel(const KernelContext& ctx, const AttentionArgs& a) {
    const int64_t chunk = 8;
    const int64_t n_chunks = (a.n_q + chunk - 1) / chunk;
#pragma omp parallel for num_threads(std::max(1, ctx.n_threads)) schedule(dynamic, 1)
    for (int64_t c = 0; c < n_chunks; ++c) {
        AttentionArgs sub = a;
        sub.q = a.q + c * chunk * a.q_stride;
        sub.q_pos = a.q_pos + c * chunk;
        sub.n_q = std::min(chunk, a.n_q - c * chunk);
        if (a.out16 == nullptr) {
            sub.out = a.out + c * chunk * a.out_stride;
            attention(sub);
            continue;
        }
        // bf16 output: the chunk in fp32, then rounded as the GEMMs round their input.
        const int64_t width = static_cast<int64_t>(a.n_head) * a.head_dim;
        std::vector<float> rows(static_cast<size_t>(sub.n_q * width));
        sub.out = rows.data();
        sub.out_stride = width;
        sub.out16 = nullptr;
        attention(sub);
        detail::convert_rows_to_bf16_ref(rows.data(), sub.n_q, width, width,
                                         a.out16 + c * chunk * a.out_stride, a.out_stride);
    }
}

}  // namespace lazyllm::kernels::ref
