// Row-wise operator micro-benchmarks at SmolLM2-135M's shapes (n_embd 576, 9 + 3 heads of 64,
// n_ff 1536) over 4096 rows, per ISA. Memory-bound: reported as bytes/s.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <random>
#include <vector>

#include "bench/bench_util.h"
#include "kernels/cpu.h"
#include "kernels/ops.h"

namespace lazyllm::kernels {
namespace {

constexpr int64_t kRows = 4096, kEmbd = 576, kFf = 1536;

using bench::random_vec;

bool usable(benchmark::State& state, Isa isa) {
    if (isa_supported(isa, detect_cpu_features())) return true;
    state.SkipWithError("ISA not supported by this CPU");
    return false;
}

// arg: isa as int (0 ref, 1 avx2, 2 avx512).
void BM_RmsNorm(benchmark::State& state) {
    const Isa isa = static_cast<Isa>(state.range(0));
    if (!usable(state, isa)) return;
    const auto x = random_vec(kRows * kEmbd, 1);
    const auto w = random_vec(kEmbd, 2);
    std::vector<float> y(kRows * kEmbd);
    const KernelContext ctx{isa, omp_get_max_threads()};
    for (auto _ : state) {
        rms_norm(ctx, x.data(), w.data(), y.data(), kRows, kEmbd, 1e-5f);
        benchmark::DoNotOptimize(y.data());
    }
    state.SetBytesProcessed(state.iterations() * kRows * kEmbd * 8);
}

void BM_Rope(benchmark::State& state) {
    const Isa isa = static_cast<Isa>(state.range(0));
    if (!usable(state, isa)) return;
    const int64_t stride = 960;  // fused QKV row; Q (9 heads) and K (3 heads) rotated
    auto x = random_vec(kRows * stride, 3);
    std::vector<int32_t> pos(kRows);
    for (int64_t i = 0; i < kRows; ++i) pos[i] = static_cast<int32_t>(i);
    const RopeTable table(8192, 64, 100000.0f);
    const KernelContext ctx{isa, omp_get_max_threads()};
    for (auto _ : state) {
        rope(ctx, table, RopeMode::kNorm, x.data(), pos.data(), kRows, stride, 12, 64);
        benchmark::DoNotOptimize(x.data());
    }
    state.SetBytesProcessed(state.iterations() * kRows * 12 * 64 * 8);
}

void BM_Swiglu(benchmark::State& state) {
    const Isa isa = static_cast<Isa>(state.range(0));
    if (!usable(state, isa)) return;
    const auto gu = random_vec(kRows * 2 * kFf, 4);
    std::vector<float> out(kRows * kFf);
    const KernelContext ctx{isa, omp_get_max_threads()};
    for (auto _ : state) {
        glu(ctx, GluAct::kSilu, gu.data(), out.data(), kRows, kFf);
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(state.iterations() * kRows * kFf * 12);
}

void isas(benchmark::internal::Benchmark* b) {
    b->ArgName("isa")->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
}

BENCHMARK(BM_RmsNorm)->Apply(isas);
BENCHMARK(BM_Rope)->Apply(isas);
BENCHMARK(BM_Swiglu)->Apply(isas);

}  // namespace
}  // namespace lazyllm::kernels
