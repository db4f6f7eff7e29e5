// GEMM micro-benchmarks at SmolLM2-135M's linear-layer shapes (PackedLinear: our AMX kernel,
// our AVX2 fp32 kernel or oneDNN; BM_LinearBf16In compares AMX and oneDNN on the model's bf16
// path, BM_LinearF32Rows our AVX2 kernel and oneDNN on fp32).
// Counter GFLOPS = 2 * m * n_in * n_out per second / 1e9. Reference points measured on this
// machine kind (2 cores, Sapphire Rapids, oneDNN 2.6.3 bf16 on AMX, raw matmul without our
// fp32->bf16 conversion): 3.6 TFLOP/s at 2048x1536x576, 4.6 TFLOP/s at 4096x576x576
// (design.md section 3). Threads: all OpenMP threads (OMP_NUM_THREADS to change).
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <omp.h>

#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <unordered_map>
#include <vector>

#include "base/scratch.h"
#include "bench/bench_util.h"
#include "kernels/amx_tiles.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/gemm_amx.h"
#include "kernels/gemm_convert.h"
#include "kernels/workspace.h"

namespace lazyllm::kernels {
namespace {

using bench::random_vec;

// args: m, n_in, n_out. force_onednn: GemmKernels::kOneDnn at create().
void run_linear(benchmark::State& state, GemmPrecision precision, bool force_onednn = false) {
    const int64_t m = state.range(0), n_in = state.range(1), n_out = state.range(2);
    const KernelContext ctx{best_isa(detect_cpu_features()), omp_get_max_threads(), nullptr,
                            force_onednn ? GemmKernels::kOneDnn : GemmKernels::kOwn};
    const auto w = random_vec(n_out * n_in, 1);
    const auto x = random_vec(m * n_in, 2);
    AlignedVector<float> y(m * n_out);
    auto lin = PackedLinear::create(ctx, w.data(), n_out, n_in, nullptr, precision);
    if (!lin.ok()) {
        state.SkipWithError(lin.error().message().c_str());
        return;
    }
    Workspace ws;
    lin->forward(x.data(), m, y.data(), 0, 0, false, &ws);  // caches the primitive for this m
    for (auto _ : state) {
        lin->forward(x.data(), m, y.data(), 0, 0, false, &ws);
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOPS"] = benchmark::Counter(2.0 * m * n_in * n_out * 1e-9,
                                                  benchmark::Counter::kIsIterationInvariantRate);
    state.counters["threads"] = ctx.n_threads;
    state.SetLabel(lin->backend() == GemmBackend::kAmx    ? "amx"
                   : lin->backend() == GemmBackend::kAvx2 ? "avx2"
                                                          : "onednn");
}

void BM_LinearBf16(benchmark::State& state) { run_linear(state, GemmPrecision::kBf16); }
void BM_LinearF32(benchmark::State& state) { run_linear(state, GemmPrecision::kF32); }

// SmolLM2-135M: fused QKV 576->960, fused gate|up 576->3072, out-proj 576->576,
// down 1536->576.
void model_shapes(benchmark::internal::Benchmark* b) {
    const int64_t shapes[][2] = {{576, 960}, {576, 3072}, {576, 576}, {1536, 576}};
    for (int64_t m : {1, 512, 2048, 4096}) {
        for (const auto& s : shapes) b->Args({m, s[0], s[1]});
    }
    b->ArgNames({"m", "n_in", "n_out"});
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
}

BENCHMARK(BM_LinearBf16)->Apply(model_shapes);

// Pruned steps hand the GEMM arbitrary row counts (e.g. 0.35 x 4006 = 1403): the kernel's
// speed must not depend on m being round.
void odd_rows(benchmark::internal::Benchmark* b) {
    for (int64_t m : {601, 608, 1344, 1392, 1403, 1408, 1434, 1472, 2805, 2816, 4000, 4006}) b->Args({m, 576, 3072});
    b->ArgNames({"m", "n_in", "n_out"});
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_LinearBf16)->Apply(odd_rows);
// The design note's reference shapes, for a like-for-like comparison with the raw oneDNN peak.
BENCHMARK(BM_LinearBf16)
    ->Args({2048, 576, 1536})
    ->Args({4096, 576, 576})
    ->ArgNames({"m", "n_in", "n_out"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
// LM head on the last row only.
BENCHMARK(BM_LinearBf16)
    ->Args({1, 576, 49152})
    ->ArgNames({"m", "n_in", "n_out"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
// fp32 at the row counts LazyLLM's deeper stages (200-800 rows) and decode steps with revived
// tokens (8-256 rows) produce, on the four model shapes: where oneDNN 2.6.3's sgemm had a
// cliff on Zen 3 (576 -> 3072 at 68-94 GFLOP/s for m = 8..256, ~145-185 from 384; 2 threads).
// onednn = 0: the backend PackedLinear picks (our AVX2 kernel on an avx2 context), 1: oneDNN
// (GemmKernels::kOneDnn). Run with --benchmark_repetitions=7
// --benchmark_enable_random_interleaving=true: on the shared 2-core Zen 3 VM whole runs
// drifted between ~135 and ~190 GFLOP/s for the same kernel, so the two backends must sample
// the same machine states. Measured there (2 threads, FMA-loop peak ~200 GFLOP/s, medians of
// 7): 576 -> 3072 at m = 8..256 ours 133-186 against oneDNN 63-82; m = 1 ours 1.1-1.3x;
// elsewhere (m >= 64 on every shape, and m >= 384 on 576 -> 3072) within noise of each
// other, 0.89-1.17x, both 150-187 (best runs: ours 182-195, oneDNN 174-188). One thread,
// 576 -> 3072 at m = 8..256: ours 64-86, oneDNN 35-44.
void BM_LinearF32Rows(benchmark::State& state) {
    run_linear(state, GemmPrecision::kF32, state.range(3) == 1);
}
void stage_rows(benchmark::internal::Benchmark* b) {
    const int64_t shapes[][2] = {{576, 960}, {576, 3072}, {576, 576}, {1536, 576}};
    for (const auto& s : shapes) {
        for (int64_t m : {1, 8, 16, 32, 64, 128, 256, 384, 512, 768, 1024, 2048, 4096}) {
            for (int64_t onednn : {0, 1}) b->Args({m, s[0], s[1], onednn});
        }
    }
    b->ArgNames({"m", "n_in", "n_out", "onednn"});
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_LinearF32Rows)->Apply(stage_rows);
BENCHMARK(BM_LinearF32)->Apply(model_shapes);

// The model's path: bf16 activations in (written by RMSNorm / SwiGLU), per backend (0 = oneDNN,
// 1 = our AMX kernel; KernelContext::gemm picks it at create()), output stage 0 = store fp32,
// 1 = accumulate fp32 (attn_out, down), 2 = SwiGLU to bf16 (gate|up, the shape n_out = 2 n_ff).
// args: m, n_in, n_out, backend, stage.
void BM_LinearBf16In(benchmark::State& state) {
    const int64_t m = state.range(0), n_in = state.range(1), n_out = state.range(2);
    const bool amx = state.range(3) == 1;
    const int stage = static_cast<int>(state.range(4));
    const KernelContext ctx{best_isa(detect_cpu_features()), omp_get_max_threads(), nullptr,
                            amx ? GemmKernels::kOwn : GemmKernels::kOneDnn};
    const auto w = random_vec(n_out * n_in, 1);
    const auto xf = random_vec(m * n_in, 2);
    AlignedVector<uint16_t> x(m * n_in);
    detail::convert_rows_to_bf16_ref(xf.data(), m, n_in, n_in, x.data(), n_in);
    AlignedVector<float> y(m * n_out);
    std::vector<uint16_t> act(m * n_out / 2);
    auto lin = PackedLinear::create(ctx, w.data(), n_out, n_in, nullptr, GemmPrecision::kBf16,
                                    stage == 2 ? GemmLayout::kSwiGlu : GemmLayout::kPlain);
    if (!lin.ok()) {
        state.SkipWithError(lin.error().message().c_str());
        return;
    }
    if (amx && lin->backend() != GemmBackend::kAmx) {
        state.SkipWithError("AMX GEMM backend not available here");
        return;
    }
    Workspace ws;
    auto run = [&] {
        if (stage == 2) {
            lin->forward_glu_bf16(GluAct::kSilu, x.data(), m, act.data(), 0, 0, &ws);
        } else {
            lin->forward_bf16(x.data(), m, y.data(), 0, 0, stage == 1, nullptr, &ws);
        }
    };
    run();
    for (auto _ : state) {
        run();
        benchmark::DoNotOptimize(y.data());
        benchmark::DoNotOptimize(act.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOPS"] = benchmark::Counter(2.0 * m * n_in * n_out * 1e-9,
                                                  benchmark::Counter::kIsIterationInvariantRate);
    state.counters["threads"] = ctx.n_threads;
}
void model_stages(benchmark::internal::Benchmark* b) {
    // {n_in, n_out, stage}: qkv, attn_out (+= h), gate|up with SwiGLU, down (+= h).
    const int64_t shapes[][3] = {{576, 960, 0}, {576, 576, 1}, {576, 3072, 2}, {1536, 576, 1}};
    for (int64_t m : {410, 613, 819, 1403, 4096, 8192}) {
        for (const auto& s : shapes) {
            for (int64_t backend : {0, 1}) b->Args({m, s[0], s[1], backend, s[2]});
        }
    }
    b->ArgNames({"m", "n_in", "n_out", "amx", "stage"});
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_LinearBf16In)->Apply(model_stages);

// The AMX tile unit's ceiling on this machine: TDPBF16PS on register-resident tiles, on every
// OpenMP thread (no memory traffic, so no GEMM reaches it).
void BM_AmxTdpPeak(benchmark::State& state) {
    if (!detail::amx_permission()) {
        state.SkipWithError("no AMX bf16 here");
        return;
    }
    bench::run_on_all_threads(state, detail::amx_tdp_loop, 200000, "GFLOPS");
}
BENCHMARK(BM_AmxTdpPeak)->Unit(benchmark::kMillisecond)->UseRealTime();

// What precision auto follows (cpu_bf16_gemm_pays): VDPBF16PS (32 multiply-adds a zmm) against
// VFMADD231PS (16) on register-resident zmm, ten independent chains per thread on all threads.
// Counter GFLOPS: 2 FLOPs a multiply-add. On Zen 4 bf16 runs at twice the fp32 rate; on a Xeon
// model 207 (AMX hidden) at half of it: 158 against 327 GFLOP/s on 2 threads.
#define LAZYLLM_BF16(v) ((__m512bh)_mm512_set1_epi16(v))
LAZYLLM_PEAK_LOOP(dpbf16_loop, "avx512f,avx512bw,avx512bf16", __m512, _mm512_set1_ps, __m512bh,
                  LAZYLLM_BF16(0x3f80), LAZYLLM_BF16(0x3a80), _mm512_dpbf16_ps, _mm512_add_ps,
                  _mm512_setzero_ps(), 32 * 2)
#undef LAZYLLM_BF16
LAZYLLM_PEAK_LOOP(fma_f32_loop, "avx512f", __m512, _mm512_set1_ps, __m512, _mm512_set1_ps(0.999f),
                  _mm512_set1_ps(1e-3f), _mm512_fmadd_ps, _mm512_add_ps, _mm512_setzero_ps(),
                  16 * 2)

void BM_Bf16DotPeak(benchmark::State& state) {
    if (!cpu_has_avx512_bf16()) {
        state.SkipWithError("no AVX-512-BF16 here");
        return;
    }
    bench::run_on_all_threads(state, dpbf16_loop, 5000000, "GFLOPS");
    state.SetLabel(cpu_bf16_gemm_pays() ? "bf16 pays (auto: bf16)" : "auto: f32");
}
BENCHMARK(BM_Bf16DotPeak)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Fp32FmaPeak(benchmark::State& state) {
    if (!isa_supported(Isa::kAvx512, detect_cpu_features())) {
        state.SkipWithError("no AVX-512 here");
        return;
    }
    bench::run_on_all_threads(state, fma_f32_loop, 5000000, "GFLOPS");
}
BENCHMARK(BM_Fp32FmaPeak)->Unit(benchmark::kMillisecond)->UseRealTime();

// Raw oneDNN bf16 matmul (bf16 activations already in memory, packed weights, f32 output):
// the peak PackedLinear is measured against, in the same run and machine state.
void BM_OneDnnRawBf16(benchmark::State& state) {
    using dnnl::memory;
    using Dt = memory::data_type;
    using Tag = memory::format_tag;
    const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream strm(eng);
    const memory::desc src_md({m, k}, Dt::bf16, Tag::ab);
    const memory::desc dst_md({m, n}, Dt::f32, Tag::ab);
    const dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(src_md, memory::desc({k, n}, Dt::bf16, Tag::any), dst_md), eng);
    memory src(src_md, eng), wei(pd.weights_desc(), eng), dst(dst_md, eng);
    // Random bf16 data (AMX power and clocks depend on the data; zeros would flatter it).
    const auto x = random_vec(m * k, 2);
    detail::convert_rows_to_bf16_ref(x.data(), m, k, k,
                                     static_cast<uint16_t*>(src.get_data_handle()), k);
    const auto w = random_vec(k * n, 1);
    memory w_user(memory::desc({k, n}, Dt::f32, Tag::ab), eng, const_cast<float*>(w.data()));
    dnnl::reorder(w_user, wei).execute(strm, w_user, wei);
    const dnnl::matmul prim(pd);
    const std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    prim.execute(strm, args);
    for (auto _ : state) {
        prim.execute(strm, args);
        strm.wait();
    }
    state.counters["GFLOPS"] =
        benchmark::Counter(2.0 * m * k * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(pd.impl_info_str());
}
BENCHMARK(BM_OneDnnRawBf16)->Apply(model_shapes);

// The fp32 -> bf16 activation conversion PackedLinear does before each bf16 GEMM.
void BM_ConvertBf16(benchmark::State& state) {
    const int64_t m = state.range(0), n = state.range(1);
    const CpuFeatures f = detect_cpu_features();
    if (!f.avx512bf16) {
        state.SkipWithError("no AVX-512-BF16");
        return;
    }
    const auto x = random_vec(m * n, 3);
    std::vector<uint16_t> y(m * n);
    for (auto _ : state) {
        detail::convert_rows_to_bf16_avx512(x.data(), m, n, n, y.data(), n);
        benchmark::DoNotOptimize(y.data());
    }
    state.SetBytesProcessed(state.iterations() * m * n * 6);
}
BENCHMARK(BM_ConvertBf16)
    ->Args({4096, 576})
    ->Args({4096, 1536})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace lazyllm::kernels
