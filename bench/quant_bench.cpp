// Dequantization throughput: a 576 x 1536 weight matrix (a SmolLM2-135M-sized projection),
// row by row on one thread, to fp32, per format and ISA. bytes_per_second counts
// the quantized bytes read plus the bytes written; items_per_second counts elements.
//   lazyllm_microbench --benchmark_filter=BM_Dequant
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"

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

}  // namespace
}  // namespace lazyllm::kernels
