// Scalar reference dequantizers. Each follows ggml-quants.c's dequantize_row_* operation for
// operation (same products in the same order). The products are exact ("Exactness" in
// quant_blocks.h), so the output is bit-identical to ggml's and to gguf-py's numpy dequantizers
// (golden test), and the vectorized variants are tested bit-exact against these.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/quant_blocks.h"
#include "kernels/quant_isa.h"

namespace lazyllm::kernels {

using namespace quant;  // NOLINT: block structs and bit helpers of this file's concern

namespace {

// Q4_0, Q4_1, Q5_0, Q5_1 (ggml's dequantize_row_q{4,5}_{0,1}): element j is the low nibble
// of qs[j], element j + 16 the high one, with bit j of qh as a fifth bit (Q5); the symmetric
// formats subtract 8 (Q4_0) or 16 (Q5_0); y = x * d, plus m for the affine ones.
template <NibbleBlock Block>
void dequantize_blocks(const Block* x, float* y, int64_t nb) {
    constexpr bool kHasMin = requires(const Block& b) { b.m; };
    constexpr bool kHasHigh = requires(const Block& b) { b.qh; };
    constexpr int kOffset = kHasMin ? 0 : kHasHigh ? 16 : 8;
    constexpr int kHalf = 16;
    for (int64_t i = 0; i < nb; ++i, y += 2 * kHalf) {
        const float d = fp16_to_fp32_scalar(x[i].d);
        uint32_t qh = 0;
        if constexpr (kHasHigh) std::memcpy(&qh, x[i].qh, sizeof(qh));
        for (int j = 0; j < kHalf; ++j) {
            const int xh_0 = ((qh >> (j + 0)) << 4) & 0x10;
            const int xh_1 = ((qh >> (j + 12))) & 0x10;
            const int x0 = ((x[i].qs[j] & 0x0F) | xh_0) - kOffset;
            const int x1 = ((x[i].qs[j] >> 4) | xh_1) - kOffset;
            if constexpr (kHasMin) {
                const float m = fp16_to_fp32_scalar(x[i].m);
                y[j] = static_cast<float>(x0) * d + m;
                y[j + kHalf] = static_cast<float>(x1) * d + m;
            } else {
                y[j] = static_cast<float>(x0) * d;
                y[j + kHalf] = static_cast<float>(x1) * d;
            }
        }
    }
}

void dequantize_blocks(const BlockQ8_0* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQk8_0) {
        const float d = fp16_to_fp32_scalar(x[i].d);
        for (int j = 0; j < kQk8_0; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
    }
}

// Q4_K and Q5_K (ggml's dequantize_row_q4_K / q5_K): per 64 elements two sub-blocks with
// 6-bit scales and mins, the low then the high nibbles of 32 bytes, plus (Q5_K) bit 2k or
// 2k + 1 of qh as a fifth bit of value 16.
template <OneOf<BlockQ4K, BlockQ5K> Block>
void dequantize_blocks(const Block* x, float* y, int64_t nb) {
    constexpr bool kHasHigh = std::is_same_v<Block, BlockQ5K>;
    for (int64_t i = 0; i < nb; ++i) {
        const uint8_t* ql = x[i].qs;
        const float d = fp16_to_fp32_scalar(x[i].d);
        const float min = fp16_to_fp32_scalar(x[i].dmin);
        int is = 0;
        uint8_t sc, m;
        uint8_t u1 = 1, u2 = 2;
        for (int j = 0; j < kQkK; j += 64) {
            get_scale_min_k4(is + 0, x[i].scales, &sc, &m);
            const float d1 = d * sc;
            const float m1 = min * m;
            get_scale_min_k4(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc;
            const float m2 = min * m;
            // Fifth bit of byte l of qh selected by mask u, as 0 or 16.
            const auto high = [&](int l, uint8_t u) {
                if constexpr (kHasHigh) return (x[i].qh[l] & u) ? 16 : 0;
                return 0;
            };
            for (int l = 0; l < 32; ++l) {
                *y++ = d1 * static_cast<float>((ql[l] & 0xF) + high(l, u1)) - m1;
            }
            for (int l = 0; l < 32; ++l) {
                *y++ = d2 * static_cast<float>((ql[l] >> 4) + high(l, u2)) - m2;
            }
            ql += 32;
            is += 2;
            u1 = static_cast<uint8_t>(u1 << 2);
            u2 = static_cast<uint8_t>(u2 << 2);
        }
    }
}

void dequantize_blocks(const BlockQ6K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = fp16_to_fp32_scalar(x[i].d);
        const uint8_t* ql = x[i].ql;
        const uint8_t* qh = x[i].qh;
        const int8_t* sc = x[i].scales;
        for (int n = 0; n < kQkK; n += 128) {
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                // ggml writes d * sc[is] * q, i.e. (d * sc) * q.
                y[l + 0] = d * sc[is + 0] * static_cast<float>(q1);
                y[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
                y[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
                y[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
            }
            y += 128;
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

// Q3_K (ggml's dequantize_row_q3_K): per 128 elements 32 bytes of qs, read at shifts 0, 2, 4,
// 6 for four runs of 32 elements; each run is two sub-blocks of 16 with their own scale. A clear
// high bit (hmask) subtracts 4, giving q in -4..3.
void dequantize_blocks(const BlockQ3K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = fp16_to_fp32_scalar(x[i].d);
        float dl[kQkK / 16];  // ggml's dl = d * (sc - 32), then y = dl * q
        for (int j = 0; j < kQkK / 16; ++j) {
            dl[j] = d * static_cast<float>(q3_k_scale(j, x[i].scales) - 32);
        }
        // Runs of 32 elements r = 0..7: low bits at shift 2 * (r % 4) of qs[32 * (r / 4) + l],
        // high bit at bit r of hmask[l].
        for (int r = 0; r < kQkK / 32; ++r, y += 32) {
            const uint8_t* q = x[i].qs + 32 * (r / 4);
            const int shift = 2 * (r % 4);
            for (int l = 0; l < 32; ++l) {
                const int low = (q[l] >> shift) & 3;
                const int high = (x[i].hmask[l] >> r) & 1;
                y[l] = dl[2 * r + l / 16] * static_cast<float>(low - (high ? 0 : 4));
            }
        }
    }
}

// IQ4_XS (ggml's dequantize_row_iq4_xs): 8 sub-blocks of 32, each 16 bytes of 4-bit indices
// into kValuesIq4nl (low nibbles first), scaled by d * (ls - 32).
void dequantize_blocks(const BlockIQ4XS* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = fp16_to_fp32_scalar(x[i].d);
        const uint8_t* qs = x[i].qs;
        for (int ib = 0; ib < kQkK / 32; ++ib, qs += 16, y += 32) {
            const int ls = iq4_xs_scale(ib, x[i].scales_h, x[i].scales_l);
            const float dl = d * static_cast<float>(ls - 32);
            for (int j = 0; j < 16; ++j) {
                y[j] = dl * static_cast<float>(kValuesIq4nl[qs[j] & 0xF]);
                y[j + 16] = dl * static_cast<float>(kValuesIq4nl[qs[j] >> 4]);
            }
        }
    }
}

// IQ4_NL (ggml's dequantize_row_iq4_nl): blocks of 32, 16 bytes of 4-bit indices into
// kValuesIq4nl (low nibbles first), scaled by d.
void dequantize_blocks(const BlockIQ4NL* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQkIq4Nl) {
        const float d = fp16_to_fp32_scalar(x[i].d);
        for (int j = 0; j < kQkIq4Nl / 2; ++j) {
            y[j] = d * static_cast<float>(kValuesIq4nl[x[i].qs[j] & 0xF]);
            y[j + kQkIq4Nl / 2] = d * static_cast<float>(kValuesIq4nl[x[i].qs[j] >> 4]);
        }
    }
}

}  // namespace

bool quant_type_supported(GgmlType type) {
    return quant::block_shape(type).elems != 0;  // F32, F16, BF16 and with_block_type's formats
}

namespace ref {

void dequantize_unchecked(GgmlType type, const void* src, float* dst, int64_t n) {
    switch (type) {
        case GgmlType::F32:
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            return;
        case GgmlType::F16: {
            const auto* h = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32_scalar(h[i]);
            return;
        }
        case GgmlType::BF16: {
            const auto* h = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32_scalar(h[i]);
            return;
        }
        default:  // a block format (checked by the entry points)
            with_blocks(type, src, n,
                        [&](const auto* x, int64_t nb) { dequantize_blocks(x, dst, nb); });
    }
}

void dot_rows_f32(const float* w, int n_rows, const float* x, int64_t n, float* y) {
    for (int r = 0; r < n_rows; ++r) {
        const float* row = w + r * n;
        float lanes[kGemvLanes] = {};
        for (int64_t i = 0; i < n; ++i) {
            float& lane = lanes[i % kGemvLanes];
            lane = std::fma(row[i], x[i], lane);
        }
        y[r] = gemv_lane_sum(lanes);
    }
}

}  // namespace ref

}  // namespace lazyllm::kernels
