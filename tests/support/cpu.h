// CPU checks that decide whether a test can run here. Each names the path a test exercises, so
// that a guard matches what the engine really runs: the CPU's features and the ISA it is told to
// use (LAZYLLM_ISA), not the CPU alone.
#pragma once

#include "kernels/cpu.h"
#include "kernels/gemm.h"

namespace lazyllm::testing {

// Whether PackedLinear takes GemmPrecision::kBf16 on this CPU: AVX-512 with BF16 (the same
// condition as cpu_has_bf16_gemm() in src/kernels/gemm.cpp, which is not exported). An explicit
// kBf16 works at any forced ISA (oneDNN runs it).
inline bool cpu_has_bf16_gemm() {
    const kernels::CpuFeatures f = kernels::detect_cpu_features();
    return kernels::isa_supported(kernels::Isa::kAvx512, f) && f.avx512bf16;
}

// The ISA the engine and the model tests run: LAZYLLM_ISA, else the best this CPU has.
inline kernels::Isa engine_isa() { return kernels::isa_from_env().value(); }

// engine_isa() for tests that load a model without the engine: under LAZYLLM_ISA=avx512 on an
// AMX CPU it first holds oneDNN to AVX-512 as Engine::load does, before its first use (once
// used, oneDNN keeps its ISA for the process, AMX included, and an engine test after it would
// run bf16 GEMMs on AMX kernels whose sums differ with a call's row count). Not at avx2 or ref,
// where the tests still ask oneDNN for bf16 GEMMs that a cap there would refuse.
inline kernels::Isa model_load_isa() {
    const kernels::Isa isa = engine_isa();
    if (isa == kernels::Isa::kAvx512) kernels::cap_onednn_isa(isa);
    return isa;
}

// Whether GemmPrecision::kAuto takes bf16 GEMMs at ISA `isa`: bf16 dot products, and bf16
// faster than fp32 there (AMX, or a CPU not made by Intel, whose cores without AMX run
// VDPBF16PS at half the FMA rate; kernels::cpu_bf16_gemm_pays).
inline bool auto_precision_is_bf16_at(kernels::Isa isa) {
    const kernels::CpuFeatures f = kernels::detect_cpu_features();
    const bool pays = kernels::isa_supported(kernels::Isa::kAmx, f) || !f.intel;
    return cpu_has_bf16_gemm() && isa >= kernels::Isa::kAvx512 && pays;
}

// Whether GemmPrecision::kAuto (the model's default) takes bf16 GEMMs at engine_isa().
inline bool auto_precision_is_bf16() { return auto_precision_is_bf16_at(engine_isa()); }

// Whether bf16 GEMMs run on our own AMX kernel at engine_isa(): the only backend with row hooks
// (RoPE and the K/V store fused into the qkv GEMM, the norms into attn_out and down). On
// AVX-512-BF16 CPUs without AMX (Zen 4) the bf16 GEMMs run on oneDNN, hooks off.
inline bool amx_gemm_here() {
    if (!cpu_has_bf16_gemm()) return false;
    const float w[32 * 32] = {};
    auto lin = kernels::PackedLinear::create({engine_isa(), 1}, w, 32, 32, nullptr,
                                             kernels::GemmPrecision::kBf16);
    return lin.ok() && lin->backend() == kernels::GemmBackend::kAmx;
}

}  // namespace lazyllm::testing
