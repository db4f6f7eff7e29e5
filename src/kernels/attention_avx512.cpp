// AVX-512 attention: the fp32 kernels of attention_inl.h instantiated for 16 lanes, the tile
// finalize (transposed 16 x 16, bf16 rounding in registers), the vectorized pieces of the
// LazyLLM head-mean scores, and the f16 cache write.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/attention_inl.h"
#include "kernels/ops_simd_avx512.h"

namespace lazyllm::kernels {
LAZYLLM_ATTENTION_INSTANTIATE(Isa::kAvx512);
}  // namespace lazyllm::kernels

namespace lazyllm::kernels::detail {

namespace {

// 16 fp32 values from the elements of type T in the lanes of m (0 elsewhere).
inline __m512 load16_masked(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 load16_masked(const uint16_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

template <typename T>
void head_probs(const AttentionArgs& a, const float* q_head, int kv_head, int64_t n, float* probs) {
    const int d = a.head_dim;
    const T* k_head = static_cast<const T*>(a.k) + kv_head_offset(a, kv_head);
    // Logits, 16 keys at a time: 16 per-key partial-sum vectors reduced to one vector.
    for (int64_t j0 = 0; j0 < n; j0 += 16) {
        const int nj = static_cast<int>(std::min<int64_t>(16, n - j0));
        __m512 acc[16];
        for (int jj = 0; jj < 16; ++jj) {
            acc[jj] = _mm512_setzero_ps();
            if (jj >= nj) continue;
            const T* k = k_head + kv_row_of(a, j0 + jj) * a.kv_stride;
            for (int c = 0; c < d; c += 16) {
                const __mmask16 mask = simd512::tail_mask(d - c);
                acc[jj] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, q_head + c),
                                          load16_masked(k + c, mask), acc[jj]);
            }
        }
        _mm512_mask_storeu_ps(
            probs + j0, simd512::tail_mask(nj),
            _mm512_mul_ps(Vec<Isa::kAvx512>::transpose_sum(acc), _mm512_set1_ps(a.scale)));
    }
    // Softmax in place.
    __m512 mv = _mm512_set1_ps(-__builtin_inff());
    for (int64_t j = 0; j < n; j += 16) {
        mv = _mm512_max_ps(mv, _mm512_mask_loadu_ps(mv, simd512::tail_mask(n - j), probs + j));
    }
    const __m512 max_v = _mm512_set1_ps(_mm512_reduce_max_ps(mv));
    __m512 sum_v = _mm512_setzero_ps();
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 mask = simd512::tail_mask(n - j);
        const __m512 e = simd512::exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, probs + j), max_v));
        sum_v = _mm512_add_ps(sum_v, _mm512_maskz_mov_ps(mask, e));
        _mm512_mask_storeu_ps(probs + j, mask, e);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum_v));
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 mask = simd512::tail_mask(n - j);
        _mm512_mask_storeu_ps(probs + j, mask,
                              _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, probs + j), inv));
    }
}

}  // namespace

void attention_finalize_avx512(const AttentionArgs& a, const AttnTile& t, const AttnState& st) {
    const int d = a.head_dim;  // a multiple of 16 (checked by the driver)
    alignas(64) float inv[kAttnLanes];
    for (int lane = 0; lane < kAttnLanes; ++lane) {
        inv[lane] = st.l[lane] > 0.0f ? 1.0f / st.l[lane] : 0.0f;
    }
    for (int c = 0; c < d; c += 16) {
        __m512 r[16];  // rows c..c+15 of O^T, transposed to one vector of 16 dims per lane
        for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(st.o + (c + i) * kAttnLanes);
        simd512::transpose16x16(r);
        for (int lane = 0; lane < t.n_lanes; ++lane) {
            const int64_t off =
                t.row[lane] * a.out_stride + static_cast<int64_t>(t.head[lane]) * d + c;
            const __m512 o = _mm512_mul_ps(r[lane], _mm512_set1_ps(inv[lane]));
            if (a.out16 != nullptr) {
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.out16 + off), simd512::to_bf16(o));
            } else {
                _mm512_storeu_ps(a.out + off, o);
            }
        }
    }
}

void head_probs_avx512(const AttentionArgs& a, const float* q_head, int kv_head, int64_t n,
                       float* probs) {
    if (a.kv_type == KvType::kF16) {
        head_probs<uint16_t>(a, q_head, kv_head, n, probs);
    } else {
        head_probs<float>(a, q_head, kv_head, n, probs);
    }
}

void kv_store_rows_avx512(KvType type, const float* src, int64_t src_stride, int64_t n_rows,
                          int64_t width, const int32_t* rows, void* dst, int64_t dst_stride) {
    for (int64_t i = 0; i < n_rows; ++i) {
        const float* s = src + i * src_stride;
        const int64_t off = static_cast<int64_t>(rows[i]) * dst_stride;
        if (type == KvType::kF32) {
            std::memcpy(static_cast<float*>(dst) + off, s, sizeof(float) * width);
            continue;
        }
        uint16_t* d = static_cast<uint16_t*>(dst) + off;
        for (int64_t c = 0; c < width; c += 16) {
            const __mmask16 mask = simd512::tail_mask(width - c);
            const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(mask, s + c),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            _mm256_mask_storeu_epi16(d + c, mask, h);
        }
    }
}

}  // namespace lazyllm::kernels::detail
