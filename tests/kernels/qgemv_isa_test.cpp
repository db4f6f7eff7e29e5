// QuantLinear's AVX2 kernels forced on any CPU that has AVX2 (so they also run on AVX-512
// machines), bit-identical to the scalar reference on every decode row count, ragged shapes and
// the K-quants; and both fast kernel sets on raw GGML blocks with extreme quants and
// activations, where an AVX2 int16 saturation or an overflow would show.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu.h"
#include "kernels/qgemv.h"
#include "kernels/qgemv_fixture.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "support/build.h"

namespace lazyllm::kernels {
namespace {

using namespace qgemv_test;  // NOLINT(google-build-using-namespace): the fixture's helpers
using test::random_vec;

// ---- AVX2 kernels (forced through ctx.isa = kAvx2, so they also run on AVX-512 machines) ----

bool have_avx2() { return isa_supported(Isa::kAvx2, detect_cpu_features()); }
KernelContext avx2_ctx(int n_threads) { return {Isa::kAvx2, n_threads}; }

void expect_avx2_matches_ref(GgmlType type, const std::vector<uint8_t>& blocks, const GemvShape& s,
                             const std::vector<float>& x, uint32_t seed) {
    expect_isa_matches_ref(Isa::kAvx2, type, blocks, s, x, seed);
}

TEST(QuantLinearAvx2, UsedWhereSupported) {
    if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
    EXPECT_TRUE(QuantLinear::has_fast_path(avx2_ctx(1)));
    EXPECT_FALSE(QuantLinear::has_fast_path(kRefCtx));
}

// Every decode row count 1..8 and beyond (passes of up to 4 rows, both halves of a group
// together or apart), ragged n_out (a group's second half partly or wholly padding), strides,
// bias and accumulation; 2 threads on the large shapes.
TEST(QuantLinearAvx2, MatchesReferenceBitExact) {
    if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
    std::vector<GemvShape> cases;
    for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16}) {
        cases.push_back({m, 37, 96, 0, 0, false, false});
        cases.push_back({m, 16, 32, 3, 5, true, false});
        cases.push_back({m, 53, 64, 32, 1, true, true});
        cases.push_back({m, 7, 160, 0, 2, false, true});
        cases.push_back({m, 24, 288, 8, 0, true, true});
    }
    cases.push_back({1, 1000, 320, 0, 0, true, false});  // runs on 2 threads
    cases.push_back({3, 1000, 320, 16, 3, false, true});
    cases.push_back({8, 1003, 320, 0, 1, true, true});
    uint32_t seed = 1300;
    for (GgmlType type : kTypes) {
        for (const GemvShape& s : cases) {
            seed += 7;
            const QuantMatrix wq = make_matrix(type, s.n_out, s.n_in, seed);
            const auto x = make_x(s.m, s.ldx(), s.n_in, seed + 2);
            expect_avx2_matches_ref(type, wq.blocks, s, x, seed);
        }
    }
    for (GgmlType type : kKTypes) {
        for (int64_t m : {1, 2, 3, 4, 5, 8, 9}) {
            for (const GemvShape& s : {GemvShape{m, 37, 256, 0, 0, false, false},
                                       GemvShape{m, 24, 512, 8, 3, true, true}}) {
                seed += 7;
                const QuantMatrix wq = make_matrix(type, s.n_out, s.n_in, seed);
                const auto x = make_x(s.m, s.ldx(), s.n_in, seed + 2);
                expect_avx2_matches_ref(type, wq.blocks, s, x, seed);
            }
        }
    }
}

