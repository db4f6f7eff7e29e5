// GEMM peak probe (include/lazyllm/probe.h): the shape is the one design.md section 3 quotes for
// oneDNN bf16 on AMX (2048x1536x576, 3.6 TFLOP/s on 2 threads), run through PackedLinear. On the
// bf16 path the activations go in as bf16 (forward_bf16), as the model's GEMMs get them from
// rms_norm_bf16 / swiglu_bf16, so no fp32 -> bf16 conversion is timed.
#include "lazyllm/probe.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "base/timer.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"

namespace lazyllm {

namespace {

constexpr int64_t kM = 2048, kIn = 576, kOut = 1536;
constexpr int kCalls = 12;

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

}  // namespace

Result<GemmPeak> measure_gemm_peak(int n_threads, std::string_view precision) {
    if (n_threads < 0) {
        return make_error(ErrorCode::kInvalidArgument, "threads must be >= 0, got {}", n_threads);
    }
    kernels::GemmPrecision p = kernels::GemmPrecision::kAuto;
    if (precision == "f32") {
        p = kernels::GemmPrecision::kF32;
    } else if (precision == "bf16") {
        p = kernels::GemmPrecision::kBf16;
    } else if (precision != "auto") {
        return make_error(ErrorCode::kInvalidArgument,
                          "precision '{}' is not one of auto, f32, bf16", precision);
    }
    LAZYLLM_ASSIGN_OR_RETURN(kernels::Isa isa, kernels::isa_from_env());
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const kernels::KernelContext ctx{isa, n_threads > 0 ? n_threads : hw};
    omp_set_num_threads(ctx.n_threads);

    const std::vector<float> w =
        random_values(static_cast<size_t>(kOut * kIn), 1);                         // [n_out, n_in]
    const std::vector<float> x = random_values(static_cast<size_t>(kM * kIn), 2);  // [m, n_in]
    std::vector<float> y(static_cast<size_t>(kM * kOut));                          // [m, n_out]
    LAZYLLM_ASSIGN_OR_RETURN(kernels::PackedLinear lin,
                             kernels::PackedLinear::create(ctx, w.data(), kOut, kIn, nullptr, p));
    const std::vector<uint16_t> x_bf16 = lin.is_bf16() ? to_bf16(x) : std::vector<uint16_t>();
    auto call = [&] {
        if (lin.is_bf16()) {
            lin.forward_bf16(x_bf16.data(), kM, y.data());
        } else {
            lin.forward(x.data(), kM, y.data());
        }
    };
    call();  // creates and caches the primitive for this m

    const double flops = 2.0 * static_cast<double>(kM) * kIn * kOut;
    int64_t best_ns = INT64_MAX, total_ns = 0;
    for (int i = 0; i < kCalls; ++i) {
        Timer t;
        call();
        const int64_t ns = std::max<int64_t>(1, t.elapsed_ns());
        best_ns = std::min(best_ns, ns);
        total_ns += ns;
    }
    GemmPeak r;
    r.gflops = flops / static_cast<double>(best_ns);
    r.mean_gflops = flops * kCalls / static_cast<double>(total_ns);
    r.precision = lin.is_bf16() ? "bf16" : "f32";
    r.isa = std::string(kernels::isa_name(isa));
    r.n_threads = ctx.n_threads;
    r.m = kM;
    r.n_in = kIn;
    r.n_out = kOut;
    return r;
}

}  // namespace lazyllm
