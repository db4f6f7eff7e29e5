// AVX-512 attention: the fp32 kernels of attention_inl.h instantiated for 16 lanes, the tile
// finalize (transposed 16 x 16, bf16 rounding in registers) and the f16 cache write.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/attention_inl.h"
#include "kernels/ops_simd_avx512.h"

namespace lazyllm::kernels {
LAZYLLM_ATTENTION_INSTANTIATE(Isa::kAvx512);
}  // namespace lazyllm::kernels

namespace lazyllm::kernels::detail {

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