// Raw GGML blocks with quants at the extremes (all maximal, all minimal, mixed), scale 0.01
// and min -0.5: u = 15 (Q4), 31 (Q5), 255 (Q8_0 q = 127) against activations at +-127 make
// the largest int16 partial sums the AVX2 kernels form (a saturation or overflow would show),
// and every fifth-bit pattern of the 5-bit planes.
std::vector<uint8_t> extreme_blocks(GgmlType type, int64_t n_out, int64_t n_in, uint32_t seed) {
    const quant::BlockShape shape = quant::block_shape(type);
    const bool q8 = type == GgmlType::Q8_0;
    const bool has_min = type == GgmlType::Q4_1 || type == GgmlType::Q5_1;
    const uint8_t hi = q8 ? 0x7F : 0xFF, lo = q8 ? 0x80 : 0x00;
    const uint8_t mixed[] = {hi, lo, 0x0F, 0xF0, 0x7F, 0x80, 0x81, 0xFF, 0x00};
    std::mt19937 rng(seed);
    const int64_t row_blocks = n_in / static_cast<int64_t>(shape.elems);
    std::vector<uint8_t> out(static_cast<size_t>(n_out * row_blocks) * shape.bytes);
    const uint16_t d16 = fp32_to_fp16(0.01f), m16 = fp32_to_fp16(-0.5f);
    for (int64_t row = 0; row < n_out; ++row) {
        for (int64_t b = 0; b < row_blocks; ++b) {
            uint8_t* blk = out.data() + static_cast<size_t>(row * row_blocks + b) * shape.bytes;
            for (size_t i = 0; i < shape.bytes; ++i) {
                switch ((row + b) % 4) {
                    case 0:
                        blk[i] = hi;
                        break;
                    case 1:
                        blk[i] = lo;
                        break;
                    case 2:
                        blk[i] = mixed[rng() % std::size(mixed)];
                        break;
                    default:
                        blk[i] = static_cast<uint8_t>(rng());
                        break;
                }
            }
            std::memcpy(blk, &d16, 2);
            if (has_min) std::memcpy(blk + 2, &m16, 2);
        }
    }
    return out;
}

// Activation blocks that quantize to all +127, all -127, alternating +-127, one +-amax among
// random values, and random.
std::vector<float> extreme_x(int64_t m, int64_t ldx, int64_t n_in, uint32_t seed) {
    auto x = random_vec(m * ldx, seed);
    for (int64_t r = 0; r < m; ++r) {
        for (int64_t b = 0; b < n_in / 32; ++b) {
            float* xb = x.data() + r * ldx + b * 32;
            for (int j = 0; j < 32; ++j) {
                switch ((r + 2 * b) % 5) {
                    case 0:
                        xb[j] = 3.0f;
                        break;
                    case 1:
                        xb[j] = -3.0f;
                        break;
                    case 2:
                        xb[j] = j % 2 ? 3.0f : -3.0f;
                        break;
                    case 3:
                        xb[j] = j == 5 ? (r % 2 ? -4.0f : 4.0f) : xb[j];
                        break;
                    default:
                        break;
                }
            }
        }
    }
    return x;
}

void expect_extremes_match_ref(Isa isa) {
    uint32_t seed = 1700;
    for (GgmlType type : kTypes) {
        for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 11}) {
            for (const GemvShape& s : {GemvShape{m, 37, 160, 0, 0, false, false},
                                       GemvShape{m, 64, 96, 4, 3, true, true}}) {
                seed += 7;
                const auto blocks = extreme_blocks(type, s.n_out, s.n_in, seed);
                const auto x = extreme_x(s.m, s.ldx(), s.n_in, seed + 2);
                expect_isa_matches_ref(isa, type, blocks, s, x, seed);
            }
        }
    }
}

bool have_vnni() {
    const CpuFeatures f = detect_cpu_features();
    return isa_supported(Isa::kAvx512, f) && f.avx512vnni;
}

// n_out x n_in weights of 256-element blocks of type Block, block i filled by
// fill(block, i % 4, rng): the four kinds of extremes below, cycling.
template <typename Block, typename Fill>
std::vector<uint8_t> extreme_blocks(int64_t n_out, int64_t n_in, uint32_t seed, Fill fill) {
    std::mt19937 rng(seed);
    const int64_t n_blocks = n_out * n_in / 256;
    std::vector<uint8_t> out(static_cast<size_t>(n_blocks) * sizeof(Block));
    for (int64_t i = 0; i < n_blocks; ++i) {
        Block b;
        fill(b, static_cast<int>(i % 4), rng);
        b.d = fp32_to_fp16(0.001f);
        std::memcpy(out.data() + static_cast<size_t>(i) * sizeof(b), &b, sizeof(b));
    }
    return out;
}

// A byte for kind 0 (all bits set), 1 (none) or 2-3 (random).
uint8_t extreme_byte(int kind, std::mt19937& rng) {
    return kind == 0 ? 0xFF : kind == 1 ? 0x00 : static_cast<uint8_t>(rng());
}

