// Block sizes and byte sizes of the GGML tensor types, from ggml-common.h (block_* structs and
// their static_asserts) and ggml.c's type_traits table.
#include "lazyllm/ggml_type.h"

#include "gguf/gguf_format.h"

namespace lazyllm {
namespace {

constexpr int64_t kQk = 32;    // QK4_0 == QK4_1 == QK5_0 == QK5_1 == QK8_0 == QK8_1
constexpr int64_t kQkK = 256;  // QK_K, the k-quant super-block

struct TypeRow {
    GgmlType type;
    GgmlTypeTraits traits;
};

// ggml_half is 2 bytes; K_SCALE_SIZE is 12. IQ4_XS: d, scales_h (uint16), scales_l, qs.
constexpr TypeRow kTypes[] = {
    {GgmlType::F32, {"F32", 1, 4, true}},
    {GgmlType::F16, {"F16", 1, 2, true}},
    {GgmlType::Q4_0, {"Q4_0", kQk, 2 + kQk / 2, true}},                        // d, qs: 18
    {GgmlType::Q4_1, {"Q4_1", kQk, 2 * 2 + kQk / 2, true}},                    // d, m, qs: 20
    {GgmlType::Q5_0, {"Q5_0", kQk, 2 + 4 + kQk / 2, true}},                    // d, qh, qs: 22
    {GgmlType::Q5_1, {"Q5_1", kQk, 2 * 2 + 4 + kQk / 2, true}},                // d, m, qh, qs: 24
    {GgmlType::Q8_0, {"Q8_0", kQk, 2 + kQk, true}},                            // d, qs: 34
    {GgmlType::Q8_1, {"Q8_1", kQk, 2 * 2 + kQk, false}},                       // d, s, qs: 36
    {GgmlType::Q2_K, {"Q2_K", kQkK, kQkK / 16 + kQkK / 4 + 2 * 2, false}},     // 84
    {GgmlType::Q3_K, {"Q3_K", kQkK, kQkK / 8 + kQkK / 4 + 12 + 2, true}},      // 110
    {GgmlType::Q4_K, {"Q4_K", kQkK, 2 * 2 + 12 + kQkK / 2, true}},             // 144
    {GgmlType::Q5_K, {"Q5_K", kQkK, 2 * 2 + 12 + kQkK / 8 + kQkK / 2, true}},  // 176
    {GgmlType::Q6_K, {"Q6_K", kQkK, kQkK / 2 + kQkK / 4 + kQkK / 16 + 2, true}},  // 210
    {GgmlType::Q8_K, {"Q8_K", kQkK, 4 + kQkK + kQkK / 16 * 2, false}},            // 292
    {GgmlType::IQ4_XS, {"IQ4_XS", kQkK, 2 + 2 + kQkK / 64 + kQkK / 2, true}},     // 136
    {GgmlType::IQ4_NL, {"IQ4_NL", kQk, 2 + kQk / 2, true}},                       // d, qs: 18
    {GgmlType::I8, {"I8", 1, 1, false}},
    {GgmlType::I16, {"I16", 1, 2, false}},
    {GgmlType::I32, {"I32", 1, 4, false}},
    {GgmlType::I64, {"I64", 1, 8, false}},
    {GgmlType::F64, {"F64", 1, 8, false}},
    {GgmlType::BF16, {"BF16", 1, 2, true}},
};

static_assert(kTypes[2].traits.type_size == 18 && kTypes[3].traits.type_size == 20);
static_assert(kTypes[4].traits.type_size == 22 && kTypes[5].traits.type_size == 24);
static_assert(kTypes[6].traits.type_size == 34 && kTypes[7].traits.type_size == 36);
static_assert(kTypes[8].traits.type_size == 84 && kTypes[9].traits.type_size == 110);
static_assert(kTypes[10].traits.type_size == 144 && kTypes[11].traits.type_size == 176);
static_assert(kTypes[12].traits.type_size == 210 && kTypes[13].traits.type_size == 292);
static_assert(kTypes[14].traits.type_size == 136 && kTypes[15].traits.type_size == 18);

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type) {
    for (const TypeRow& row : kTypes) {
        if (static_cast<uint32_t>(row.type) == type) return row.traits;
    }
    return std::nullopt;
}

std::string_view ggml_type_name(GgmlType type) {
    auto traits = ggml_type_traits(static_cast<uint32_t>(type));
    return traits ? traits->name : std::string_view("unknown");
}

namespace gguf {

std::string_view unsupported_ggml_type_name(uint32_t type) {
    // ggml.h, enum ggml_type: numbers ggml assigns to formats lazyllm does not implement.
    switch (type) {
        case 4:
            return "Q4_2 (removed from ggml)";
        case 5:
            return "Q4_3 (removed from ggml)";
        case 16:
            return "IQ2_XXS";
        case 17:
            return "IQ2_XS";
        case 18:
            return "IQ3_XXS";
        case 19:
            return "IQ1_S";
        case 21:
            return "IQ3_S";
        case 22:
            return "IQ2_S";
        case 29:
            return "IQ1_M";
        case 34:
            return "TQ1_0";
        case 35:
            return "TQ2_0";
        case 39:
            return "MXFP4";
        default:
            return {};
    }
}

}  // namespace gguf
}  // namespace lazyllm
