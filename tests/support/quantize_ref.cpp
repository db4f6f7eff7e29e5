// Reference quantizers for tests, ported from ggml-quants.c's quantize_row_*_ref (the functions
// llama.cpp uses to write model files without an importance matrix):
//   Q8_0, Q4_0, Q4_1, Q5_0, Q5_1  quantize_row_q*_ref, line for line;
//   Q4_K, Q5_K                    quantize_row_q4_K_ref / q5_K_ref: per sub-block of 32 a
//                                 weighted least-squares scale + min search (make_qkx2_quants),
//                                 then 6-bit scales and mins relative to the super-block maxima;
//   Q6_K                          quantize_row_q6_K_ref: make_qx_quants(rmse_type 1) per
//                                 sub-block of 16, 8-bit scales;
//   Q3_K                          quantize_row_q3_K_ref, with make_qx_quants for make_q3_quants;
//   IQ4_XS, IQ4_NL                quantize_row_iq4_nl_impl (ggml's quantize_iq4_xs and
//                                 quantize_iq4_nl) without an importance matrix.
// The super-block formats (K-quants, IQ4_XS) and IQ4_NL are in quantize_ref_k.cpp. Scales are
// stored as fp16 with lazyllm's fp32_to_fp16 (round to nearest even, like ggml's
// GGML_FP32_TO_FP16). Both files are compiled without FMA flags, so float expressions round the way
// ggml's non-FMA build does.
#include "support/quantize_ref.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "support/quantize_ref_detail.h"

namespace lazyllm::testing {

namespace {

using namespace kernels::quant;  // NOLINT: block layouts
using detail::from_half;
using detail::nearest_int;
using detail::to_half;

void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t nb) {
    constexpr int qk = kQk4_0;
    for (int64_t i = 0; i < nb; ++i, x += qk) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < qk; ++j) {
            if (amax < std::fabs(x[j])) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        }
        const float d = max / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = to_half(d);
        for (int j = 0; j < qk / 2; ++j) {
            const float x0 = x[j] * id;
            const float x1 = x[qk / 2 + j] * id;
            const auto xi0 =
                static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x0 + 8.5f)));
            const auto xi1 =
                static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x1 + 8.5f)));
            y[i].qs[j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
        }
    }
}

void quantize_q4_1(const float* x, BlockQ4_1* y, int64_t nb) {
    constexpr int qk = kQk4_1;
    for (int64_t i = 0; i < nb; ++i, x += qk) {
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < qk; ++j) {
            min = std::min(min, x[j]);
            max = std::max(max, x[j]);
        }
        const float d = (max - min) / ((1 << 4) - 1);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = to_half(d);
        y[i].m = to_half(min);
        for (int j = 0; j < qk / 2; ++j) {
            const float x0 = (x[j] - min) * id;
            const float x1 = (x[qk / 2 + j] - min) * id;
            const auto xi0 =
                static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x0 + 0.5f)));
            const auto xi1 =
                static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x1 + 0.5f)));
            y[i].qs[j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
        }
    }
}

void quantize_q5_0(const float* x, BlockQ5_0* y, int64_t nb) {
    constexpr int qk = kQk5_0;
    for (int64_t i = 0; i < nb; ++i, x += qk) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < qk; ++j) {
            if (amax < std::fabs(x[j])) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        }
        const float d = max / -16;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = to_half(d);
        uint32_t qh = 0;
        for (int j = 0; j < qk / 2; ++j) {
            const float x0 = x[j] * id;
            const float x1 = x[qk / 2 + j] * id;
            const auto xi0 =
                static_cast<uint8_t>(std::min<int>(31, static_cast<int8_t>(x0 + 16.5f)));
            const auto xi1 =
                static_cast<uint8_t>(std::min<int>(31, static_cast<int8_t>(x1 + 16.5f)));
            y[i].qs[j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
            qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
            qh |= ((xi1 & 0x10u) >> 4) << (j + qk / 2);
        }
        std::memcpy(y[i].qh, &qh, sizeof(qh));
    }
}