// Q6_K blocks at the extremes: quants all 63, all 0 or mixed (u * qx at its largest, with
// u - 32 at both ends) and half-block scales 127, -128 or mixed, against the extreme
// activations: the largest int16 and int32 sums of block_sums_halves.
std::vector<uint8_t> extreme_q6_k(int64_t n_out, int64_t n_in, uint32_t seed) {
    return extreme_blocks<quant::BlockQ6K>(n_out, n_in, seed, [](auto& b, int kind, auto& rng) {
        for (uint8_t& v : b.ql) v = extreme_byte(kind, rng);
        for (uint8_t& v : b.qh) v = extreme_byte(kind, rng);
        for (int j = 0; j < 16; ++j) {
            b.scales[j] = kind == 3 ? static_cast<int8_t>(rng()) : (j + kind) % 2 ? -128 : 127;
        }
    });
}

// Q3_K blocks at the extremes: quants all 3 (low bits 3, high bit set), all -4 or mixed, and
// 6-bit scales 63 or 0 (multipliers 31 and -32) or mixed.
std::vector<uint8_t> extreme_q3_k(int64_t n_out, int64_t n_in, uint32_t seed) {
    return extreme_blocks<quant::BlockQ3K>(n_out, n_in, seed, [](auto& b, int kind, auto& rng) {
        for (uint8_t& v : b.qs) v = extreme_byte(kind, rng);
        for (uint8_t& v : b.hmask) v = extreme_byte(kind, rng);
        for (uint8_t& v : b.scales) v = extreme_byte(kind == 2 ? 0 : kind, rng);
    });
}

// IQ4_XS blocks at the extremes: indexes all 15 (grid value 113, u = 241: the largest
// u * qx), all 0 (-127) or mixed, and 6-bit scales 63 or 0 (multipliers 31 and -32) or mixed.
std::vector<uint8_t> extreme_iq4_xs(int64_t n_out, int64_t n_in, uint32_t seed) {
    return extreme_blocks<quant::BlockIQ4XS>(n_out, n_in, seed, [](auto& b, int kind, auto& rng) {
        for (uint8_t& v : b.qs) v = extreme_byte(kind, rng);
        const int scale_kind = kind == 2 ? 0 : kind;
        for (uint8_t& v : b.scales_l) v = extreme_byte(scale_kind, rng);
        b.scales_h = static_cast<uint16_t>(extreme_byte(scale_kind, rng) << 8 |
                                           extreme_byte(scale_kind, rng));
    });
}

// Every row count of a VNNI pass (1-8, then a second pass) and of an AVX2 one (1-4), groups
// taken 4, 2 or 1 at a time (n_out 64 and 37: whole and ragged), for both half-scale formats
// and IQ4_XS.
void expect_half_scale_extremes_match_ref(Isa isa) {
    uint32_t seed = 1900;
    for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13}) {
        for (const GemvShape& s :
             {GemvShape{m, 37, 256, 0, 0, false, false}, GemvShape{m, 64, 512, 4, 3, true, true}}) {
            seed += 7;
            const auto x = extreme_x(s.m, s.ldx(), s.n_in, seed + 2);
            expect_isa_matches_ref(isa, GgmlType::Q6_K, extreme_q6_k(s.n_out, s.n_in, seed), s, x,
                                   seed);
            expect_isa_matches_ref(isa, GgmlType::Q3_K, extreme_q3_k(s.n_out, s.n_in, seed), s, x,
                                   seed);
            expect_isa_matches_ref(isa, GgmlType::IQ4_XS, extreme_iq4_xs(s.n_out, s.n_in, seed), s,
                                   x, seed);
        }
    }
}

TEST(QuantLinearAvx2, ExtremeValuesBitExact) {
    if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
    expect_extremes_match_ref(Isa::kAvx2);
    expect_half_scale_extremes_match_ref(Isa::kAvx2);
}

