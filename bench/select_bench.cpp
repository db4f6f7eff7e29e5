// LazyLLM's selection at a decode step's first boundary (prune/select.h), at the default
// model's fast preset: S the whole context (contiguous positions), scores max-pooled over 11
// positions, deferred tokens' scores weighed, a fifth kept. Single-threaded, as in the session.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "bench/bench_util.h"
#include "prune/select.h"

namespace lazyllm::prune {
namespace {

// arg: context tokens.
void BM_SelectKept(benchmark::State& state) {
    const int64_t n = state.range(0);
    std::vector<int32_t> S(static_cast<size_t>(n));
    std::iota(S.begin(), S.end(), 0);
    const std::vector<float> raw = bench::random_vec(static_cast<size_t>(n), 7);
    std::vector<int16_t> depth(static_cast<size_t>(n), 30);
    for (int64_t t = 0; t < n; t += 3) depth[t] = 9;  // deferred at the boundary
    const std::vector<int32_t> live = {static_cast<int32_t>(n - 1)};
    Schedule sch;
    sch.keep_first = 40;
    sch.score_pool = 11;
    const DeferredWeight deferred{live, depth, 9, 0.25f};
    CutScratch scratch;
    std::vector<int32_t> kept;
    std::vector<float> scores;
    for (auto _ : state) {
        scores = raw;
        select_kept(sch, S, scores, 0.2f, n, scratch, kept, &deferred);
        benchmark::DoNotOptimize(kept.data());
    }
    state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_SelectKept)->Arg(1024)->Arg(8192);

// The max-pooling alone (Schedule::score_pool 11) over contiguous positions.
void BM_PoolScores(benchmark::State& state) {
    const int64_t n = state.range(0);
    std::vector<int32_t> S(static_cast<size_t>(n));
    std::iota(S.begin(), S.end(), 0);
    const std::vector<float> raw = bench::random_vec(static_cast<size_t>(n), 7);
    std::vector<float> out;
    for (auto _ : state) {
        pool_scores(raw, S, 11, out);
        benchmark::DoNotOptimize(out.data());
    }
    state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_PoolScores)->Arg(1024)->Arg(8192);

}  // namespace
}  // namespace lazyllm::prune
