// AVX2 + FMA + F16C dequantizers: 8 floats per register, bit-identical to quant_ref.cpp.
// Entered only when isa_supported(kAvx2) holds (quant.cpp checks). FMA is used freely: every
// product in these formats is exact in fp32 (see "Exactness" in quant_blocks.h), so a fused
// multiply-add rounds exactly as the reference's multiply-then-add does.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/quant_blocks.h"
#include "kernels/quant_variants.h"

namespace lazyllm::kernels::avx2 {

namespace {

using namespace quant;  // NOLINT: block structs and bit helpers of this file's concern

// F16C conversion of a block scale; same result as fp16_to_fp32_scalar (NaNs quieted too).
inline float half(uint16_t h) { return _cvtsh_ss(h); }

// Low 8 unsigned / signed bytes -> 8 floats.
inline __m256 u8_to_ps(__m128i b) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)); }
inline __m256 i8_to_ps(__m128i b) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)); }

// 16 unsigned 4-bit values (one per byte) -> y[0..15] = q * d + m.
inline void store16_affine(__m128i q, __m256 d, __m256 m, float* y) {
    _mm256_storeu_ps(y, _mm256_fmadd_ps(u8_to_ps(q), d, m));
    _mm256_storeu_ps(y + 8, _mm256_fmadd_ps(u8_to_ps(_mm_srli_si128(q, 8)), d, m));
}

// 16 signed bytes -> y[0..15] = q * d.
inline void store16_scaled(__m128i q, __m256 d, float* y) {
    _mm256_storeu_ps(y, _mm256_mul_ps(i8_to_ps(q), d));
    _mm256_storeu_ps(y + 8, _mm256_mul_ps(i8_to_ps(_mm_srli_si128(q, 8)), d));
}

void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t nb) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i eight = _mm_set1_epi8(8);
    for (int64_t i = 0; i < nb; ++i, y += kQk4_0) {
        const __m256 d = _mm256_set1_ps(half(x[i].d));
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(raw, m4), eight);
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(raw, 4), m4), eight);
        store16_scaled(lo, d, y);
        store16_scaled(hi, d, y + 16);
    }
}

void dequantize_q4_1(const BlockQ4_1* x, float* y, int64_t nb) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    for (int64_t i = 0; i < nb; ++i, y += kQk4_1) {
        const __m256 d = _mm256_set1_ps(half(x[i].d));
        const __m256 m = _mm256_set1_ps(half(x[i].m));
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
        store16_affine(_mm_and_si128(raw, m4), d, m, y);
        store16_affine(_mm_and_si128(_mm_srli_epi16(raw, 4), m4), d, m, y + 16);
    }
}

// Fifth bits of 16 elements as bytes of value 16: bit j of `bits` belongs to element j.
// Each byte picks its bit with a per-byte mask after broadcasting the right qh byte.
inline __m128i q5_high(uint32_t bits16) {
    const __m128i select = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m128i bit = _mm_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
    const __m128i bytes = _mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int>(bits16)), select);
    const __m128i set = _mm_cmpeq_epi8(_mm_and_si128(bytes, bit), bit);
    return _mm_and_si128(set, _mm_set1_epi8(16));
}

void dequantize_q5_0(const BlockQ5_0* x, float* y, int64_t nb) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i sixteen = _mm_set1_epi8(16);
    for (int64_t i = 0; i < nb; ++i, y += kQk5_0) {
        const __m256 d = _mm256_set1_ps(half(x[i].d));
        uint32_t qh;
        std::memcpy(&qh, x[i].qh, sizeof(qh));
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
        const __m128i lo = _mm_or_si128(_mm_and_si128(raw, m4), q5_high(qh & 0xFFFF));
        const __m128i hi =
            _mm_or_si128(_mm_and_si128(_mm_srli_epi16(raw, 4), m4), q5_high(qh >> 16));
        store16_scaled(_mm_sub_epi8(lo, sixteen), d, y);
        store16_scaled(_mm_sub_epi8(hi, sixteen), d, y + 16);
    }
}

void dequantize_q5_1(const BlockQ5_1* x, float* y, int64_t nb) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    for (int64_t i = 0; i < nb; ++i, y += kQk5_1) {
        const __m256 d = _mm256_set1_ps(half(x[i].d));
        const __m256 m = _mm256_set1_ps(half(x[i].m));
        uint32_t qh;
        std::memcpy(&qh, x[i].qh, sizeof(qh));
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
        const __m128i lo = _mm_or_si128(_mm_and_si128(raw, m4), q5_high(qh & 0xFFFF));
        const __m128i hi =
            _mm_or_si128(_mm_and_si128(_mm_srli_epi16(raw, 4), m4), q5_high(qh >> 16));
        store16_affine(lo, d, m, y);
        store16_affine(hi, d, m, y + 16);
    }
}

