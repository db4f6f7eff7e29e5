// CPU checks that decide whether a test can run here.
#pragma once

#include "kernels/cpu.h"

namespace lazyllm::testing {

// Whether PackedLinear takes GemmPrecision::kBf16 on this CPU: AVX-512 with BF16 (the same
// condition as cpu_has_bf16_gemm() in src/kernels/gemm.cpp, which is not exported).
inline bool cpu_has_bf16_gemm() {
    const kernels::CpuFeatures f = kernels::detect_cpu_features();
    return kernels::isa_supported(kernels::Isa::kAvx512, f) && f.avx512bf16;
}

}  // namespace lazyllm::testing