void quantize_q5_1(const float* x, BlockQ5_1* y, int64_t nb) {
    constexpr int qk = kQk5_1;
    for (int64_t i = 0; i < nb; ++i, x += qk) {
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < qk; ++j) {
            min = std::min(min, x[j]);
            max = std::max(max, x[j]);
        }
        const float d = (max - min) / ((1 << 5) - 1);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = to_half(d);
        y[i].m = to_half(min);
        uint32_t qh = 0;
        for (int j = 0; j < qk / 2; ++j) {
            const float x0 = (x[j] - min) * id;
            const float x1 = (x[qk / 2 + j] - min) * id;
            const auto xi0 = static_cast<uint8_t>(x0 + 0.5f);
            const auto xi1 = static_cast<uint8_t>(x1 + 0.5f);
            y[i].qs[j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
            qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
            qh |= ((xi1 & 0x10u) >> 4) << (j + qk / 2);
        }
        std::memcpy(y[i].qh, &qh, sizeof(qh));
    }
}

void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t nb) {
    constexpr int qk = kQk8_0;
    for (int64_t i = 0; i < nb; ++i, x += qk) {
        float amax = 0.0f;
        for (int j = 0; j < qk; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / ((1 << 7) - 1);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = to_half(d);
        for (int j = 0; j < qk; ++j) y[i].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
    }
}

}  // namespace

using namespace detail;  // NOLINT: the super-block quantizers

std::vector<uint8_t> quantize_ref(GgmlType type, const float* x, int64_t n) {
    const BlockShape shape = block_shape(type);
    LAZYLLM_CHECK_MSG(shape.elems > 0, "quantize_ref: unsupported type");
    LAZYLLM_CHECK_MSG(n >= 0 && n % shape.elems == 0, "quantize_ref: n not a multiple of block");
    const int64_t nb = n / shape.elems;
    std::vector<uint8_t> out(static_cast<size_t>(nb) * shape.bytes);
    void* y = out.data();
    switch (type) {
        case GgmlType::F32:
            std::memcpy(y, x, out.size());
            break;
        case GgmlType::F16: {
            auto* h = static_cast<uint16_t*>(y);
            for (int64_t i = 0; i < n; ++i) h[i] = to_half(x[i]);
            break;
        }
        case GgmlType::BF16: {
            auto* h = static_cast<uint16_t*>(y);
            for (int64_t i = 0; i < n; ++i) h[i] = kernels::fp32_to_bf16(x[i]);
            break;
        }
        case GgmlType::Q8_0:
            quantize_q8_0(x, static_cast<BlockQ8_0*>(y), nb);
            break;
        case GgmlType::Q4_0:
            quantize_q4_0(x, static_cast<BlockQ4_0*>(y), nb);
            break;
        case GgmlType::Q4_1:
            quantize_q4_1(x, static_cast<BlockQ4_1*>(y), nb);
            break;
        case GgmlType::Q5_0:
            quantize_q5_0(x, static_cast<BlockQ5_0*>(y), nb);
            break;
        case GgmlType::Q5_1:
            quantize_q5_1(x, static_cast<BlockQ5_1*>(y), nb);
            break;
        case GgmlType::Q4_K:
            quantize_q4_k(x, static_cast<BlockQ4K*>(y), nb);
            break;
        case GgmlType::Q5_K:
            quantize_q5_k(x, static_cast<BlockQ5K*>(y), nb);
            break;
        case GgmlType::Q6_K:
            quantize_q6_k(x, static_cast<BlockQ6K*>(y), nb);
            break;
        case GgmlType::Q3_K:
            quantize_q3_k(x, static_cast<BlockQ3K*>(y), nb);
            break;
        case GgmlType::IQ4_XS:
            quantize_iq4_xs(x, static_cast<BlockIQ4XS*>(y), nb);
            break;
        case GgmlType::IQ4_NL:
            quantize_iq4_nl(x, static_cast<BlockIQ4NL*>(y), nb);
            break;
        default:
            LAZYLLM_CHECK_MSG(false, "quantize_ref: unsupported type");
    }
    return out;
}

}  // namespace lazyllm::testing
