// The memory's read rate: the ceiling of a decode step, which streams every weight (and the
// K/V cache) once per token from memory. A plain read of 1 GiB (well past any L3), each thread
// summing its contiguous share in 64-bit words, in weight memory as the model gets it
// (alloc_weights: 2 MiB pages where THP allows). Counter GBps: bytes read per second. The
// shared VMs move this by a third within minutes, so read it beside the decode figures it
// bounds (docs/benchmarks/).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/scratch.h"

namespace lazyllm {
namespace {

constexpr size_t kReadBytes = size_t{1} << 30;

void BM_MemoryRead(benchmark::State& state) {
    const int n_threads = static_cast<int>(state.range(0));
    const size_t n = kReadBytes / sizeof(uint64_t);
    std::unique_ptr<uint64_t, FreeDeleter> buf(
        static_cast<uint64_t*>(alloc_weights(kReadBytes, kHugePageBytes)));
    if (!buf) {
        state.SkipWithError("cannot allocate 1 GiB");
        return;
    }
    uint64_t* p = buf.get();
#pragma omp parallel for num_threads(n_threads) schedule(static)
    for (size_t i = 0; i < n; ++i) p[i] = i;  // every page touched (by the thread reading it)
    for (auto _ : state) {
        uint64_t sum = 0;
#pragma omp parallel for num_threads(n_threads) schedule(static) reduction(+ : sum)
        for (size_t i = 0; i < n; ++i) sum += p[i];
        benchmark::DoNotOptimize(sum);
    }
    state.counters["GBps"] = benchmark::Counter(static_cast<double>(kReadBytes) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_MemoryRead)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace lazyllm
