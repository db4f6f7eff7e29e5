#include "cli/check_tensors.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "lazyllm/ggml_type.h"

namespace lazyllm::cli {

namespace {

float f16_to_f32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // Inf / NaN
    if (exp == 0) {
        const float v = std::ldexp(static_cast<float>(mant), -24);  // subnormal or zero
        return sign ? -v : v;
    }
    return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

template <typename T>
T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

// Where a block keeps its fp16 (or fp32) scales, as ggml's block_* structs lay them out
// (ggml-common.h): byte offsets inside one block.
struct ScaleLayout {
    int n = 0;  // scales per block (d, and m / dmin / s where present)
    int offsets[2] = {};
    bool f32 = false;  // Q8_K keeps d as fp32
};

ScaleLayout scale_layout(GgmlType t) {
    switch (t) {
        case GgmlType::Q4_0:
        case GgmlType::Q5_0:
        case GgmlType::Q8_0:
            return {1, {0, 0}, false};
        case GgmlType::Q4_1:
        case GgmlType::Q5_1:
        case GgmlType::Q8_1:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
            return {2, {0, 2}, false};
        case GgmlType::Q2_K:
            return {2, {80, 82}, false};  // scales[16], qs[64], d, dmin
        case GgmlType::Q3_K:
            return {1, {108, 0}, false};  // hmask[32], qs[64], scales[12], d
        case GgmlType::Q6_K:
            return {1, {208, 0}, false};  // ql[128], qh[64], scales[16], d
        case GgmlType::IQ4_XS:
            return {1, {0, 0}, false};  // d, scales_h, scales_l[4], qs[128]
        case GgmlType::IQ4_NL:
            return {1, {0, 0}, false};  // d, qs[16]
        case GgmlType::Q8_K:
            return {1, {0, 0}, true};
        default:
            return {};
    }
}

Error non_finite(const GgufTensorInfo& t, uint64_t index, float v, const char* what) {
    return make_error(ErrorCode::kCorrupt, "tensor '{}' ({}) holds {} at {} {} (--check-tensors)",
                      t.name, ggml_type_name(t.type), std::isnan(v) ? "NaN" : "Inf", what, index);
}

}  // namespace

Status check_tensor_data(const GgufFile& gguf) {
    for (const GgufTensorInfo& t : gguf.tensors()) {
        const uint8_t* p = gguf.tensor_data(t);
        const uint64_t n = t.n_elements();
        switch (t.type) {
            case GgmlType::F32:
                for (uint64_t i = 0; i < n; ++i) {
                    const float v = load<float>(p + 4 * i);
                    if (!std::isfinite(v)) return non_finite(t, i, v, "element");
                }
                break;
            case GgmlType::F16:
                for (uint64_t i = 0; i < n; ++i) {
                    const float v = f16_to_f32(load<uint16_t>(p + 2 * i));
                    if (!std::isfinite(v)) return non_finite(t, i, v, "element");
                }
                break;
            case GgmlType::BF16:
                for (uint64_t i = 0; i < n; ++i) {
                    const uint32_t bits = static_cast<uint32_t>(load<uint16_t>(p + 2 * i)) << 16;
                    const float v = std::bit_cast<float>(bits);
                    if (!std::isfinite(v)) return non_finite(t, i, v, "element");
                }
                break;
            case GgmlType::F64:
                for (uint64_t i = 0; i < n; ++i) {
                    const double v = load<double>(p + 8 * i);
                    if (!std::isfinite(v))
                        return non_finite(t, i, static_cast<float>(v), "element");
                }
                break;
            default: {
                // Block formats: the quants are integers, only the scales can be non-finite.
                const ScaleLayout l = scale_layout(t.type);
                const auto traits = ggml_type_traits(static_cast<uint32_t>(t.type));
                if (l.n == 0 || !traits) break;  // integer types
                const uint64_t n_blocks = n / static_cast<uint64_t>(traits->block_size);
                for (uint64_t b = 0; b < n_blocks; ++b) {
                    const uint8_t* block = p + b * traits->type_size;
                    for (int k = 0; k < l.n; ++k) {
                        const float v = l.f32 ? load<float>(block + l.offsets[k])
                                              : f16_to_f32(load<uint16_t>(block + l.offsets[k]));
                        if (!std::isfinite(v)) return non_finite(t, b, v, "the scale of block");
                    }
                }
            }
        }
    }
    return {};
}

}  // namespace lazyllm::cli
