// Constants of the GGUF container format shared by the reader and the writer (internal).
// Spec: github.com/ggml-org/ggml/blob/master/docs/gguf.md
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lazyllm/gguf.h"

namespace lazyllm::gguf {

// Both sides assume a little-endian host (x86): values are memcpy'd, never byte-swapped.
static_assert(std::endian::native == std::endian::little, "lazyllm's GGUF code assumes LE");

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr uint32_t kVersionWritten = 3;
constexpr uint64_t kDefaultAlignment = 32;  // when general.alignment is absent
constexpr uint32_t kMaxDims = 4;            // GGML_MAX_DIMS
constexpr std::string_view kAlignmentKey = "general.alignment";
constexpr uint32_t kMaxValueType = static_cast<uint32_t>(GgufValueType::FLOAT64);

// Bytes of one scalar metadata value; 0 for STRING, ARRAY and unknown type numbers.
constexpr size_t scalar_value_size(GgufValueType t) {
    switch (t) {
        case GgufValueType::UINT8:
        case GgufValueType::INT8:
        case GgufValueType::BOOL:
            return 1;
        case GgufValueType::UINT16:
        case GgufValueType::INT16:
            return 2;
        case GgufValueType::UINT32:
        case GgufValueType::INT32:
        case GgufValueType::FLOAT32:
            return 4;
        case GgufValueType::UINT64:
        case GgufValueType::INT64:
        case GgufValueType::FLOAT64:
            return 8;
        case GgufValueType::STRING:
        case GgufValueType::ARRAY:
            return 0;
    }
    return 0;
}

// Name of a ggml type number that ggml defines (or once defined) but lazyllm does not handle
// (the IQ and ternary formats, removed Q4_2/Q4_3), for error messages; empty when unknown.
std::string_view unsupported_ggml_type_name(uint32_t type);

}  // namespace lazyllm::gguf