void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQk8_0) {
        const __m256 d = _mm256_set1_ps(half(x[i].d));
        store16_scaled(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs)), d, y);
        store16_scaled(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs + 16)), d, y + 16);
    }
}

// 32 elements of one K-quant sub-block: y = d * q - m, q given as 32 unsigned bytes.
inline void store_sub_block(__m256i q, float d, float m, float* y) {
    const __m256 dv = _mm256_set1_ps(d);
    const __m256 mv = _mm256_set1_ps(m);
    const __m128i lo = _mm256_castsi256_si128(q);
    const __m128i hi = _mm256_extracti128_si256(q, 1);
    _mm256_storeu_ps(y, _mm256_fmsub_ps(dv, u8_to_ps(lo), mv));
    _mm256_storeu_ps(y + 8, _mm256_fmsub_ps(dv, u8_to_ps(_mm_srli_si128(lo, 8)), mv));
    _mm256_storeu_ps(y + 16, _mm256_fmsub_ps(dv, u8_to_ps(hi), mv));
    _mm256_storeu_ps(y + 24, _mm256_fmsub_ps(dv, u8_to_ps(_mm_srli_si128(hi, 8)), mv));
}

// Per-sub-block scales of a Q4_K / Q5_K super-block, as the reference forms them.
inline void k_scales(const uint8_t* scales, float d, float min, float* ds, float* ms) {
    for (int j = 0; j < kQkK / 32; ++j) {
        uint8_t sc, m;
        get_scale_min_k4(j, scales, &sc, &m);
        ds[j] = d * sc;
        ms[j] = min * m;
    }
}

void dequantize_q4_k(const BlockQ4K* x, float* y, int64_t nb) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < nb; ++i) {
        float ds[8], ms[8];
        k_scales(x[i].scales, half(x[i].d), half(x[i].dmin), ds, ms);
        for (int c = 0; c < 4; ++c, y += 64) {
            const __m256i raw =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs + 32 * c));
            store_sub_block(_mm256_and_si256(raw, m4), ds[2 * c], ms[2 * c], y);
            store_sub_block(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4), ds[2 * c + 1],
                            ms[2 * c + 1], y + 32);
        }
    }
}

void dequantize_q5_k(const BlockQ5K* x, float* y, int64_t nb) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i sixteen = _mm256_set1_epi8(16);
    for (int64_t i = 0; i < nb; ++i) {
        float ds[8], ms[8];
        k_scales(x[i].scales, half(x[i].d), half(x[i].dmin), ds, ms);
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qh));
        for (int c = 0; c < 4; ++c, y += 64) {
            const __m256i raw =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs + 32 * c));
            // Sub-block s takes its fifth bits from bit s of the 32 qh bytes.
            const __m256i bit0 = _mm256_set1_epi8(static_cast<char>(1 << (2 * c)));
            const __m256i bit1 = _mm256_set1_epi8(static_cast<char>(2 << (2 * c)));
            const __m256i h0 =
                _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bit0), bit0), sixteen);
            const __m256i h1 =
                _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bit1), bit1), sixteen);
            const __m256i q0 = _mm256_or_si256(_mm256_and_si256(raw, m4), h0);
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4), h1);
            store_sub_block(q0, ds[2 * c], ms[2 * c], y);
            store_sub_block(q1, ds[2 * c + 1], ms[2 * c + 1], y + 32);
        }
    }
}

// 32 signed Q6_K values, two sub-blocks of 16: y = (d * sc) * q.
inline void store_q6_pair(__m256i q, const float* scale, float* y) {
    store16_scaled(_mm256_castsi256_si128(q), _mm256_set1_ps(scale[0]), y);
    store16_scaled(_mm256_extracti128_si256(q, 1), _mm256_set1_ps(scale[1]), y + 16);
}

void dequantize_q6_k(const BlockQ6K* x, float* y, int64_t nb) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i m2 = _mm256_set1_epi8(0x30);
    const __m256i off = _mm256_set1_epi8(32);
    for (int64_t i = 0; i < nb; ++i) {
        const float d = half(x[i].d);
        float scale[kQkK / 16];  // d * sc, as the reference's left-to-right d * sc * q
        for (int j = 0; j < kQkK / 16; ++j) scale[j] = d * x[i].scales[j];
        for (int c = 0; c < 2; ++c, y += 128) {
            const uint8_t* ql = x[i].ql + 64 * c;
            const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
            const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
            const __m256i h =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qh + 32 * c));
            // Byte-wise: low nibble | two high bits << 4, minus 32 (-32..31 fits int8).
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(l0, m4),
                                               _mm256_and_si256(_mm256_slli_epi16(h, 4), m2));
            const __m256i q2 = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                               _mm256_and_si256(_mm256_slli_epi16(h, 2), m2));
            const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                               _mm256_and_si256(h, m2));
            const __m256i q4 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                               _mm256_and_si256(_mm256_srli_epi16(h, 2), m2));
            const float* sc = scale + 8 * c;
            store_q6_pair(_mm256_sub_epi8(q1, off), sc + 0, y + 0);
            store_q6_pair(_mm256_sub_epi8(q2, off), sc + 2, y + 32);
            store_q6_pair(_mm256_sub_epi8(q3, off), sc + 4, y + 64);
            store_q6_pair(_mm256_sub_epi8(q4, off), sc + 6, y + 96);
        }
    }
}

