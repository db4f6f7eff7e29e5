// Quantized GEMV (QuantLinear: the best kernel set, and AVX2 forced) against PackedLinear
// (oneDNN bf16 on AMX, and fp32: the decode path of AVX2 machines without QuantLinear) at
// SmolLM2-135M's decode shapes: fused q|k|v 960x576, wo 576x576, fused gate|up 3072x576,
// down 576x1536 (Q4_1 in the default GGUF) and the tied LM head 49152x576 (token_embd, Q8_0).
//
// Args: m (activation rows), n_out, n_in, threads, cold. Counter GBps = bytes of packed weights
// streamed per forward() / s (weight_bytes(): Q4_1 0.625 B/weight, Q8_0 1.0625, bf16 2,
// fp32 4). cold = 1 cycles through enough copies of the layer (>= 64 MiB) that each call finds
// its weights outside L2, as a decode step does (30 layers of ~2.6 MB each); cold = 0 repeats
// one copy (weights hot in L2 where they fit).
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "bench/bench_util.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/qgemv.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/workspace.h"

namespace lazyllm::kernels {
namespace {

constexpr size_t kColdBytes = size_t{64} << 20;

using bench::random_vec;

// Random GGML blocks with realistic scales (a trained model's are ~0.01-0.05): random quants,
// fp16 d (and m for Q4_1). The data only has to be plausible; the kernel's speed does not
// depend on the values.
std::vector<uint8_t> random_blocks(GgmlType type, int64_t n, uint32_t seed) {
    const quant::BlockShape shape = quant::block_shape(type);
    std::vector<uint8_t> out(static_cast<size_t>(n / shape.elems) * shape.bytes);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> scale(0.01f, 0.05f);
    for (size_t off = 0; off < out.size(); off += shape.bytes) {
        uint8_t* blk = out.data() + off;
        for (size_t i = 0; i < shape.bytes; ++i) blk[i] = static_cast<uint8_t>(rng());
        const float d = scale(rng);
        const uint16_t d16 = fp32_to_fp16(d);
        // Q3_K and Q6_K keep their d last; the other formats first (K-quants: d, then dmin).
        const bool d_last = type == GgmlType::Q6_K || type == GgmlType::Q3_K;
        std::memcpy(d_last ? blk + shape.bytes - 2 : blk, &d16, 2);
        if (type == GgmlType::Q4_1 || type == GgmlType::Q4_K || type == GgmlType::Q5_K) {
            const uint16_t m16 = fp32_to_fp16(-8.0f * d);
            std::memcpy(blk + 2, &m16, 2);
        }
    }
    return out;
}

struct Args {
    int64_t m, n_out, n_in;
    int threads;
    bool cold;
};

Args args_of(const benchmark::State& state) {
    return {state.range(0), state.range(1), state.range(2), static_cast<int>(state.range(3)),
            state.range(4) != 0};
}

// Runs `layers[i % n]` forward per iteration; reports GBps of weights streamed. QuantLinear
// calls take `rows`; outliers >= 0: QuantRows::kPromptOutliers (off the AMX tiles, the exact
// outlier channels of qgemv_outliers.h), with that many channels of x
// (evenly spaced) of magnitude 20-40 in every row of uniform [-1, 1), as a residual stream's
// outlier channels (a row takes at most 8).
template <typename Layer>
void run_layers(benchmark::State& state, const Args& a, const std::vector<Layer>& layers,
                size_t bytes, int64_t outliers = -1, QuantRows rows = QuantRows::kDecode) {
    if (outliers >= 0) rows = QuantRows::kPromptOutliers;
    auto x = random_vec(static_cast<size_t>(a.m * a.n_in), 2);
    for (int64_t i = 0; i < outliers; ++i) {
        const int64_t c = (2 * i + 1) * a.n_in / (2 * outliers);
        for (int64_t r = 0; r < a.m; ++r) {
            float& v = x[r * a.n_in + c];
            v = std::copysign(20.0f + 20.0f * std::fabs(v), v);
        }
    }
    std::vector<float> y(static_cast<size_t>(a.m * a.n_out));
    Workspace ws;
    const auto forward = [&](const Layer& l) {
        if constexpr (std::is_same_v<Layer, QuantLinear>) {
            l.forward(x.data(), a.m, y.data(), 0, 0, false, &ws, rows);
        } else {
            l.forward(x.data(), a.m, y.data(), 0, 0, false, &ws);
        }
    };
    for (const Layer& l : layers) forward(l);  // warm-up
    size_t i = 0;
    for (auto _ : state) {
        forward(layers[i]);
        i = i + 1 == layers.size() ? 0 : i + 1;
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    state.counters["GBps"] = benchmark::Counter(static_cast<double>(bytes) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
    state.counters["MiB"] = static_cast<double>(bytes) / (1 << 20);
}

size_t copies_for(const Args& a, size_t bytes) {
    return a.cold ? (kColdBytes + bytes - 1) / bytes : 1;
}

// The LM head (49152 rows) is Q8_0 in the default model; every other shape Q4_1.
GgmlType model_type(int64_t n_out) { return n_out == 49152 ? GgmlType::Q8_0 : GgmlType::Q4_1; }

// The kernels' ISA: the best this CPU has, or LAZYLLM_ISA's (as the engine's).
Isa bench_isa() {
    const Result<Isa> isa = isa_from_env();
    return isa.ok() ? *isa : best_isa(detect_cpu_features());
}

// Which QuantLinear kernels `ctx` gets for m rows of this kind.
const char* kernel_label(const KernelContext& ctx, QuantRows rows, int64_t m) {
    if (!QuantLinear::has_fast_path(ctx)) return " ref";
    if (QuantLinear::tile_rows(rows, m) && QuantLinear::has_tile_path(ctx)) return " amx";
    const CpuFeatures f = detect_cpu_features();
    return ctx.isa >= Isa::kAvx512 && isa_supported(Isa::kAvx512, f) && f.avx512vnni ? " vnni"
                                                                                     : " avx2";
}

void run_quant(benchmark::State& state, Isa isa, GgmlType type_arg = GgmlType::F32,
               int64_t outliers = -1, QuantRows rows = QuantRows::kDecode) {
    if (outliers >= 0) rows = QuantRows::kPromptOutliers;
    const Args a = args_of(state);
    if (!isa_supported(isa, detect_cpu_features())) {
        state.SkipWithError("ISA not supported by this CPU");
        return;
    }
    const KernelContext ctx{isa, a.threads};
    const GgmlType type = type_arg == GgmlType::F32 ? model_type(a.n_out) : type_arg;
    const auto blocks = random_blocks(type, a.n_out * a.n_in, 1);
    const QuantLinear::Part part{type, blocks.data(), a.n_out};
    std::vector<QuantLinear> layers;
    size_t n_copies = 1;
    for (size_t c = 0; c < n_copies; ++c) {
        auto lin = QuantLinear::create(ctx, {&part, 1}, a.n_in);
        if (!lin.ok()) {
            state.SkipWithError(lin.error().message().c_str());
            return;
        }
        if (c == 0) n_copies = copies_for(a, lin->weight_bytes());
        layers.push_back(std::move(lin).value());
    }
    state.SetLabel(std::string(ggml_type_name(type)) + kernel_label(ctx, rows, a.m));
    run_layers(state, a, layers, layers[0].weight_bytes(), outliers, rows);
}

void BM_QuantLinear(benchmark::State& state) { run_quant(state, bench_isa()); }
// The AVX2 kernels, also on AVX-512 machines (which would pick VNNI).
void BM_QuantLinearAvx2(benchmark::State& state) { run_quant(state, Isa::kAvx2); }
// The K-quant and Q8_0 formats of 1B-8B GGUFs (arg 5: the GgmlType), best kernels and AVX2.
void BM_QuantLinearType(benchmark::State& state) {
    run_quant(state, bench_isa(), static_cast<GgmlType>(state.range(5)));
}
// Rows of a long prompt step (QuantRows::kPromptTiles: on AMX tiles where the CPU has them,
// at any m; under LAZYLLM_ISA=avx512 the int8 kernels, so the two compare at every m).
void BM_QuantLinearTypePrompt(benchmark::State& state) {
    run_quant(state, bench_isa(), static_cast<GgmlType>(state.range(5)), -1,
              QuantRows::kPromptTiles);
}
void BM_QuantLinearTypeAvx2(benchmark::State& state) {
    run_quant(state, Isa::kAvx2, static_cast<GgmlType>(state.range(5)));
}
// Prompt rows with the exact outlier channels on and 0, 4 or 16 such channels in x (arg 5),
// best kernels (BM_QuantLinear: off).
void BM_QuantLinearOutliers(benchmark::State& state) {
    run_quant(state, bench_isa(), GgmlType::F32, state.range(5));
}

void run_packed(benchmark::State& state, GemmPrecision precision) {
    const Args a = args_of(state);
    const KernelContext ctx{bench_isa(), a.threads};
    const auto w = random_vec(static_cast<size_t>(a.n_out * a.n_in), 1);
    std::vector<PackedLinear> layers;
    size_t n_copies = 1;
    for (size_t c = 0; c < n_copies; ++c) {
        auto lin = PackedLinear::create(ctx, w.data(), a.n_out, a.n_in, nullptr, precision);
        if (!lin.ok()) {
            state.SkipWithError(lin.error().message().c_str());
            return;
        }
        if (c == 0) n_copies = copies_for(a, lin->weight_bytes());
        layers.push_back(std::move(lin).value());
    }
    run_layers(state, a, layers, layers[0].weight_bytes());
}

void BM_PackedLinearBf16(benchmark::State& state) { run_packed(state, GemmPrecision::kBf16); }
void BM_PackedLinearF32(benchmark::State& state) { run_packed(state, GemmPrecision::kF32); }

constexpr int64_t kShapes[][2] = {{960, 576}, {576, 576}, {3072, 576}, {576, 1536}, {49152, 576}};

// Decode rows m = 1..8 and beyond, to find where AMX (or the fp32 GEMM, on AVX2) overtakes the
// quantized GEMV.
void decode_shapes(benchmark::internal::Benchmark* b) {
    for (int64_t cold : {0, 1}) {
        for (const auto& s : kShapes) {
            for (int64_t m : {1, 2, 4, 8, 16, 32}) b->Args({m, s[0], s[1], 1, cold});
        }
    }
    b->ArgNames({"m", "n_out", "n_in", "threads", "cold"});
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
}

// Two threads on the big shapes (decode runs on all cores).
void two_threads(benchmark::internal::Benchmark* b) {
    for (const auto& s : kShapes) b->Args({1, s[0], s[1], 2, 1});
    b->ArgNames({"m", "n_out", "n_in", "threads", "cold"});
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
}

// Many rows, two threads (revived rows of a lazy decode step; prefill sizes): where the
// quantized kernels stand against the GEMMs when the weights are reused across rows.
void many_rows(benchmark::internal::Benchmark* b) {
    for (int64_t cold : {0, 1}) {
        for (const auto& s : kShapes) {
            if (s[0] == 49152) continue;
            for (int64_t m : {8, 16, 32, 64, 128, 256, 1024}) b->Args({m, s[0], s[1], 2, cold});
        }
    }
    b->ArgNames({"m", "n_out", "n_in", "threads", "cold"});
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
}

// Llama-3.2-1B's down projection (2048 x 8192) and Llama-3.1-8B's q projection (4096 x 4096)
// per K-quant / Q8_0 type, m = 1 (decode), 8 and 16 (a lazy decode step with revived rows),
// weights cold, two threads.
void type_shapes(benchmark::internal::Benchmark* b) {
    constexpr int64_t kTypeShapes[][2] = {{2048, 8192}, {4096, 4096}};
    for (GgmlType t : {GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                       GgmlType::IQ4_XS, GgmlType::Q8_0}) {
        for (const auto& s : kTypeShapes) {
            for (int64_t m : {1, 8, 16}) b->Args({m, s[0], s[1], 2, 1, static_cast<int64_t>(t)});
        }
    }
    b->ArgNames({"m", "n_out", "n_in", "threads", "cold", "type"});
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
}

// Prompt-sized calls at Llama-3.2-1B's shapes (q, q|k|v, gate|up, down), Q4_K, Q6_K (a Q4_K_M
// file's v and down in half the layers), Q3_K (most of a Q3_K_M file), IQ4_XS and Q8_0: 256 rows
// (one FFN chunk of the quantized prefill) and 2048 (q|k|v and Wo take a whole prompt in one call),
// and 8 to 128 (a chat turn's few new tokens, a lazy decode step's revived rows), two threads,
// weights hot. Where the weights and the activations outgrow L2 (for_each_pass).
void prompt_shapes(benchmark::internal::Benchmark* b) {
    constexpr int64_t kPromptShapes[][2] = {
        {2048, 2048}, {3072, 2048}, {16384, 2048}, {2048, 8192}};
    for (GgmlType t :
         {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::IQ4_XS, GgmlType::Q8_0}) {
        for (const auto& s : kPromptShapes) {
            for (int64_t m : {8, 32, 64, 128, 256, 2048}) {
                b->Args({m, s[0], s[1], 2, 0, static_cast<int64_t>(t)});
            }
        }
    }
    b->ArgNames({"m", "n_out", "n_in", "threads", "cold", "type"});
    b->Unit(benchmark::kMillisecond)->UseRealTime();
}

// The default model's prefill calls (256 rows per call through q|k|v and the FFN), two
// threads, weights hot, without and with outlier channels.
void outlier_shapes(benchmark::internal::Benchmark* b) {
    for (const auto& s : kShapes) {
        if (s[0] == 49152) continue;
        for (int64_t k : {0, 4, 16}) b->Args({256, s[0], s[1], 2, 0, k});
    }
    b->ArgNames({"m", "n_out", "n_in", "threads", "cold", "outliers"});
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
}

// Load: QuantLinear::create from a matrix's GGML blocks (unpack and interleave into groups),
// one create per iteration, its fresh memory included, as at load. Args: n_out, n_in,
// threads, type. Counter GBps: bytes of GGML blocks read per second.
void BM_QuantLinearCreate(benchmark::State& state) {
    const int64_t n_out = state.range(0), n_in = state.range(1);
    const KernelContext ctx{bench_isa(), static_cast<int>(state.range(2))};
    const auto type = static_cast<GgmlType>(state.range(3));
    const auto blocks = random_blocks(type, n_out * n_in, 1);
    const QuantLinear::Part part{type, blocks.data(), n_out};
    for (auto _ : state) {
        auto lin = QuantLinear::create(ctx, {&part, 1}, n_in);
        if (!lin.ok()) {
            state.SkipWithError(lin.error().message().c_str());
            return;
        }
        benchmark::DoNotOptimize(lin->weight_bytes());
    }
    state.SetLabel(std::string(ggml_type_name(type)));
    state.counters["GBps"] = benchmark::Counter(static_cast<double>(blocks.size()) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

// Llama-3.1-8B's q projection (4096 x 4096) per type a Q4_K_M, Q4_0 or Q8_0 file holds, and
// every other type QuantLinear takes, two threads.
void create_shapes(benchmark::internal::Benchmark* b) {
    for (GgmlType t :
         {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
          GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS}) {
        b->Args({4096, 4096, 2, static_cast<int64_t>(t)});
    }
    b->ArgNames({"n_out", "n_in", "threads", "type"});
    b->Unit(benchmark::kMillisecond)->UseRealTime();
}

// The ceiling of the VNNI kernels: independent vpdpbusd on zmm registers (64 multiply-adds
// each), ten chains per thread on all threads. Counter GMACs: multiply-adds per second.
LAZYLLM_PEAK_LOOP(dpbusd_loop, "avx512f,avx512bw,avx512vnni", __m512i, _mm512_set1_epi32, __m512i,
                  _mm512_set1_epi8(3), _mm512_set1_epi8(1), _mm512_dpbusd_epi32, _mm512_add_epi32,
                  _mm512_setzero_si512(), 64)

void BM_VnniPeak(benchmark::State& state) {
    if (!QuantLinear::has_vnni_path(KernelContext{best_isa(detect_cpu_features()), 1})) {
        state.SkipWithError("no AVX-512 VNNI here");
        return;
    }
    bench::run_on_all_threads(state, dpbusd_loop, 5000000, "GMACs");
}

BENCHMARK(BM_VnniPeak)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_QuantLinear)->Apply(decode_shapes);
BENCHMARK(BM_QuantLinearType)->Apply(type_shapes);
BENCHMARK(BM_QuantLinearTypeAvx2)->Apply(type_shapes);
BENCHMARK(BM_QuantLinearTypePrompt)->Apply(prompt_shapes)->Name("BM_QuantLinearPrompt");
BENCHMARK(BM_QuantLinearTypeAvx2)->Apply(prompt_shapes)->Name("BM_QuantLinearPromptAvx2");
BENCHMARK(BM_QuantLinearAvx2)->Apply(decode_shapes);
BENCHMARK(BM_PackedLinearBf16)->Apply(decode_shapes);
BENCHMARK(BM_PackedLinearF32)->Apply(decode_shapes);
BENCHMARK(BM_QuantLinear)->Apply(two_threads);
BENCHMARK(BM_QuantLinearAvx2)->Apply(two_threads);
BENCHMARK(BM_PackedLinearBf16)->Apply(two_threads);
BENCHMARK(BM_PackedLinearF32)->Apply(two_threads);
BENCHMARK(BM_QuantLinear)->Apply(many_rows);
BENCHMARK(BM_QuantLinearOutliers)->Apply(outlier_shapes);
BENCHMARK(BM_PackedLinearBf16)->Apply(many_rows);
BENCHMARK(BM_PackedLinearF32)->Apply(many_rows);
BENCHMARK(BM_QuantLinearCreate)->Apply(create_shapes);

}  // namespace
}  // namespace lazyllm::kernels
