// Dequantization throughput: a 576 x 1536 weight matrix (a SmolLM2-135M-sized projection),
// row by row on one thread, to fp32, per format and ISA. bytes_per_second counts
// the quantized bytes read plus the bytes written; items_per_second counts elements.
//   lazyllm_microbench --benchmark_filter=BM_Dequant
// And the LM head's one prompt row on the fp32 path: gemv_rows_f32 over the GGUF's Q8_0 blocks
// against the fp32 copy's GEMM it replaced (PackedLinear, one row), on the default model's head
// (49152 x 576) and Gemma 3 270M's (262144 x 640), 2 threads; bytes_per_second counts the
// weights read.
//   lazyllm_microbench --benchmark_filter=BM_Head
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "bench_util.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/workspace.h"

namespace lazyllm::kernels {
namespace {

constexpr int64_t kRows = 576;
constexpr int64_t kCols = 1536;

// Random quant bytes with finite fp16 scale fields (offsets from ggml-common.h).
std::vector<uint8_t> random_matrix(GgmlType type) {
    const quant::BlockShape shape = quant::block_shape(type);
    const int64_t nb = kRows * kCols / shape.elems;
    std::vector<uint8_t> m(static_cast<size_t>(nb) * shape.bytes);
    std::mt19937 rng(3);
    for (uint8_t& b : m) b = static_cast<uint8_t>(rng());
    size_t offsets[2] = {0, 2};
    size_t n_offsets = type == GgmlType::Q8_0 ? 1 : 2;
    if (type == GgmlType::Q6_K) {
        offsets[0] = 208;
        n_offsets = 1;
    }
    std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
    for (int64_t b = 0; b < nb; ++b) {
        for (size_t k = 0; k < n_offsets; ++k) {
            const uint16_t h = fp32_to_fp16(scale(rng));
            std::memcpy(m.data() + b * shape.bytes + offsets[k], &h, sizeof(h));
        }
    }
    return m;
}

void bm_f32(benchmark::State& state, GgmlType type, Isa isa) {
    if (!isa_supported(isa, detect_cpu_features())) {
        state.SkipWithError("ISA not supported by this CPU");
        return;
    }
    const std::vector<uint8_t> w = random_matrix(type);
    const size_t row_bytes = w.size() / kRows;
    std::vector<float> out(static_cast<size_t>(kRows * kCols));  // [kRows, kCols]
    for (auto _ : state) {
        for (int64_t r = 0; r < kRows; ++r) {
            const uint8_t* src = w.data() + r * row_bytes;
            const Status s = dequantize_row_f32(isa, type, src, out.data() + r * kCols, kCols);
            if (!s.ok()) {
                state.SkipWithError(s.error().message().c_str());
                return;
            }
        }
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    const int64_t elems = kRows * kCols;
    state.SetItemsProcessed(state.iterations() * elems);
    state.SetBytesProcessed(state.iterations() *
                            static_cast<int64_t>(w.size() + out.size() * sizeof(float)));
}

#define LAZYLLM_DEQUANT_BENCH(type)                                            \
    BENCHMARK_CAPTURE(bm_f32, type##_f32_ref, GgmlType::type, Isa::kRef)       \
        ->Name("BM_Dequant/" #type "/f32/ref");                                \
    BENCHMARK_CAPTURE(bm_f32, type##_f32_avx2, GgmlType::type, Isa::kAvx2)     \
        ->Name("BM_Dequant/" #type "/f32/avx2");                               \
    BENCHMARK_CAPTURE(bm_f32, type##_f32_avx512, GgmlType::type, Isa::kAvx512) \
        ->Name("BM_Dequant/" #type "/f32/avx512")

LAZYLLM_DEQUANT_BENCH(Q4_1);
LAZYLLM_DEQUANT_BENCH(Q8_0);
LAZYLLM_DEQUANT_BENCH(Q4_K);
LAZYLLM_DEQUANT_BENCH(Q6_K);

// A head's best ISA and its weights: random Q8_0 blocks with scales of 0.02.
KernelContext head_ctx() { return {best_isa(detect_cpu_features()), 2}; }
std::vector<uint8_t> head_q8(int64_t n_vocab, int64_t n_embd) {
    const int64_t nb = n_vocab * n_embd / 32;
    std::vector<uint8_t> m(static_cast<size_t>(nb) * 34);
    std::mt19937 rng(5);
    for (uint8_t& b : m) b = static_cast<uint8_t>(rng());
    const uint16_t d = fp32_to_fp16(0.02f);
    for (int64_t b = 0; b < nb; ++b) std::memcpy(m.data() + b * 34, &d, sizeof(d));
    return m;
}

void BM_HeadBlocks(benchmark::State& state) {
    const int64_t n_vocab = state.range(0), n_embd = state.range(1);
    const std::vector<uint8_t> w = head_q8(n_vocab, n_embd);
    const std::vector<float> x = bench::random_vec(static_cast<size_t>(n_embd), 1);
    std::vector<float> y(static_cast<size_t>(n_vocab));
    Workspace ws;
    KernelContext ctx = head_ctx();
    ctx.ws = &ws;
    for (auto _ : state) {
        const Status s =
            gemv_rows_f32(ctx, {GgmlType::Q8_0, w.data(), n_vocab, n_embd}, x.data(), y.data());
        if (!s.ok()) {
            state.SkipWithError(s.error().message().c_str());
            return;
        }
        benchmark::DoNotOptimize(y.data());
    }
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(w.size()));
}

void BM_HeadCopyF32(benchmark::State& state) {
    const int64_t n_vocab = state.range(0), n_embd = state.range(1);
    const std::vector<uint8_t> q = head_q8(n_vocab, n_embd);
    std::vector<float> w(static_cast<size_t>(n_vocab * n_embd));
    if (!dequantize_row_f32(Isa::kRef, GgmlType::Q8_0, q.data(), w.data(), n_vocab * n_embd).ok()) {
        state.SkipWithError("dequantize");
        return;
    }
    auto lin =
        PackedLinear::create(head_ctx(), w.data(), n_vocab, n_embd, nullptr, GemmPrecision::kF32);
    if (!lin.ok()) {
        state.SkipWithError(lin.error().message().c_str());
        return;
    }
    w = {};
    const std::vector<float> x = bench::random_vec(static_cast<size_t>(n_embd), 1);
    std::vector<float> y(static_cast<size_t>(n_vocab));
    Workspace ws;
    for (auto _ : state) {
        lin->forward(x.data(), 1, y.data(), 0, 0, false, &ws);
        benchmark::DoNotOptimize(y.data());
    }
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(lin->weight_bytes()));
}

BENCHMARK(BM_HeadBlocks)->Args({49152, 576})->Args({262144, 640})->UseRealTime();
BENCHMARK(BM_HeadCopyF32)->Args({49152, 576})->Args({262144, 640})->UseRealTime();

}  // namespace
}  // namespace lazyllm::kernels