void dequantize_f16(const uint16_t* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; ++i) y[i] = half(x[i]);
}

void dequantize_bf16(const uint16_t* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
        const __m256i u = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
        _mm256_storeu_ps(y + i, _mm256_castsi256_ps(u));
    }
    for (; i < n; ++i) y[i] = bf16_to_fp32_scalar(x[i]);
}

// 8 floats -> 8 bf16 in the low 16 bits of each 32-bit lane: the integer form of
// fp32_to_bf16_scalar (round to nearest even, NaN made quiet, subnormals rounded).
inline __m256i cvt_bf16_epi32(__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
    const __m256i hi = _mm256_srli_epi32(u, 16);
    const __m256i bias =
        _mm256_add_epi32(_mm256_and_si256(hi, _mm256_set1_epi32(1)), _mm256_set1_epi32(0x7fff));
    const __m256i rne = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    const __m256i quiet = _mm256_or_si256(hi, _mm256_set1_epi32(64));
    return _mm256_blendv_epi8(rne, quiet, nan);
}

}  // namespace

void fp32_to_bf16_row(const float* src, bf16_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i a = cvt_bf16_epi32(_mm256_loadu_ps(src + i));
        const __m256i b = cvt_bf16_epi32(_mm256_loadu_ps(src + i + 8));
        // Lanes hold values <= 0xFFFF, so the unsigned-saturating pack is exact; it packs per
        // 128-bit half, and the permute restores element order.
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), packed);
    }
    for (; i < n; ++i) dst[i] = fp32_to_bf16_scalar(src[i]);
}

void dequantize_unchecked(GgmlType type, const void* src, float* dst, int64_t n) {
    switch (type) {
        case GgmlType::F32:
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            return;
        case GgmlType::F16:
            return dequantize_f16(static_cast<const uint16_t*>(src), dst, n);
        case GgmlType::BF16:
            return dequantize_bf16(static_cast<const uint16_t*>(src), dst, n);
        case GgmlType::Q8_0:
            return dequantize_q8_0(static_cast<const BlockQ8_0*>(src), dst, n / kQk8_0);
        case GgmlType::Q4_0:
            return dequantize_q4_0(static_cast<const BlockQ4_0*>(src), dst, n / kQk4_0);
        case GgmlType::Q4_1:
            return dequantize_q4_1(static_cast<const BlockQ4_1*>(src), dst, n / kQk4_1);
        case GgmlType::Q5_0:
            return dequantize_q5_0(static_cast<const BlockQ5_0*>(src), dst, n / kQk5_0);
        case GgmlType::Q5_1:
            return dequantize_q5_1(static_cast<const BlockQ5_1*>(src), dst, n / kQk5_1);
        case GgmlType::Q4_K:
            return dequantize_q4_k(static_cast<const BlockQ4K*>(src), dst, n / kQkK);
        case GgmlType::Q5_K:
            return dequantize_q5_k(static_cast<const BlockQ5K*>(src), dst, n / kQkK);
        case GgmlType::Q6_K:
            return dequantize_q6_k(static_cast<const BlockQ6K*>(src), dst, n / kQkK);
        default:
            return;  // rejected by quant.cpp
    }
}

void dequantize_bf16_unchecked(GgmlType type, const void* src, bf16_t* dst, int64_t n) {
    if (type == GgmlType::F32) return fp32_to_bf16_row(static_cast<const float*>(src), dst, n);
    // Dequantize a chunk into L1-resident fp32, then round it to bf16.
    const BlockShape shape = block_shape(type);
    const auto* bytes = static_cast<const uint8_t*>(src);
    alignas(32) float buf[kBf16Chunk];  // [kBf16Chunk] fp32 staging of one chunk
    for (int64_t i = 0; i < n; i += kBf16Chunk) {
        const int64_t len = std::min(kBf16Chunk, n - i);
        dequantize_unchecked(type, bytes + (i / shape.elems) * shape.bytes, buf, len);
        fp32_to_bf16_row(buf, dst + i, len);
    }
}

}  // namespace lazyllm::kernels::avx2
