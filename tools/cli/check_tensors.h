// --check-tensors (as llama.cpp's): every tensor's data checked for NaN / Inf before the model
// loads. Plain float tensors are checked element by element; block formats (Q4_0 ... Q8_K)
// by their fp16 / fp32 scales, the only floats they hold (llama.cpp's ggml_validate_row_data
// checks the same fields).
#pragma once

#include "lazyllm/gguf.h"
#include "lazyllm/result.h"

namespace lazyllm::cli {

// The first non-finite value's tensor, type and element (or block) index.
Status check_tensor_data(const GgufFile& gguf);

}  // namespace lazyllm::cli
