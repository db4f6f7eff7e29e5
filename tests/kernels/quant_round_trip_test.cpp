// Round trip: quantize_ref (tests/support) then the reference dequantizer, within each
// format's error bound, on rows of varied scales and the awkward blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "support/quantize_ref.h"

namespace lazyllm::kernels {
namespace {

using quant::block_shape;

using quant::f32_bits;

// Test data: rows of blocks with varied scales, plus the awkward blocks (all zero, constant,
// all positive, one outlier).
std::vector<float> round_trip_data(int64_t n, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> expo(-3.0f, 3.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t b = 0; b < n / 32; ++b) {
        const float scale = std::exp2(expo(rng));
        float* blk = x.data() + 32 * b;
        for (int i = 0; i < 32; ++i) blk[i] = scale * normal(rng);
        switch (b % 16) {
            case 3:
                std::fill(blk, blk + 32, 0.0f);
                break;
            case 5:
                std::fill(blk, blk + 32, 0.75f);
                break;
            case 7:
                for (int i = 0; i < 32; ++i) blk[i] = std::fabs(blk[i]) + 0.5f;
                break;
            case 9:
                blk[11] *= 40.0f;
                break;
            default:
                break;
        }
    }
    return x;
}

// Largest rounding error of storing v as fp16: half an ulp of 11 significant bits in the normal
// range, half the subnormal step (2^-25) below it.
float fp16_err(float v) { return std::max(std::fabs(v) * 0x1p-11f, 0x1p-25f); }

// Closed-form per-block bound of the 32-element formats (quantize_row_*_ref), d the unrounded
// scale as the quantizer computes it:
//   Q8_0  d = amax/127, round to nearest:              |e| <= d/2 + 127 fp16_err(d)
//   Q4_0  d = amax/8, q in [-8, 7]; the value -max maps to q = 8, clamped to 7, one full step
//         off:                                         |e| <= d + 8 fp16_err(d)
//   Q5_0  d = amax/16, likewise:                       |e| <= d + 16 fp16_err(d)
//   Q4_1  d = (max-min)/15, round to nearest above min: |e| <= d/2 + 15 fp16_err(d) + fp16_err(min)
//   Q5_1  d = (max-min)/31:                            |e| <= d/2 + 31 fp16_err(d) + fp16_err(min)
// The fp16_err terms are the stored d and min differing from the ones used to pick q.
float simple_block_bound(GgmlType type, const float* x) {
    float amax = 0, min = x[0], max = x[0];
    for (int i = 0; i < 32; ++i) {
        amax = std::max(amax, std::fabs(x[i]));
        min = std::min(min, x[i]);
        max = std::max(max, x[i]);
    }
    const float slack = 1e-5f * amax;  // fp32 rounding of x * id before rounding to an integer
    switch (type) {
        case GgmlType::Q8_0:
            return amax / 127 / 2 + 127 * fp16_err(amax / 127) + slack;
        case GgmlType::Q4_0:
            return amax / 8 + 8 * fp16_err(amax / 8) + slack;
        case GgmlType::Q5_0:
            return amax / 16 + 16 * fp16_err(amax / 16) + slack;
        case GgmlType::Q4_1: {
            const float d = (max - min) / 15;
            return d / 2 + 15 * fp16_err(d) + fp16_err(min) + slack;
        }
        case GgmlType::Q5_1: {
            const float d = (max - min) / 31;
            return d / 2 + 31 * fp16_err(d) + fp16_err(min) + slack;
        }
        default:
            return 0;
    }
}

// K-quants search their sub-block scales, so there is no closed form in the input alone; the
// bound is in terms of the decoded block. The quantizer picks q = clamp(round((x + o) / s)) with
// the very s, o the dequantizer uses (s = d * sc, o = dmin * m for Q4_K / Q5_K; s = d * sc,
// o = 0 for Q6_K; s = d * (sc - 32), o = 0 for Q3_K), so |e| <= |s|/2 + the distance from x to
// the representable range [s * qmin - o, s * qmax - o]. IQ4_XS picks the nearest of its
// non-linear grid values times s = d * (ls - 32), so |e| <= |s| * 12 (half its widest gap,
// 89..113) + the distance to [s * -127, s * 113]; IQ4_NL the same with s = d, per block of 32.
// That range's coverage is what the RMS check below measures.
std::vector<float> k_quant_bounds(GgmlType type, const uint8_t* blk, const float* x) {
    std::vector<float> bound(256);
    // half_step: the largest rounding error inside the range, in units of |s|.
    auto fill = [&](int first, int count, float s, float o, int qmin, int qmax,
                    float half_step = 0.5f) {
        const float lo = std::min(s * qmin, s * qmax) - o;
        const float hi = std::max(s * qmin, s * qmax) - o;
        for (int i = first; i < first + count; ++i) {
            const float outside = std::max({0.0f, lo - x[i], x[i] - hi});
            bound[i] = std::fabs(s) * half_step + outside +
                       1e-5f * (std::fabs(x[i]) + std::fabs(s) * 2 * half_step);
        }
    };
    if (type == GgmlType::Q3_K) {
        const auto* b = reinterpret_cast<const quant::BlockQ3K*>(blk);
        const float d = fp16_to_fp32(b->d);
        for (int j = 0; j < 16; ++j) {
            const float s = d * static_cast<float>(quant::q3_k_scale(j, b->scales) - 32);
            fill(16 * j, 16, s, 0.0f, -4, 3);
        }
        return bound;
    }
    if (type == GgmlType::IQ4_NL) {
        const auto* b = reinterpret_cast<const quant::BlockIQ4NL*>(blk);
        fill(0, 32, fp16_to_fp32(b->d), 0.0f, -127, 113, 12.0f);
        return bound;
    }
    if (type == GgmlType::IQ4_XS) {
        const auto* b = reinterpret_cast<const quant::BlockIQ4XS*>(blk);
        const float d = fp16_to_fp32(b->d);
        for (int ib = 0; ib < 8; ++ib) {
            const float s =
                d * static_cast<float>(quant::iq4_xs_scale(ib, b->scales_h, b->scales_l) - 32);
            fill(32 * ib, 32, s, 0.0f, -127, 113, 12.0f);
        }
        return bound;
    }
    if (type == GgmlType::Q6_K) {
        const auto* b = reinterpret_cast<const quant::BlockQ6K*>(blk);
        const float d = fp16_to_fp32(b->d);
        for (int j = 0; j < 16; ++j) fill(16 * j, 16, d * b->scales[j], 0.0f, -32, 31);
        return bound;
    }
    // Q4_K and Q5_K share d, dmin and scales at the start of the block.
    const auto* b = reinterpret_cast<const quant::BlockQ4K*>(blk);
    const float d = fp16_to_fp32(b->d), dmin = fp16_to_fp32(b->dmin);
    const int qmax = type == GgmlType::Q4_K ? 15 : 31;
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        quant::get_scale_min_k4(j, b->scales, &sc, &m);
        fill(32 * j, 32, d * sc, dmin * m, 0, qmax);
    }
    return bound;
}

std::vector<float> quantize_dequantize(GgmlType type, const std::vector<float>& x,
                                       std::vector<uint8_t>* q) {
    const auto n = static_cast<int64_t>(x.size());
    *q = testing::quantize_ref(type, x.data(), n);
    EXPECT_EQ(q->size(),
              static_cast<size_t>(n / block_shape(type).elems) * block_shape(type).bytes);
    std::vector<float> y(x.size());
    EXPECT_TRUE(ref::dequantize_row_f32(type, q->data(), y.data(), n).ok());
    return y;
}

TEST(QuantRoundTrip, QuantizeDequantizeWithinFormatBounds) {
    // Relative RMS error on N(0, 1) data, measured with these (ggml reference) quantizers
    // (Q8_0 .0054, Q4_0 .0855, Q4_1 .0789, Q5_0 .0429, Q5_1 .0380, Q4_K .0716, Q5_K .0365,
    // Q6_K .0176, Q3_K .1524, IQ4_XS .0768, IQ4_NL .0763) and given 20% headroom: the value the
    // format is known for, so a quantizer that stops searching, or a wrong scale packing, shows up
    // here even when every element stays within its structural bound.
    const std::pair<GgmlType, float> max_rel_rms[] = {
        {GgmlType::Q8_0, 0.0065f},  {GgmlType::Q4_0, 0.103f},  {GgmlType::Q4_1, 0.095f},
        {GgmlType::Q5_0, 0.052f},   {GgmlType::Q5_1, 0.046f},  {GgmlType::Q4_K, 0.086f},
        {GgmlType::Q5_K, 0.044f},   {GgmlType::Q6_K, 0.021f},  {GgmlType::Q3_K, 0.183f},
        {GgmlType::IQ4_XS, 0.092f}, {GgmlType::IQ4_NL, 0.092f}};
    std::mt19937 rng(42);
    const int64_t n = 256 * 32;
    const std::vector<float> awkward = round_trip_data(n, rng);
    std::vector<float> gaussian(static_cast<size_t>(n));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : gaussian) v = normal(rng);
    for (const auto& [type, max_rel] : max_rel_rms) {
        SCOPED_TRACE(std::string(ggml_type_name(type)));
        const int64_t bs = block_shape(type).elems;
        std::vector<uint8_t> q;
        const std::vector<float> y = quantize_dequantize(type, awkward, &q);
        for (int64_t b = 0; b < n / bs; ++b) {
            const float* xb = awkward.data() + b * bs;
            const float* yb = y.data() + b * bs;
            std::vector<float> bound(static_cast<size_t>(bs), simple_block_bound(type, xb));
            if (bs == 256 || type == GgmlType::IQ4_NL) {
                bound = k_quant_bounds(type, q.data() + b * block_shape(type).bytes, xb);
            }
            for (int64_t i = 0; i < bs; ++i) {
                ASSERT_LE(std::fabs(yb[i] - xb[i]), bound[i])
                    << "block " << b << " element " << i << ": x " << xb[i] << " y " << yb[i];
            }
        }
        // An all-zero block decodes to exact zeros, in every format.
        for (int64_t i = 3 * 32; i < 4 * 32; ++i) EXPECT_EQ(y[i], 0.0f) << i;

        const std::vector<float> yg = quantize_dequantize(type, gaussian, &q);
        double err2 = 0, val2 = 0;
        for (size_t i = 0; i < gaussian.size(); ++i) {
            err2 += double(yg[i] - gaussian[i]) * (yg[i] - gaussian[i]);
            val2 += double(gaussian[i]) * gaussian[i];
        }
        const double rel = std::sqrt(err2 / val2);
        EXPECT_LT(rel, max_rel);
        std::printf("  %-5s relative RMS error on N(0,1): %.4f\n",
                    std::string(ggml_type_name(type)).c_str(), rel);
    }
}

