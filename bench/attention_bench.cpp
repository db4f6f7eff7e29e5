// Attention micro-benchmarks at SmolLM2-135M's shape (9 query heads, 3 KV heads, head_dim 64):
// full causal prefill of n queries over n keys, and decode (1 query over n keys), for
// n = 1k..8k, per kernel (ISA: AVX2, AVX-512 fp32, AVX-512-BF16, AMX) and K/V element type
// (fp32, f16). GFLOPS
// counts the causal work actually needed: 4 * head_dim * n_head * sum_i visible_i (Q.K^T and
// P.V, 2 flops per multiply-add).
//
// BM_AttentionDecode is the decode step's streaming loop: K/V bytes read per second
// (bytes_per_second: n rows of K and V, n_head_kv * head_dim elements each, per layer), with
// the keys as the contiguous rows [0, n) or as n rows by index, a sorted random half of a
// 2n-row cache (a pruned step reading its key set straight from the cache), over one layer's
// cache (warm) or 30 layers' (a decode step: cold).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/attention.h"
#include "kernels/cpu.h"
#include "kernels/quant_blocks.h"
#include "kernels/workspace.h"

namespace lazyllm::kernels {
namespace {

// Attention shape of a model: query heads, KV heads, head_dim, layers.
struct Shape {
    int n_head, n_head_kv, head_dim, n_layer;
    int64_t row_elems() const { return static_cast<int64_t>(n_head_kv) * head_dim; }
};
constexpr Shape kSmolLM2{9, 3, 64, 30};  // the default model
// BM_AttentionDecodeModel's shapes (arg `model`).
constexpr Shape kModels[] = {kSmolLM2,
                             {32, 8, 64, 16} /* Llama-3.2-1B */,
                             {12, 2, 128, 28} /* Qwen2.5-1.5B */,
                             {32, 8, 128, 32} /* Llama-3.1-8B */,
                             {28, 4, 128, 28} /* Qwen2.5-7B: 7 query heads per KV head */};

struct Buffers {
    std::vector<float> q, k, v, out;  // k, v: fp32 caches (empty for f16)
    std::vector<uint16_t> k16, v16;   // f16 caches
    std::vector<int32_t> q_pos, kv_pos, kv_row;
    int64_t layer_stride = 0;  // elements between the caches of consecutive layers
};

// n_q queries at the last positions over n_kv keys, K/V for n_layers layers (the args point at
// layer 0). indexed: the keys are n_kv rows of a 2 * n_kv row cache (sorted random subset),
// read through kv_row. head_blocks: each KV head's rows in a block of their own, as the
// model's KvCache keeps them (else rows of side-by-side heads).
AttentionArgs make_args(Buffers& b, int64_t n_q, int64_t n_kv, KvType type, bool indexed,
                        int n_layers = 1, const Shape& sh = kSmolLM2, bool head_blocks = false) {
    uint32_t state = 1;
    auto next = [&state] {  // uniform in [-1, 1): an LCG, fast enough for 100M elements
        state = state * 1664525u + 1013904223u;
        return static_cast<float>(static_cast<int32_t>(state)) * 0x1p-31f;
    };
    const int64_t n_rows = indexed ? 2 * n_kv : n_kv;
    const size_t n_elems = static_cast<size_t>(n_layers * n_rows * sh.row_elems());
    b.q.resize(n_q * sh.n_head * sh.head_dim);
    for (float& e : b.q) e = next();
    if (type == KvType::kF16) {
        b.k16.resize(n_elems);
        b.v16.resize(n_elems);
        for (size_t i = 0; i < n_elems; ++i) {
            b.k16[i] = quant::fp32_to_fp16_scalar(next());
            b.v16[i] = quant::fp32_to_fp16_scalar(next());
        }
    } else {
        b.k.resize(n_elems);
        b.v.resize(n_elems);
        for (size_t i = 0; i < n_elems; ++i) {
            b.k[i] = next();
            b.v[i] = next();
        }
    }
    b.layer_stride = n_rows * sh.row_elems();
    b.out.assign(n_q * sh.n_head * sh.head_dim, 0.0f);
    b.kv_row.resize(n_rows);
    std::iota(b.kv_row.begin(), b.kv_row.end(), 0);
    if (indexed) {
        std::shuffle(b.kv_row.begin(), b.kv_row.end(), std::mt19937(1));
        b.kv_row.resize(n_kv);
        std::sort(b.kv_row.begin(), b.kv_row.end());
    }
    b.kv_pos = b.kv_row;  // the cache is position-addressed
    b.q_pos.resize(n_q);
    std::iota(b.q_pos.begin(), b.q_pos.end(), static_cast<int32_t>(b.kv_pos.back() + 1 - n_q));
    AttentionArgs a;
    a.q = b.q.data();
    a.q_pos = b.q_pos.data();
    a.n_q = n_q;
    a.q_stride = sh.n_head * sh.head_dim;
    a.kv_type = type;
    a.k = type == KvType::kF16 ? static_cast<const void*>(b.k16.data()) : b.k.data();
    a.v = type == KvType::kF16 ? static_cast<const void*>(b.v16.data()) : b.v.data();
    a.kv_row = indexed ? b.kv_row.data() : nullptr;
    a.kv_pos = b.kv_pos.data();
    a.n_kv = n_kv;
    a.kv_stride = head_blocks ? sh.head_dim : sh.row_elems();
    a.kv_head_stride = head_blocks ? n_rows * sh.head_dim : 0;
    a.n_head = sh.n_head;
    a.n_head_kv = sh.n_head_kv;
    a.head_dim = sh.head_dim;
    a.scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
    a.out = b.out.data();
    a.out_stride = sh.n_head * sh.head_dim;
    return a;
}

// The args of layer il (same queries and keys, that layer's K/V).
AttentionArgs layer_args(const AttentionArgs& a0, const Buffers& b, int il) {
    AttentionArgs a = a0;
    const int64_t off = il * b.layer_stride * static_cast<int64_t>(kv_type_size(a0.kv_type));
    a.k = static_cast<const char*>(a0.k) + off;
    a.v = static_cast<const char*>(a0.v) + off;
    return a;
}

double visible_pairs(const Buffers& b) {  // sum over queries of visible keys
    double visible = 0.0;
    for (int32_t p : b.q_pos) {
        visible += static_cast<double>(std::upper_bound(b.kv_pos.begin(), b.kv_pos.end(), p) -
                                       b.kv_pos.begin());
    }
    return visible;
}

// n_layers > 1: each iteration runs every layer's cache once, as a decode step does, so the
// K/V come from beyond L2 (n_layers = 30, SmolLM2-135M's depth: 23-189 MB at 1k-8k keys).
// bf16: AttentionArgs::bf16 (the AMX or AVX-512-BF16 tiles on a prefill).
// scores: AttentionArgs::scores (LazyLLM's score of the query row from the same call).
void run(benchmark::State& state, Isa isa, int64_t n_q, int64_t n_kv, KvType type, bool indexed,
         int n_layers = 1, bool bf16 = false, const Shape& sh = kSmolLM2, bool head_blocks = false,
         bool scores = false) {
    const CpuFeatures f = detect_cpu_features();
    if (!isa_supported(isa, f) || (bf16 && !f.avx512bf16)) {
        state.SkipWithError("ISA not supported by this CPU");
        return;
    }
    Buffers b;
    AttentionArgs a0 = make_args(b, n_q, n_kv, type, indexed, n_layers, sh, head_blocks);
    a0.bf16 = bf16;
    std::vector<float> score_row(scores ? n_kv : 0);
    a0.scores = scores ? score_row.data() : nullptr;
    std::vector<AttentionArgs> layers;
    for (int il = 0; il < n_layers; ++il) layers.push_back(layer_args(a0, b, il));
    Workspace ws;  // the model's: kept across calls
    const KernelContext ctx{isa, omp_get_max_threads(), &ws};
    for (auto _ : state) {
        for (const AttentionArgs& a : layers) attention(ctx, a);
        benchmark::DoNotOptimize(b.out.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOPS"] =
        benchmark::Counter(4.0 * sh.head_dim * sh.n_head * visible_pairs(b) * n_layers * 1e-9,
                           benchmark::Counter::kIsIterationInvariantRate);
    state.counters["threads"] = ctx.n_threads;
    state.SetBytesProcessed(state.iterations() * n_layers * n_kv * 2 * sh.row_elems() *
                            static_cast<int64_t>(kv_type_size(type)));
}

// args: n (context), decode (0: n queries over n keys, 1: one query over n keys), f16.
void run_attention(benchmark::State& state, Isa isa, bool bf16 = false) {
    const int64_t n = state.range(0);
    const KvType type = state.range(2) != 0 ? KvType::kF16 : KvType::kF32;
    run(state, isa, state.range(1) != 0 ? 1 : n, n, type, /*indexed=*/false, 1, bf16);
}

void BM_AttentionAvx2(benchmark::State& state) { run_attention(state, Isa::kAvx2); }
void BM_AttentionAvx512(benchmark::State& state) { run_attention(state, Isa::kAvx512); }
// bf16 products: VDPBF16PS tiles (AVX-512-BF16), AMX tiles.
void BM_AttentionAvx512Bf16(benchmark::State& state) { run_attention(state, Isa::kAvx512, true); }
void BM_AttentionAmx(benchmark::State& state) { run_attention(state, Isa::kAmx, true); }

void contexts(benchmark::internal::Benchmark* b) {
    for (int f16 : {0, 1}) {
        for (int decode : {0, 1}) {
            for (int64_t n : {1024, 2048, 4096, 8192}) b->Args({n, decode, f16});
        }
    }
    b->ArgNames({"n", "decode", "f16"});
    b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_AttentionAvx2)->Apply(contexts);
BENCHMARK(BM_AttentionAvx512)->Apply(contexts);
BENCHMARK(BM_AttentionAvx512Bf16)->Apply(contexts);
BENCHMARK(BM_AttentionAmx)->Apply(contexts);

// Decode (1 query): args n, f16, indexed, layers (1: one cache, warm in L2 for n <= 4k;
// 30: a whole decode step's caches, streamed from L3 or DRAM); each KV head's rows in a block,
// as the model's cache.
void BM_AttentionDecode(benchmark::State& state) {
    run(state, best_isa(detect_cpu_features()), 1, state.range(0),
        state.range(1) != 0 ? KvType::kF16 : KvType::kF32, state.range(2) != 0,
        static_cast<int>(state.range(3)), false, kSmolLM2, /*head_blocks=*/true);
}
BENCHMARK(BM_AttentionDecode)
    ->ArgsProduct({{1024, 2048, 4096, 8192}, {0, 1}, {0, 1}, {1, 30}})
    ->ArgNames({"n", "f16", "indexed", "layers"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// A lazy decode step's attention with the rows it revives: args rows (the step's own + revived),
// n (keys), indexed (0: the prefix, a layer before the first boundary; 1: a pruned key set);
// f16 cache in head blocks, one layer.
void BM_AttentionFewRows(benchmark::State& state) {
    run(state, best_isa(detect_cpu_features()), state.range(0), state.range(1), KvType::kF16,
        state.range(2) != 0, 1, false, kSmolLM2, /*head_blocks=*/true);
}
BENCHMARK(BM_AttentionFewRows)
    ->ArgsProduct({{1, 2, 3, 4, 6, 11, 17, 24, 33}, {1024, 8192}, {0, 1}})
    ->ArgNames({"rows", "n", "indexed"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// A decode call at a LazyLLM boundary layer that also writes the score (AttentionArgs::scores)
// of its last row, against BM_AttentionDecode (BM_AttentionFewRows for several rows: a step
// with revived rows) plus BM_ScoresHeadMean: args rows, n, layers; f16 cache in head blocks.
void BM_AttentionDecodeScores(benchmark::State& state) {
    run(state, best_isa(detect_cpu_features()), state.range(0), state.range(1), KvType::kF16, false,
        static_cast<int>(state.range(2)), false, kSmolLM2, /*head_blocks=*/true, /*scores=*/true);
}
BENCHMARK(BM_AttentionDecodeScores)
    ->ArgsProduct({{1, 4}, {1024, 4096, 8192}, {1, 30}})
    ->ArgNames({"rows", "n", "layers"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// A whole decode step's attention (one query, every layer's f16 cache) in a model's shape:
// args n (context), model (kModels: 0 SmolLM2-135M, 1 Llama-3.2-1B, 2 Qwen2.5-1.5B,
// 3 Llama-3.1-8B, 4 Qwen2.5-7B), head_blocks (1: each KV head's rows in a block, the model's cache; 0: rows
// of side-by-side heads).
void BM_AttentionDecodeModel(benchmark::State& state) {
    const Shape& sh = kModels[state.range(1)];
    run(state, best_isa(detect_cpu_features()), 1, state.range(0), KvType::kF16, false, sh.n_layer,
        false, sh, state.range(2) != 0);
}
BENCHMARK(BM_AttentionDecodeModel)
    ->ArgsProduct({{512, 2048, 4096}, {0, 1, 2, 3, 4}, {1, 0}})
    ->ArgNames({"n", "model", "head_blocks"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// LazyLLM importance scores (one query row, all heads) at a boundary layer: args n, f16, isa
// (2: AVX-512, 1: AVX2, 0: the scalar reference).
void BM_ScoresHeadMean(benchmark::State& state) {
    const int64_t n = state.range(0);
    const Isa isa = state.range(2) == 2   ? Isa::kAvx512
                    : state.range(2) == 1 ? Isa::kAvx2
                                          : Isa::kRef;
    if (!isa_supported(isa, detect_cpu_features())) {
        state.SkipWithError("ISA not supported by this CPU");
        return;
    }
    Buffers b;
    const AttentionArgs a =
        make_args(b, 1, n, state.range(1) != 0 ? KvType::kF16 : KvType::kF32, false);
    const KernelContext ctx{isa, omp_get_max_threads()};
    std::vector<float> scores(n);
    for (auto _ : state) {
        attention_scores_head_mean(ctx, a, b.q.data(), b.q_pos[0], scores.data());
        benchmark::DoNotOptimize(scores.data());
    }
}
BENCHMARK(BM_ScoresHeadMean)
    ->ArgsProduct({{4096, 8192}, {0, 1}, {2, 1, 0}})
    ->ArgNames({"n", "f16", "isa"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace lazyllm::kernels
