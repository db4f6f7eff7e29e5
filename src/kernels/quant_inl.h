// The dequantizers written once against Vec<I> (simd.h), bit-identical to quant_ref.cpp. The
// bit unpacking works on 16 or 32 bytes with SSE / AVX2 integer instructions (every target has
// them); Vec<I> turns bytes into kWidth floats. FMA is used freely: every product in these
// formats is exact in fp32 (see "Exactness" in quant_blocks.h), so a fused multiply-add rounds
// exactly as the reference's multiply-then-add does. Included only by quant_avx2.cpp and
// quant_avx512.cpp, which instantiate it with LAZYLLM_QUANT_INSTANTIATE.
#pragma once

#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels/quant_isa.h"

namespace lazyllm::kernels::detail {

namespace {

using namespace quant;  // NOLINT: block structs and bit helpers of this file's concern

// F16C conversion of a block scale; same result as fp16_to_fp32_scalar (NaNs quieted too).
inline float half(uint16_t h) { return _cvtsh_ss(h); }

inline __m128i load128(const void* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
inline __m256i load256(const void* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// y[0..16) = f(float(byte k of q)), kWidth bytes at a time; bytes signed when kSigned.
template <Isa I, bool kSigned, typename Fn>
inline void bytes16(__m128i q, float* y, Fn&& f) {
    using V = Vec<I>;
#pragma GCC unroll 2
    for (int k = 0; k < 16; k += V::kWidth) {
        const __m128i part = k == 0 ? q : _mm_srli_si128(q, 8);  // kWidth 8: second half
        V::store(y + k, f(kSigned ? V::from_i8(part) : V::from_u8(part)));
    }
}

// 16 signed bytes -> y[0..15] = q * d.
template <Isa I>
inline void store16_scaled(__m128i q, typename Vec<I>::F d, float* y) {
    bytes16<I, true>(q, y, [&](auto v) { return Vec<I>::mul(v, d); });
}
// 16 unsigned bytes -> y[0..15] = q * d + m.
template <Isa I>
inline void store16_affine(__m128i q, typename Vec<I>::F d, typename Vec<I>::F m, float* y) {
    bytes16<I, false>(q, y, [&](auto v) { return Vec<I>::fmadd(v, d, m); });
}
// 32 unsigned bytes of one K-quant sub-block -> y = d * q - m.
template <Isa I>
inline void store_sub_block(__m256i q, float d, float m, float* y) {
    using V = Vec<I>;
    const auto dv = V::set1(d), mv = V::set1(m);
    const auto f = [&](auto v) { return V::fmsub(dv, v, mv); };
    bytes16<I, false>(_mm256_castsi256_si128(q), y, f);
    bytes16<I, false>(_mm256_extracti128_si256(q, 1), y + 16, f);
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

// The low and high nibbles of a 4-bit block (elements 0..15 and 16..31), with the fifth bits
// of Q5_0 / Q5_1 (qh) when given.
struct Nibbles {
    __m128i lo, hi;
};
inline Nibbles nibbles(const uint8_t* qs, const uint8_t* qh = nullptr) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i raw = load128(qs);
    Nibbles q{_mm_and_si128(raw, m4), _mm_and_si128(_mm_srli_epi16(raw, 4), m4)};
    if (qh != nullptr) {
        uint32_t bits;
        std::memcpy(&bits, qh, sizeof(bits));
        q.lo = _mm_or_si128(q.lo, q5_high(bits & 0xFFFF));
        q.hi = _mm_or_si128(q.hi, q5_high(bits >> 16));
    }
    return q;
}

// Q4_0, Q5_0 (y = d * (q - offset), offset 8 or 16) and Q4_1, Q5_1 (y = d * q + m).
template <Isa I, NibbleBlock Block>
void dequantize_blocks(const Block* x, float* y, int64_t nb) {
    constexpr bool kHasMin = requires(const Block& b) { b.m; };
    constexpr bool kHasHigh = requires(const Block& b) { b.qh; };
    const __m128i offset = _mm_set1_epi8(kHasHigh ? 16 : 8);
    for (int64_t i = 0; i < nb; ++i, y += 32) {
        const auto d = Vec<I>::set1(half(x[i].d));
        Nibbles q;
        if constexpr (kHasHigh) {
            q = nibbles(x[i].qs, x[i].qh);
        } else {
            q = nibbles(x[i].qs);
        }
        if constexpr (kHasMin) {
            const auto m = Vec<I>::set1(half(x[i].m));
            store16_affine<I>(q.lo, d, m, y);
            store16_affine<I>(q.hi, d, m, y + 16);
        } else {
            store16_scaled<I>(_mm_sub_epi8(q.lo, offset), d, y);
            store16_scaled<I>(_mm_sub_epi8(q.hi, offset), d, y + 16);
        }
    }
}
template <Isa I>
void dequantize_blocks(const BlockQ8_0* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQk8_0) {
        const auto d = Vec<I>::set1(half(x[i].d));
        store16_scaled<I>(load128(x[i].qs), d, y);
        store16_scaled<I>(load128(x[i].qs + 16), d, y + 16);
    }
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

// Q4_K and Q5_K: 4 chunks of 64 elements, the low then the high nibbles of 32 bytes; Q5_K
// sub-block s takes its fifth bits from bit s of the 32 qh bytes.
template <Isa I, OneOf<BlockQ4K, BlockQ5K> Block>
void dequantize_blocks(const Block* x, float* y, int64_t nb) {
    constexpr bool kQ5 = std::is_same_v<Block, BlockQ5K>;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i sixteen = _mm256_set1_epi8(16);
    for (int64_t i = 0; i < nb; ++i) {
        float ds[8], ms[8];
        k_scales(x[i].scales, half(x[i].d), half(x[i].dmin), ds, ms);
        for (int c = 0; c < 4; ++c, y += 64) {
            const __m256i raw = load256(x[i].qs + 32 * c);
            __m256i q0 = _mm256_and_si256(raw, m4);
            __m256i q1 = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
            if constexpr (kQ5) {
                const __m256i qh = load256(x[i].qh);
                const __m256i bit0 = _mm256_set1_epi8(static_cast<char>(1 << (2 * c)));
                const __m256i bit1 = _mm256_set1_epi8(static_cast<char>(2 << (2 * c)));
                const __m256i set0 = _mm256_cmpeq_epi8(_mm256_and_si256(qh, bit0), bit0);
                const __m256i set1 = _mm256_cmpeq_epi8(_mm256_and_si256(qh, bit1), bit1);
                q0 = _mm256_or_si256(q0, _mm256_and_si256(set0, sixteen));
                q1 = _mm256_or_si256(q1, _mm256_and_si256(set1, sixteen));
            }
            store_sub_block<I>(q0, ds[2 * c], ms[2 * c], y);
            store_sub_block<I>(q1, ds[2 * c + 1], ms[2 * c + 1], y + 32);
        }
    }
}
// 32 signed Q6_K values, two sub-blocks of 16: y = (d * sc) * q.
template <Isa I>
inline void store_q6_pair(__m256i q, const float* scale, float* y) {
    store16_scaled<I>(_mm256_castsi256_si128(q), Vec<I>::set1(scale[0]), y);
    store16_scaled<I>(_mm256_extracti128_si256(q, 1), Vec<I>::set1(scale[1]), y + 16);
}

template <Isa I>
void dequantize_blocks(const BlockQ6K* x, float* y, int64_t nb) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i m2 = _mm256_set1_epi8(0x30);
    const __m256i off = _mm256_set1_epi8(32);
    for (int64_t i = 0; i < nb; ++i) {
        const float d = half(x[i].d);
        float scale[kQkK / 16];  // d * sc, as the reference's left-to-right d * sc * q
        for (int j = 0; j < kQkK / 16; ++j) scale[j] = d * x[i].scales[j];
        for (int c = 0; c < 2; ++c, y += 128) {
            const __m256i l0 = load256(x[i].ql + 64 * c);
            const __m256i l1 = load256(x[i].ql + 64 * c + 32);
            const __m256i h = load256(x[i].qh + 32 * c);
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
            store_q6_pair<I>(_mm256_sub_epi8(q1, off), sc + 0, y + 0);
            store_q6_pair<I>(_mm256_sub_epi8(q2, off), sc + 2, y + 32);
            store_q6_pair<I>(_mm256_sub_epi8(q3, off), sc + 4, y + 64);
            store_q6_pair<I>(_mm256_sub_epi8(q4, off), sc + 6, y + 96);
        }
    }
}

// Q3_K, IQ4_XS and IQ4_NL have no vector variant: they are dequantized once, at load (to fp32
// for the GEMM copies, and per looked-up token_embd row), so the scalar reference serves every
// ISA.
template <Isa I, OneOf<BlockQ3K, BlockIQ4XS, BlockIQ4NL> Block>
void dequantize_blocks(const Block* x, float* y, int64_t nb) {
    constexpr GgmlType kType = std::is_same_v<Block, BlockQ3K>     ? GgmlType::Q3_K
                               : std::is_same_v<Block, BlockIQ4XS> ? GgmlType::IQ4_XS
                                                                   : GgmlType::IQ4_NL;
    ref::dequantize_unchecked(kType, x, y, nb * quant::block_shape(kType).elems);
}

// F16 and BF16 rows: y[i] = float(x[i]), kWidth at a time through Vec<I>::load (f16) or
// load_bf16, the tail by the scalar conversion.
template <Isa I, bool kBf16>
void dequantize_halves(const uint16_t* x, float* y, int64_t n) {
    using V = Vec<I>;
    int64_t i = 0;
    for (; i + V::kWidth <= n; i += V::kWidth) {
        V::store(y + i, kBf16 ? V::load_bf16(x + i) : V::load(x + i));
    }
    for (; i < n; ++i) y[i] = kBf16 ? bf16_to_fp32_scalar(x[i]) : half(x[i]);
}

// dot_rows_f32 for kRows rows: each row's kGemvLanes lanes in kGemvLanes / kWidth vectors, x
// loaded once for all the rows (independent FMA chains, kRows x the vectors).
template <Isa I, int kRows>
void dot_rows(const float* w, const float* x, int64_t n, float* y) {
    using V = Vec<I>;
    constexpr int kVecs = kGemvLanes / V::kWidth;
    typename V::F acc[kRows][kVecs];
    for (auto& row : acc) {
        for (auto& a : row) a = V::zero();
    }
    for (int64_t i = 0; i < n; i += kGemvLanes) {
        for (int v = 0; v < kVecs; ++v) {
            const auto xv = V::load(x + i + v * V::kWidth);
            for (int r = 0; r < kRows; ++r) {
                acc[r][v] = V::fmadd(V::load(w + r * n + i + v * V::kWidth), xv, acc[r][v]);
            }
        }
    }
    for (int r = 0; r < kRows; ++r) {
        float lanes[kGemvLanes];
        for (int v = 0; v < kVecs; ++v) V::store(lanes + v * V::kWidth, acc[r][v]);
        y[r] = gemv_lane_sum(lanes);
    }
}

}  // namespace

template <Isa I>
void dot_rows_f32(const float* w, int n_rows, const float* x, int64_t n, float* y) {
    const bool ran =
        with_value(n_rows, OneTo<kGemvRows>{}, [&]<int M>() { dot_rows<I, M>(w, x, n, y); });
    if (!ran) __builtin_trap();  // callers pass 1..kGemvRows rows
}

template <Isa I>
void dequantize_unchecked(GgmlType type, const void* src, float* dst, int64_t n) {
    switch (type) {
        case GgmlType::F32:
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            return;
        case GgmlType::F16:
            return dequantize_halves<I, false>(static_cast<const uint16_t*>(src), dst, n);
        case GgmlType::BF16:
            return dequantize_halves<I, true>(static_cast<const uint16_t*>(src), dst, n);
        default:  // a block format (checked by quant.cpp)
            with_blocks(type, src, n,
                        [&](const auto* x, int64_t nb) { dequantize_blocks<I>(x, dst, nb); });
    }
}

}  // namespace lazyllm::kernels::detail

#define LAZYLLM_QUANT_INSTANTIATE(I)                                                               \
    template void lazyllm::kernels::detail::dequantize_unchecked<I>(GgmlType, const void*, float*, \
                                                                    int64_t);                      \
    template void lazyllm::kernels::detail::dot_rows_f32<I>(const float*, int, const float*,       \
                                                            int64_t, float*)
