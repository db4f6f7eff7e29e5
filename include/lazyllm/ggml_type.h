// GGML tensor types as numbered by the GGUF spec (ggml.h, enum ggml_type).
// Names keep the spec's spelling.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace lazyllm {

enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ4_NL = 20,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    BF16 = 30,
};

struct GgmlTypeTraits {
    std::string_view name;  // "Q4_K"
    int64_t block_size;     // elements per block (1 for plain types)
    size_t type_size;       // bytes per block
    bool dequantizable;     // lazyllm can convert it to fp32 / bf16
};

// Traits of a known type; nullopt for a numeric value the spec does not define (or that
// lazyllm does not know), so hostile files can be rejected with the number they carry.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type);
std::string_view ggml_type_name(GgmlType type);

}  // namespace lazyllm
