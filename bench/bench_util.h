// Shared inputs of the micro-benchmarks.
#pragma once

#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace lazyllm::bench {

// n values uniform in [-1, 1), reproducible from `seed`.
inline std::vector<float> random_vec(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

// Defines `double NAME(int64_t iters)`, compiled for TARGET: ten independent chains
// `a = STEP(a, u, x)` on register-resident vectors of TYPE (a_i = INIT(i); u, x = U, X, hidden
// from the optimizer), returning iters * 10 * WORK: a unit's ceiling for run_on_all_threads.
#define LAZYLLM_PEAK_LOOP(NAME, TARGET, TYPE, INIT, OPND, U, X, STEP, SUM, ZERO, WORK)      \
    __attribute__((target(TARGET))) double NAME(int64_t iters) {                            \
        TYPE a[10];                                                                         \
        _Pragma("GCC unroll 10") for (int i = 0; i < 10; ++i) a[i] = INIT(i);               \
        OPND u = U, x = X;                                                                  \
        __asm__("" : "+v"(u), "+v"(x));                                                     \
        for (int64_t k = 0; k < iters; ++k) {                                               \
            _Pragma("GCC unroll 10") for (int i = 0; i < 10; ++i) a[i] = STEP(a[i], u, x);  \
            _Pragma("GCC unroll 10") for (int i = 0; i < 10; ++i) __asm__("" : "+v"(a[i])); \
        }                                                                                   \
        TYPE s = ZERO;                                                                      \
        _Pragma("GCC unroll 10") for (int i = 0; i < 10; ++i) s = SUM(s, a[i]);             \
        benchmark::DoNotOptimize(s);                                                        \
        return static_cast<double>(iters) * 10 * (WORK);                                    \
    }

// A unit's ceiling: each iteration runs loop(iters) on every OpenMP thread, which returns the
// work it did; counter `name` = that work, summed over the threads, in billions per second.
template <typename Loop>
void run_on_all_threads(benchmark::State& state, Loop loop, int64_t iters, const char* name) {
    const int n_threads = omp_get_max_threads();
    double work = 0.0;
    for (auto _ : state) {
        double done = 0.0;
#pragma omp parallel num_threads(n_threads) reduction(+ : done)
        done += loop(iters);
        work = done;
    }
    state.counters[name] =
        benchmark::Counter(work * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["threads"] = n_threads;
}

}  // namespace lazyllm::bench
