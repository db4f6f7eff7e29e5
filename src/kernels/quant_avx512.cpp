// AVX-512 (F, BW, VL, DQ) dequantizers: 16 floats per register, bit-identical to quant_ref.cpp.
// Entered only when isa_supported(kAvx512) holds (quant.cpp checks). FMA is used freely: every
// product in these formats is exact in fp32 (see "Exactness" in quant_blocks.h), so a fused
// multiply-add rounds exactly as the reference's multiply-then-add does.
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers (the `__Y = __Y` of
// _mm512_undefined_*; GCC bug 105593, fixed in GCC 13). The location is the header, so
// silencing it around the include leaves this file's own code checked.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cstring>

#include "kernels/quant_blocks.h"
#include "kernels/quant_variants.h"

namespace lazyllm::kernels::avx512 {

namespace {

using namespace quant;  // NOLINT: block structs and bit helpers of this file's concern

// F16C conversion of a block scale; same result as fp16_to_fp32_scalar (NaNs quieted too).
inline float half(uint16_t h) { return _cvtsh_ss(h); }

// 16 unsigned bytes -> 16 floats.
inline __m512 u8_to_ps(__m128i b) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b)); }
// 16 signed bytes -> 16 floats.
inline __m512 i8_to_ps(__m128i b) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)); }

void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t nb) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m512i eight = _mm512_set1_epi32(8);
    for (int64_t i = 0; i < nb; ++i, y += kQk4_0) {
        const __m512 d = _mm512_set1_ps(half(x[i].d));
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
        const __m128i lo = _mm_and_si128(raw, m4);
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(raw, 4), m4);
        const __m512i q0 = _mm512_sub_epi32(_mm512_cvtepu8_epi32(lo), eight);
        const __m512i q1 = _mm512_sub_epi32(_mm512_cvtepu8_epi32(hi), eight);
        _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(q0), d));
        _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(q1), d));
    }
}

// The default model's main format: two blocks (64 outputs) per iteration so the loads,
// conversions and stores of neighbouring blocks overlap.
void dequantize_q4_1(const BlockQ4_1* x, float* y, int64_t nb) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2, y += 2 * kQk4_1) {
        const __m512 d0 = _mm512_set1_ps(half(x[i].d));
        const __m512 m0 = _mm512_set1_ps(half(x[i].m));
        const __m512 d1 = _mm512_set1_ps(half(x[i + 1].d));
        const __m512 m1 = _mm512_set1_ps(half(x[i + 1].m));
        const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
        const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i + 1].qs));
        const __m128i lo0 = _mm_and_si128(r0, m4);
        const __m128i hi0 = _mm_and_si128(_mm_srli_epi16(r0, 4), m4);
        const __m128i lo1 = _mm_and_si128(r1, m4);
        const __m128i hi1 = _mm_and_si128(_mm_srli_epi16(r1, 4), m4);
        _mm512_storeu_ps(y, _mm512_fmadd_ps(u8_to_ps(lo0), d0, m0));
        _mm512_storeu_ps(y + 16, _mm512_fmadd_ps(u8_to_ps(hi0), d0, m0));
        _mm512_storeu_ps(y + 32, _mm512_fmadd_ps(u8_to_ps(lo1), d1, m1));
        _mm512_storeu_ps(y + 48, _mm512_fmadd_ps(u8_to_ps(hi1), d1, m1));
    }
    for (; i < nb; ++i, y += kQk4_1) {
        const __m512 d = _mm512_set1_ps(half(x[i].d));
        const __m512 m = _mm512_set1_ps(half(x[i].m));
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
        const __m128i lo = _mm_and_si128(raw, m4);
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(raw, 4), m4);
        _mm512_storeu_ps(y, _mm512_fmadd_ps(u8_to_ps(lo), d, m));
        _mm512_storeu_ps(y + 16, _mm512_fmadd_ps(u8_to_ps(hi), d, m));
    }
}

// Bit j of qh is the fifth bit of element j: a mask register ORs 16 into those lanes.
void dequantize_q5_0(const BlockQ5_0* x, float* y, int64_t nb) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m512i sixteen = _mm512_set1_epi32(16);
    for (int64_t i = 0; i < nb; ++i, y += kQk5_0) {
        const __m512 d = _mm512_set1_ps(half(x[i].d));
        uint32_t qh;
        std::memcpy(&qh, x[i].qh, sizeof(qh));
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
        __m512i q0 = _mm512_cvtepu8_epi32(_mm_and_si128(raw, m4));
        __m512i q1 = _mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(raw, 4), m4));
        q0 = _mm512_mask_or_epi32(q0, static_cast<__mmask16>(qh & 0xFFFF), q0, sixteen);
        q1 = _mm512_mask_or_epi32(q1, static_cast<__mmask16>(qh >> 16), q1, sixteen);
        q0 = _mm512_sub_epi32(q0, sixteen);
        q1 = _mm512_sub_epi32(q1, sixteen);
        _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(q0), d));
        _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(q1), d));
    }
}