TEST(QuantRoundTrip, PlainTypesExactOrOneRounding) {
    std::mt19937 rng(5);
    const int64_t n = 4096;
    std::vector<float> x = round_trip_data(n, rng);
    for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
        SCOPED_TRACE(std::string(ggml_type_name(type)));
        const std::vector<uint8_t> q = testing::quantize_ref(type, x.data(), n);
        std::vector<float> y(static_cast<size_t>(n));
        ASSERT_TRUE(ref::dequantize_row_f32(type, q.data(), y.data(), n).ok());
        for (int64_t i = 0; i < n; ++i) {
            if (type == GgmlType::F32) {
                ASSERT_EQ(f32_bits(y[i]), f32_bits(x[i])) << i;
            } else if (type == GgmlType::F16) {
                // One round to nearest: half an ulp of 11 bits (the data is in fp16's normal
                // range or zero).
                ASSERT_EQ(f32_bits(y[i]), f32_bits(fp16_to_fp32(fp32_to_fp16(x[i])))) << i;
                ASSERT_LE(std::fabs(y[i] - x[i]), std::fabs(x[i]) * 0x1p-11f) << i;
            } else {
                ASSERT_EQ(f32_bits(y[i]), f32_bits(bf16_to_fp32(fp32_to_bf16(x[i])))) << i;
                ASSERT_LE(std::fabs(y[i] - x[i]), std::fabs(x[i]) * 0x1p-8f) << i;
            }
        }
    }
}

}  // namespace
}  // namespace lazyllm::kernels
