// Attention micro-benchmarks at SmolLM2-135M's shape (9 query heads, 3 KV heads, head_dim 64):
// full causal prefill of n queries over n keys, and decode (1 query over n keys), for
// n = 1k..8k, per kernel (ISA). GFLOPS counts the causal work actually needed:
// 4 * head_dim * n_head * sum_i visible_i (Q.K^T and P.V, 2 flops per multiply-add).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/attention.h"
#include "kernels/cpu.h"

namespace lazyllm::kernels {
namespace {

constexpr int kHead = 9, kHeadKv = 3, kHeadDim = 64;

struct Buffers {
    std::vector<float> q, k, v, out;
    std::vector<int32_t> q_pos, kv_pos;
};

AttentionArgs make_args(Buffers& b, int64_t n_q, int64_t n_kv) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto fill = [&](std::vector<float>& x, size_t n) {
        x.resize(n);
        for (float& e : x) e = dist(rng);
    };
    fill(b.q, n_q * kHead * kHeadDim);
    fill(b.k, n_kv * kHeadKv * kHeadDim);
    fill(b.v, n_kv * kHeadKv * kHeadDim);
    b.out.assign(n_q * kHead * kHeadDim, 0.0f);
    b.kv_pos.resize(n_kv);
    std::iota(b.kv_pos.begin(), b.kv_pos.end(), 0);
    b.q_pos.resize(n_q);
    std::iota(b.q_pos.begin(), b.q_pos.end(), static_cast<int32_t>(n_kv - n_q));
    AttentionArgs a;
    a.q = b.q.data();
    a.q_pos = b.q_pos.data();
    a.n_q = n_q;
    a.q_stride = kHead * kHeadDim;
    a.k = b.k.data();
    a.v = b.v.data();
    a.kv_pos = b.kv_pos.data();
    a.n_kv = n_kv;
    a.kv_stride = kHeadKv * kHeadDim;
    a.n_head = kHead;
    a.n_head_kv = kHeadKv;
    a.head_dim = kHeadDim;
    a.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    a.out = b.out.data();
    a.out_stride = kHead * kHeadDim;
    return a;
}

// args: n (context), decode (0: n queries over n keys, 1: one query over n keys).
void run_attention(benchmark::State& state, Isa isa) {
    if (!isa_supported(isa, detect_cpu_features())) {
        state.SkipWithError("ISA not supported by this CPU");
        return;
    }
    const int64_t n = state.range(0);
    const bool decode = state.range(1) != 0;
    const int64_t n_q = decode ? 1 : n;
    Buffers b;
    const AttentionArgs a = make_args(b, n_q, n);
    const KernelContext ctx{isa, omp_get_max_threads()};
    double visible = 0.0;  // sum over queries of visible keys
    for (int64_t i = 0; i < n_q; ++i) visible += static_cast<double>(b.q_pos[i] + 1);
    for (auto _ : state) {
        attention(ctx, a);
        benchmark::DoNotOptimize(b.out.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOPS"] = benchmark::Counter(4.0 * kHeadDim * kHead * visible * 1e-9,
                                                  benchmark::Counter::kIsIterationInvariantRate);
    state.counters["threads"] = ctx.n_threads;
}

void BM_AttentionAvx512(benchmark::State& state) { run_attention(state, Isa::kAvx512); }
void BM_AttentionAmx(benchmark::State& state) { run_attention(state, Isa::kAmx); }

void contexts(benchmark::internal::Benchmark* b) {
    for (int decode : {0, 1}) {
        for (int64_t n : {1024, 2048, 4096, 8192}) b->Args({n, decode});
    }
    b->ArgNames({"n", "decode"});
    b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_AttentionAvx512)->Apply(contexts);
BENCHMARK(BM_AttentionAmx)->Apply(contexts);

// LazyLLM importance scores (one query row, all heads) at a boundary layer.
void BM_ScoresHeadMean(benchmark::State& state) {
    const int64_t n = state.range(0);
    Buffers b;
    const AttentionArgs a = make_args(b, 1, n);
    const KernelContext ctx{best_isa(detect_cpu_features()), omp_get_max_threads()};
    std::vector<float> scores(n);
    for (auto _ : state) {
        attention_scores_head_mean(ctx, a, b.q.data(), b.q_pos[0], scores.data());
        benchmark::DoNotOptimize(scores.data());
    }
}
BENCHMARK(BM_ScoresHeadMean)->Arg(4096)->Arg(8192)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace lazyllm::kernels
