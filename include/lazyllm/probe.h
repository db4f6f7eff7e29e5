// Hardware probe for benchmark reports: the GEMM throughput this build reaches on this machine,
// so achieved prefill GFLOP/s can be shown next to a measured peak (docs/design.md, section 3).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lazyllm/result.h"

namespace lazyllm {

struct GemmPeak {
    double gflops = 0.0;  // best single-call throughput, 2 * m * n_in * n_out / time
    double mean_gflops = 0.0;
    std::string precision;  // bf16 | f32 | quant: what the layer actually ran in
    std::string isa;        // ref | avx2 | avx512 | amx
    int n_threads = 0;
    int64_t m = 0, n_in = 0, n_out = 0;
};

// Times the engine's own linear layer (weights packed at load) on
// y[2048, 1536] = x[2048, 576] . W^T, a SmolLM2-135M gate/up-sized prefill GEMM, after a warm-up
// call: bf16 activations in (as the model feeds its bf16 GEMMs) or fp32 on the fp32 path, fp32
// out. `precision`: auto | f32 | bf16, as EngineOptions::precision, or quant: the same shape on
// QuantLinear over random Q4_1 blocks (the default model's type; int8 activations), the layer
// prefill runs on with --prefill-weights quant. Sets the OpenMP thread count to `n_threads`
// (0: all cores), as Engine::load does. One warm-up call, then 12 timed calls, or 3 when they
// take over a second together: well under a second on a release build.
Result<GemmPeak> measure_gemm_peak(int n_threads, std::string_view precision = "auto");

}  // namespace lazyllm