TEST(QuantLinearVnni, ExtremeValuesBitExact) {
    if (!have_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
    expect_extremes_match_ref(Isa::kAvx512);
    expect_half_scale_extremes_match_ref(Isa::kAvx512);
}

// create_from_f32 (Q8_0 requantization, |q| <= 127) through the AVX2 kernels.
TEST(QuantLinearAvx2, FromF32MatchesReferenceBitExact) {
    if (!have_avx2()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
    uint32_t seed = 2100;
    for (int64_t m : {1, 4, 8}) {
        const GemvShape s{m, 45, 192, 0, 0, true, false};
        seed += 7;
        const auto w = random_vec(s.n_out * s.n_in, seed, -2.0f, 2.0f);
        const auto bias = random_vec(s.n_out, seed + 1);
        const auto x = make_x(s.m, s.ldx(), s.n_in, seed + 2);
        const auto y0 = random_vec(s.m * s.ldy(), seed + 3);
        auto ref = QuantLinear::create_from_f32(kRefCtx, w.data(), s.n_out, s.n_in, bias.data());
        auto avx2 =
            QuantLinear::create_from_f32(avx2_ctx(1), w.data(), s.n_out, s.n_in, bias.data());
        ASSERT_TRUE(ref.ok() && avx2.ok());
        ASSERT_TRUE(avx2->uses_fast_path());
        EXPECT_EQ(run(*avx2, s, x, y0), run(*ref, s, x, y0)) << "m=" << m;
    }
}

// The QuantLinear kernel sets of this CPU: AVX2, AVX-512 VNNI.
std::vector<Isa> quant_isas() {
    std::vector<Isa> isas;
    if (have_avx2()) isas.push_back(Isa::kAvx2);
    if (have_vnni()) isas.push_back(Isa::kAvx512);
    return isas;
}

// Weights larger than the L2 chunk the kernels keep while row passes go over them (1 MiB at
// most, qgemv_isa.h; the VNNI kernels' unpacked copy of a chunk for formats under 8 bits, 64
// KiB a group here): several chunks, a ragged last group, rows in several passes and a short
// last one. The pass order must not change any output.
TEST(QuantLinear, WeightsOverSeveralChunksBitExact) {
    const std::vector<Isa> isas = quant_isas();
    if (isas.empty()) GTEST_SKIP() << "no AVX2 or AVX-512 VNNI";
    uint32_t seed = 2300;
    // Q8_0 at 4096 inputs: 36 KiB a group, 73 groups (2.6 MiB); Q4_K: 21 KiB a group. The
    // sanitizer build takes one 8-bit and one unpacked type (the two chunk paths).
    std::vector<GgmlType> types{GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_0,
                                GgmlType::Q3_K, GgmlType::Q6_K, GgmlType::IQ4_XS};
    if (lazyllm::testing::kSanitized) types.resize(2);
    for (GgmlType type : types) {
        const GemvShape s{19, 16 * 72 + 5, 4096, 0, 3, true, true};
        seed += 7;
        const QuantMatrix wq = make_matrix(type, s.n_out, s.n_in, seed);
        const auto x = make_x(s.m, s.ldx(), s.n_in, seed + 2);
        for (Isa isa : isas) expect_isa_matches_ref(isa, type, wq.blocks, s, x, seed);
    }
}

// Row counts on both sides of forward()'s threshold for rounding the activations on every
// thread (kSplitQuantizeRows, 32): the rows are rounded before the parallel region below it,
// by the threads in parts from it on; with outlier channels too (their terms split alike).
TEST(QuantLinear, RowsAroundTheQuantizeSplitBitExact) {
    const std::vector<Isa> isas = quant_isas();
    if (isas.empty()) GTEST_SKIP() << "no AVX2 or AVX-512 VNNI";
    uint32_t seed = 2500;
    for (GgmlType type : {GgmlType::Q4_1, GgmlType::Q4_K, GgmlType::Q8_0}) {
        for (int64_t m : {15, 16, 24, 31, 32, 33, 48}) {
            const GemvShape s{m, 16 * 12 + 5, 512, 0, 2, true, m % 2 == 0};
            seed += 7;
            const QuantMatrix wq = make_matrix(type, s.n_out, s.n_in, seed);
            const auto x = make_x(s.m, s.ldx(), s.n_in, seed + 2);
            for (Isa isa : isas) {
                for (bool outliers : {false, true}) {
                    expect_isa_matches_ref(isa, type, wq.blocks, s, x, seed, outliers);
                }
            }
        }
    }
}

}  // namespace
}  // namespace lazyllm::kernels
