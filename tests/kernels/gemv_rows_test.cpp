// gemv_rows_f32: one fp32 row against a matrix kept as GGUF blocks. Checked against the plain
// product (the reference dequantizer's rows summed in double) within fp32 rounding, and bit for
// bit across ISAs, thread counts, workspaces and misaligned block data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/workspace.h"
#include "support/quantize_ref.h"

namespace lazyllm::kernels {
namespace {

constexpr GgmlType kGemvTypes[] = {
    GgmlType::F32,  GgmlType::F16,  GgmlType::BF16,   GgmlType::Q8_0,  GgmlType::Q4_0,
    GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,   GgmlType::Q3_K,  GgmlType::Q4_K,
    GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS, GgmlType::IQ4_NL};

// A random [n_out, n_in] matrix in `type` (the reference quantizer's blocks), the fp32 values
// those blocks hold, and a random activation row.
struct GemvMatrix {
    std::vector<uint8_t> blocks;
    std::vector<float> w, x;
    size_t row_bytes = 0;

    GemvMatrix(GgmlType type, int64_t n_out, int64_t n_in, uint32_t seed) {
        std::mt19937 rng(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> src(static_cast<size_t>(n_in));
        w.resize(static_cast<size_t>(n_out * n_in));
        for (int64_t r = 0; r < n_out; ++r) {
            for (float& v : src) v = normal(rng);
            const std::vector<uint8_t> q = testing::quantize_ref(type, src.data(), n_in);
            row_bytes = q.size();
            blocks.insert(blocks.end(), q.begin(), q.end());
            EXPECT_TRUE(ref::dequantize_row_f32(type, q.data(), w.data() + r * n_in, n_in).ok());
        }
        x.resize(static_cast<size_t>(n_in));
        for (float& v : x) v = normal(rng);
    }
};

std::vector<Isa> gemv_isas() {
    const CpuFeatures f = detect_cpu_features();
    std::vector<Isa> out = {Isa::kRef};
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kAmx}) {
        if (isa_supported(isa, f)) out.push_back(isa);
    }
    return out;
}

std::vector<float> run_gemv(Isa isa, int threads, GgmlType type, const void* data, int64_t n_out,
                            int64_t n_in, const std::vector<float>& x, Workspace* ws = nullptr) {
    KernelContext ctx;
    ctx.isa = isa;
    ctx.n_threads = threads;
    ctx.ws = ws;
    std::vector<float> y(static_cast<size_t>(n_out), -1.0f);
    const Status st = gemv_rows_f32(ctx, {type, data, n_out, n_in}, x.data(), y.data());
    EXPECT_TRUE(st.ok()) << st.error().message();
    return y;
}

int64_t gemv_block(GgmlType type) { return quant::block_shape(type).elems; }

// Every type, row counts around the 4-row chunks, widths around the 16 lanes: each y[r] within
// fp32 rounding of the exact product of the dequantized row, and every ISA and thread count
// giving the reference's bits.
TEST(GemvRows, MatchesThePlainProductOnEveryIsaBitForBit) {
    for (GgmlType type : kGemvTypes) {
        const int64_t bs = gemv_block(type);
        const std::vector<std::pair<int64_t, int64_t>> shapes =
            bs == 1 ? std::vector<std::pair<int64_t, int64_t>>{{1, 1},
                                                               {3, 7},
                                                               {5, 16},
                                                               {9, 100},
                                                               {37, 640}}
                    : std::vector<std::pair<int64_t, int64_t>>{
                          {1, bs}, {2, 3 * bs}, {7, 2 * bs}, {37, bs == 32 ? 640 : 768}};
        for (const auto& [n_out, n_in] : shapes) {
            SCOPED_TRACE(std::string(ggml_type_name(type)) + " " + std::to_string(n_out) + "x" +
                         std::to_string(n_in));
            const GemvMatrix m(type, n_out, n_in, static_cast<uint32_t>(n_out * 131 + n_in));
            const std::vector<float> want =
                run_gemv(Isa::kRef, 1, type, m.blocks.data(), n_out, n_in, m.x);
            for (int64_t r = 0; r < n_out; ++r) {
                double exact = 0.0, magnitude = 0.0;
                for (int64_t i = 0; i < n_in; ++i) {
                    const double p = static_cast<double>(m.w[r * n_in + i]) * m.x[i];
                    exact += p;
                    magnitude += std::fabs(p);
                }
                EXPECT_NEAR(want[r], exact, 1e-6 * magnitude + 1e-30) << "row " << r;
            }
            for (Isa isa : gemv_isas()) {
                for (int threads : {1, 2, 3}) {
                    const std::vector<float> got =
                        run_gemv(isa, threads, type, m.blocks.data(), n_out, n_in, m.x);
                    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
                        << isa_name(isa) << ", " << threads << " threads";
                }
            }
        }
    }
}

// Blocks at an odd address (a GGUF row need not be aligned for its fp16 scales) and a
// workspace reused across shapes give the same bits.
TEST(GemvRows, MisalignedBlocksAndReusedWorkspace) {
    Workspace ws;
    for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q6_K, GgmlType::F16}) {
        const int64_t n_in = gemv_block(type) == 1 ? 333 : 2 * 256, n_out = 11;
        const GemvMatrix m(type, n_out, n_in, 7);
        std::vector<uint8_t> shifted(m.blocks.size() + 1);
        std::memcpy(shifted.data() + 1, m.blocks.data(), m.blocks.size());
        for (Isa isa : gemv_isas()) {
            const std::vector<float> want =
                run_gemv(isa, 2, type, m.blocks.data(), n_out, n_in, m.x);
            EXPECT_EQ(run_gemv(isa, 2, type, shifted.data() + 1, n_out, n_in, m.x, &ws), want)
                << ggml_type_name(type) << " " << isa_name(isa);
            EXPECT_EQ(run_gemv(isa, 1, type, m.blocks.data(), n_out, n_in, m.x, &ws), want)
                << ggml_type_name(type) << " " << isa_name(isa);
        }
    }
}

TEST(GemvRows, ErrorsNameTheTypeAndTheLength) {
    const std::vector<uint8_t> data(4096);
    const std::vector<float> x(512, 1.0f);
    std::vector<float> y(4);
    KernelContext ctx;
    const Status bad_type =
        gemv_rows_f32(ctx, {GgmlType::Q2_K, data.data(), 2, 256}, x.data(), y.data());
    ASSERT_FALSE(bad_type.ok());
    EXPECT_NE(bad_type.error().message().find("Q2_K"), std::string::npos)
        << bad_type.error().message();
    const Status bad_len =
        gemv_rows_f32(ctx, {GgmlType::Q8_0, data.data(), 2, 48}, x.data(), y.data());
    ASSERT_FALSE(bad_len.ok());
    EXPECT_NE(bad_len.error().message().find("48"), std::string::npos) << bad_len.error().message();
    const Status null_x =
        gemv_rows_f32(ctx, {GgmlType::Q8_0, data.data(), 2, 64}, nullptr, y.data());
    EXPECT_FALSE(null_x.ok());
    EXPECT_TRUE(gemv_rows_f32(ctx, {GgmlType::Q8_0, data.data(), 0, 64}, x.data(), y.data()).ok());
}

}  // namespace
}  // namespace lazyllm::kernels
