// CPU feature detection and the kernel context (ISA choice + threads) passed down explicitly.
// The ISA is picked once at run time; LAZYLLM_ISA=ref|avx2|avx512|amx forces one (a forced ISA
// the CPU lacks is an error, not a silent downgrade).
#pragma once

#include <cstdint>
#include <string_view>

#include "lazyllm/result.h"

namespace lazyllm::kernels {

enum class Isa { kRef = 0, kAvx2 = 1, kAvx512 = 2, kAmx = 3 };

struct CpuFeatures {
    bool avx2 = false, fma = false, f16c = false;
    bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
    bool avx512bf16 = false;
    bool avx512vnni = false;  // vpdpbusd: u8 x s8 dot products (quantized GEMV)
    bool amx_tile = false, amx_bf16 = false;
    bool intel = false;  // vendor GenuineIntel (CPUID leaf 0)
};

CpuFeatures detect_cpu_features();
// AVX-512 (as Isa::kAvx512 needs it) with AVX-512-BF16: bf16 dot products (VDPBF16PS). Detected
// once.
bool cpu_has_avx512_bf16();
// Whether bf16 GEMMs beat fp32 ones here, which is what precision auto follows: with AMX, or
// with AVX-512-BF16 on a CPU that runs VDPBF16PS at its FMA rate (AMD Zen 4). Intel's cores
// without AMX run VDPBF16PS at half the FMA rate per FLOP, so there the fp32 GEMMs are the faster
// ones (docs/benchmarks/xeon_no_amx.md, "Why fp32 GEMMs here").
bool cpu_bf16_gemm_pays();
// One core's L2 cache in bytes, as the OS reports it (sysconf); 1 MiB where it does not.
// Read once.
int64_t l2_cache_bytes();
bool isa_supported(Isa isa, const CpuFeatures& f);
Isa best_isa(const CpuFeatures& f);
std::string_view isa_name(Isa isa);
Result<Isa> parse_isa(std::string_view name);
// best_isa(), unless LAZYLLM_ISA names another one.
Result<Isa> isa_from_env();

// The GEMM kernels PackedLinear::create may take: our own wherever they fit (AMX bf16, AVX2
// fp32; the default), or oneDNN for every GEMM (for comparisons).
enum class GemmKernels { kOwn, kOneDnn };
// kOwn, unless LAZYLLM_GEMM=onednn (auto and amx also mean kOwn; anything else is an error).
// The environment is read here, where the runtime builds its context, never inside a kernel.
Result<GemmKernels> gemm_kernels_from_env();

class Workspace;  // workspace.h

struct KernelContext {
    Isa isa = Isa::kRef;
    int n_threads = 1;
    // Scratch of the kernels that take this context per call (attention); null: a temporary
    // workspace per call.
    Workspace* ws = nullptr;
    GemmKernels gemm = GemmKernels::kOwn;
};

// Work on rows [r0, r1) of a matrix: fn(ctx, r0, r1). Given to a GEMM (PackedLinear::forward)
// it runs on the thread that produced those output rows, once they are final, while they are
// still in cache; given to parallel_rows (ops.h) it runs on a block of rows per thread. It must
// touch only those rows' data (it runs concurrently for disjoint row ranges) and open no
// parallel region.
struct RowsDone {
    void (*fn)(void* ctx, int64_t r0, int64_t r1) = nullptr;
    void* ctx = nullptr;
};

}  // namespace lazyllm::kernels
