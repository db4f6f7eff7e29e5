// GEMM peak probe (include/lazyllm/probe.h): the shape is the one design.md section 3 quotes for
// oneDNN bf16 on AMX (2048x1536x576, 3.6 TFLOP/s on 2 threads), run through PackedLinear (or
// QuantLinear for the quantized prefill). On the bf16 path the activations go in as bf16
// (forward_bf16), as the model's GEMMs get them from rms_norm_bf16 / glu_bf16, so no
// fp32 -> bf16 conversion is timed.
#include "lazyllm/probe.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "base/timer.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/qgemv.h"
#include "kernels/quant.h"
#include "kernels/workspace.h"
#include "lazyllm/memory.h"

namespace lazyllm {

namespace {

constexpr int64_t kM = 2048, kIn = 576, kOut = 1536;
// Up to 12 timed calls, stopping after 3 once they have taken a second: a call takes 1-50 ms
// on the CPUs in docs/benchmarks/, so the budget only cuts short a slow build (the sanitizer one,
// about 1.3 s a call) or QuantLinear's scalar reference (LAZYLLM_ISA=ref, 3.6 s a call on Zen 3).
constexpr int kMaxCalls = 12, kMinCalls = 3;
constexpr int64_t kBudgetNs = 1'000'000'000;

// fp32 -> bf16 bits, round to nearest even (inputs are finite).
std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
    std::vector<uint16_t> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
        uint32_t bits;
        std::memcpy(&bits, &v[i], sizeof(bits));
        out[i] = static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
    }
    return out;
}

std::vector<float> random_values(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

// Random Q4_1 blocks (20 bytes per 32 weights: fp16 d and m, 16 bytes of nibbles) with
// trained-model-like scales; the kernel's speed does not depend on the values.
std::vector<uint8_t> random_q4_1(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> out(static_cast<size_t>(n / 32) * 20);
    for (size_t off = 0; off < out.size(); off += 20) {
        for (size_t i = 4; i < 20; ++i) out[off + i] = static_cast<uint8_t>(rng());
        const uint16_t d = kernels::fp32_to_fp16(0.02f), m = kernels::fp32_to_fp16(-0.16f);
        std::memcpy(&out[off], &d, 2);
        std::memcpy(&out[off + 2], &m, 2);
    }
    return out;
}

}  // namespace

Result<GemmPeak> measure_gemm_peak(int n_threads, std::string_view precision) {
    if (n_threads < 0) {
        return make_error(ErrorCode::kInvalidArgument, "threads must be >= 0, got {}", n_threads);
    }
    const bool quant = precision == "quant";
    kernels::GemmPrecision p = kernels::GemmPrecision::kAuto;
    if (precision == "f32") {
        p = kernels::GemmPrecision::kF32;
    } else if (precision == "bf16") {
        p = kernels::GemmPrecision::kBf16;
    } else if (precision != "auto" && !quant) {
        return make_error(ErrorCode::kInvalidArgument,
                          "precision '{}' is not one of auto, f32, bf16, quant", precision);
    }
    LAZYLLM_ASSIGN_OR_RETURN(kernels::Isa isa, kernels::isa_from_env());
    LAZYLLM_ASSIGN_OR_RETURN(kernels::GemmKernels gemm, kernels::gemm_kernels_from_env());
    kernels::cap_onednn_isa(isa);
    const int hw = usable_cores();
    const kernels::KernelContext ctx{isa, n_threads > 0 ? n_threads : hw, nullptr, gemm};
    omp_set_num_threads(ctx.n_threads);

    const std::vector<float> w =
        random_values(static_cast<size_t>(kOut * kIn), 1);                         // [n_out, n_in]
    const std::vector<float> x = random_values(static_cast<size_t>(kM * kIn), 2);  // [m, n_in]
    std::vector<float> y(static_cast<size_t>(kM * kOut));                          // [m, n_out]
    kernels::PackedLinear lin;
    kernels::QuantLinear qlin;
    if (quant) {
        const std::vector<uint8_t> blocks = random_q4_1(kOut * kIn, 3);
        const kernels::QuantLinear::Part part{GgmlType::Q4_1, blocks.data(), kOut};
        LAZYLLM_ASSIGN_OR_RETURN(qlin, kernels::QuantLinear::create(ctx, {&part, 1}, kIn));
    } else {
        LAZYLLM_ASSIGN_OR_RETURN(
            lin, kernels::PackedLinear::create(ctx, w.data(), kOut, kIn, nullptr, p));
    }
    const std::vector<uint16_t> x_bf16 = lin.is_bf16() ? to_bf16(x) : std::vector<uint16_t>();
    kernels::Workspace ws;
    auto call = [&] {
        if (quant) {
            qlin.forward(x.data(), kM, y.data(), 0, 0, false, &ws);
        } else if (lin.is_bf16()) {
            lin.forward_bf16(x_bf16.data(), kM, y.data(), 0, 0, false, nullptr, &ws);
        } else {
            lin.forward(x.data(), kM, y.data(), 0, 0, false, &ws);
        }
    };
    call();  // creates and caches the primitive for this m

    const double flops = 2.0 * static_cast<double>(kM) * kIn * kOut;
    int64_t best_ns = INT64_MAX, total_ns = 0;
    int n_calls = 0;
    while (n_calls < kMaxCalls && (n_calls < kMinCalls || total_ns < kBudgetNs)) {
        Timer t;
        call();
        const int64_t ns = std::max<int64_t>(1, t.elapsed_ns());
        best_ns = std::min(best_ns, ns);
        total_ns += ns;
        ++n_calls;
    }
    GemmPeak r;
    r.gflops = flops / static_cast<double>(best_ns);
    r.mean_gflops = flops * n_calls / static_cast<double>(total_ns);
    r.precision = quant ? "quant" : lin.is_bf16() ? "bf16" : "f32";
    r.isa = std::string(kernels::isa_name(isa));
    r.n_threads = ctx.n_threads;
    r.m = kM;
    r.n_in = kIn;
    r.n_out = kOut;
    return r;
}

}  // namespace lazyllm