void dequantize_q5_1(const BlockQ5_1* x, float* y, int64_t nb) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m512i sixteen = _mm512_set1_epi32(16);
    for (int64_t i = 0; i < nb; ++i, y += kQk5_1) {
        const __m512 d = _mm512_set1_ps(half(x[i].d));
        const __m512 m = _mm512_set1_ps(half(x[i].m));
        uint32_t qh;
        std::memcpy(&qh, x[i].qh, sizeof(qh));
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
        __m512i q0 = _mm512_cvtepu8_epi32(_mm_and_si128(raw, m4));
        __m512i q1 = _mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(raw, 4), m4));
        q0 = _mm512_mask_or_epi32(q0, static_cast<__mmask16>(qh & 0xFFFF), q0, sixteen);
        q1 = _mm512_mask_or_epi32(q1, static_cast<__mmask16>(qh >> 16), q1, sixteen);
        _mm512_storeu_ps(y, _mm512_fmadd_ps(_mm512_cvtepi32_ps(q0), d, m));
        _mm512_storeu_ps(y + 16, _mm512_fmadd_ps(_mm512_cvtepi32_ps(q1), d, m));
    }
}

void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQk8_0) {
        const __m512 d = _mm512_set1_ps(half(x[i].d));
        const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
        const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs + 16));
        _mm512_storeu_ps(y, _mm512_mul_ps(i8_to_ps(q0), d));
        _mm512_storeu_ps(y + 16, _mm512_mul_ps(i8_to_ps(q1), d));
    }
}

// 32 elements of one K-quant sub-block: y = d * q - m, q given as 32 unsigned bytes.
inline void store_sub_block(__m256i q, float d, float m, float* y) {
    const __m512 dv = _mm512_set1_ps(d);
    const __m512 mv = _mm512_set1_ps(m);
    const __m512 q0 = u8_to_ps(_mm256_castsi256_si128(q));
    const __m512 q1 = u8_to_ps(_mm256_extracti128_si256(q, 1));
    _mm512_storeu_ps(y, _mm512_fmsub_ps(dv, q0, mv));
    _mm512_storeu_ps(y + 16, _mm512_fmsub_ps(dv, q1, mv));
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
            const auto bit0 = static_cast<char>(1 << (2 * c));
            const auto bit1 = static_cast<char>(2 << (2 * c));
            const __mmask32 h0 = _mm256_test_epi8_mask(qh, _mm256_set1_epi8(bit0));
            const __mmask32 h1 = _mm256_test_epi8_mask(qh, _mm256_set1_epi8(bit1));
            const __m256i q0 =
                _mm256_or_si256(_mm256_and_si256(raw, m4), _mm256_maskz_mov_epi8(h0, sixteen));
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4),
                                               _mm256_maskz_mov_epi8(h1, sixteen));
            store_sub_block(q0, ds[2 * c], ms[2 * c], y);
            store_sub_block(q1, ds[2 * c + 1], ms[2 * c + 1], y + 32);
        }
    }
}

// 16 elements sharing one Q6_K scale: y = (d * sc) * q, q given as signed bytes.
inline void store_q6(__m128i q, float scale, float* y) {
    _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_set1_ps(scale), i8_to_ps(q)));
}

inline void store_q6_pair(__m256i q, const float* scale, float* y) {
    store_q6(_mm256_castsi256_si128(q), scale[0], y);
    store_q6(_mm256_extracti128_si256(q, 1), scale[1], y + 16);
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
    for (; i + 16 <= n; i += 16) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
        _mm512_storeu_ps(y + i, _mm512_cvtph_ps(h));
    }
    for (; i < n; ++i) y[i] = half(x[i]);
}

void dequantize_bf16(const uint16_t* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
        const __m512i u = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
        _mm512_storeu_ps(y + i, _mm512_castsi512_ps(u));
    }
    for (; i < n; ++i) y[i] = bf16_to_fp32_scalar(x[i]);
}

// 16 floats -> 16 bf16, the integer form of fp32_to_bf16_scalar (round to nearest even, NaN
// made quiet, subnormals rounded rather than flushed).
inline __m256i cvt_bf16(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i abs = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7f800000));
    const __m512i hi = _mm512_srli_epi32(u, 16);
    const __m512i bias =
        _mm512_add_epi32(_mm512_and_si512(hi, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7fff));
    const __m512i rne = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    const __m512i quiet = _mm512_or_si512(hi, _mm512_set1_epi32(64));
    return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(rne, nan, quiet));
}

}  // namespace

void fp32_to_bf16_row(const float* src, bf16_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                            cvt_bf16(_mm512_loadu_ps(src + i)));
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
    // Dequantize a chunk into L1-resident fp32, then round it; the staging costs little next to
    // the conversion itself and keeps one kernel per format.
    const BlockShape shape = block_shape(type);
    const auto* bytes = static_cast<const uint8_t*>(src);
    alignas(64) float buf[kBf16Chunk];  // [kBf16Chunk] fp32 staging of one chunk
    for (int64_t i = 0; i < n; i += kBf16Chunk) {
        const int64_t len = std::min(kBf16Chunk, n - i);
        dequantize_unchecked(type, bytes + (i / shape.elems) * shape.bytes, buf, len);
        fp32_to_bf16_row(buf, dst + i, len);
    }
}

}  // namespace lazyllm::kernels::avx512
