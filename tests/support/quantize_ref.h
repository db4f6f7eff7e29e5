// Reference quantizers (fp32 -> GGML block formats), test-side only: they build quantized
// tensors for tiny test models and round-trip tests of the dequantizers. Plain scalar code
// following ggml-quants.c's reference quantizers (quantize_row_*_ref).
#pragma once

#include <cstdint>
#include <vector>

#include "lazyllm/ggml_type.h"

namespace lazyllm::testing {

// n must be a multiple of the type's block size. Supports F32, F16, BF16, Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, IQ4_NL. Aborts (CHECK) on an unsupported type:
// test-only code.
std::vector<uint8_t> quantize_ref(GgmlType type, const float* x, int64_t n);

}  // namespace lazyllm::testing
