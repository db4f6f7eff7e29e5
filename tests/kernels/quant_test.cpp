// Dequantization tests: every ISA variant bit-identical to the scalar reference, the reference
// against gguf-py's numpy dequantizers (golden file), fp32 <-> bf16 / fp16 rounding, and error
// reporting. Quantize/dequantize round trips: quant_round_trip_test.cpp.
#include "kernels/quant.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu.h"
#include "kernels/quant_blocks.h"
#include "support/quantize_ref.h"

namespace lazyllm {
// Readable parameter names in gtest output ("Q4_1" rather than a byte dump).
[[maybe_unused]] static void PrintTo(GgmlType type, std::ostream* os) {
    *os << ggml_type_name(type);
}
}  // namespace lazyllm

namespace lazyllm::kernels {
namespace {

using quant::block_shape;

// Plain types first, then the block formats (kAllTypes + 3 onward).
constexpr GgmlType kAllTypes[] = {GgmlType::F32,    GgmlType::F16,   GgmlType::BF16, GgmlType::Q8_0,
                                  GgmlType::Q4_0,   GgmlType::Q4_1,  GgmlType::Q5_0, GgmlType::Q5_1,
                                  GgmlType::Q3_K,   GgmlType::Q4_K,  GgmlType::Q5_K, GgmlType::Q6_K,
                                  GgmlType::IQ4_XS, GgmlType::IQ4_NL};

// The vectorized ISAs this CPU runs (kAmx dispatches to the AVX-512 code but is listed so the
// dispatch itself is covered).
std::vector<Isa> vector_isas() {
    const CpuFeatures f = detect_cpu_features();
    std::vector<Isa> out;
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kAmx}) {
        if (isa_supported(isa, f)) out.push_back(isa);
    }
    return out;
}

// Byte offsets of the fp16 scale fields in one block (ggml-common.h).
std::vector<size_t> scale_offsets(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_0:
        case GgmlType::Q5_0:
        case GgmlType::Q8_0:
        case GgmlType::IQ4_XS:
        case GgmlType::IQ4_NL:
            return {0};
        case GgmlType::Q4_1:
        case GgmlType::Q5_1:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
            return {0, 2};
        case GgmlType::Q3_K:
            return {108};
        case GgmlType::Q6_K:
            return {208};
        default:
            return {};
    }
}

using quant::f32_bits;

// Random bytes for the quant fields, finite fp16 for the scale fields (random sign, magnitude
// 2^-16..2^2, the odd zero). F16 / BF16 / F32 rows are random bit patterns, NaNs included.
std::vector<uint8_t> random_row(GgmlType type, int64_t n, std::mt19937& rng) {
    const quant::BlockShape shape = block_shape(type);
    const int64_t nb = n / shape.elems;
    std::vector<uint8_t> row(static_cast<size_t>(nb) * shape.bytes);
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& b : row) b = static_cast<uint8_t>(byte(rng));
    std::uniform_real_distribution<float> expo(-16.0f, 2.0f);
    for (int64_t b = 0; b < nb; ++b) {
        for (size_t off : scale_offsets(type)) {
            float s = std::exp2(expo(rng)) * (byte(rng) & 1 ? -1.0f : 1.0f);
            if (byte(rng) < 8) s = 0.0f;
            const uint16_t h = fp32_to_fp16(s);
            std::memcpy(row.data() + b * shape.bytes + off, &h, sizeof(h));
        }
    }
    return row;
}

// Index of the first element whose bits differ, or -1.
template <typename T>
int64_t first_mismatch(const std::vector<T>& a, const std::vector<T>& b) {
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<int64_t>(i);
    }
    return a.size() == b.size() ? -1 : static_cast<int64_t>(std::min(a.size(), b.size()));
}

std::vector<int64_t> test_lengths(GgmlType type) {
    const int64_t bs = block_shape(type).elems;
    if (bs == 1) return {1, 7, 8, 15, 16, 17, 31, 100, 1023, 1024, 1025, 3000};
    if (bs == 32) return {32, 64, 96, 32 * 37, 32 * 64};  // odd block counts hit the tails
    return {256, 512, 256 * 3, 256 * 9};
}

class QuantIsaTest : public ::testing::TestWithParam<GgmlType> {};

// The f32 output of every available variant equals the reference bit for bit: the
// variants do the same float operations in the same order (no FMA; see quant_avx2.cpp).
TEST_P(QuantIsaTest, VariantsMatchReferenceBitExact) {
    const GgmlType type = GetParam();
    std::mt19937 rng(1234 + static_cast<int>(type));
    for (int64_t n : test_lengths(type)) {
        SCOPED_TRACE("n = " + std::to_string(n));
        const std::vector<uint8_t> row = random_row(type, n, rng);
        std::vector<float> want(static_cast<size_t>(n));
        ASSERT_TRUE(ref::dequantize_row_f32(type, row.data(), want.data(), n).ok());

        // Isa::kRef through the dispatcher too.
        std::vector<Isa> isas = vector_isas();
        isas.insert(isas.begin(), Isa::kRef);
        for (Isa isa : isas) {
            SCOPED_TRACE(std::string("isa = ") + std::string(isa_name(isa)));
            std::vector<float> got(static_cast<size_t>(n), -1.0f);
            ASSERT_TRUE(dequantize_row_f32(isa, type, row.data(), got.data(), n).ok());
            const int64_t bad = first_mismatch(got, want);
            EXPECT_EQ(bad, -1) << "f32 element " << bad << ": got bits " << std::hex
                               << (bad >= 0 ? f32_bits(got[bad]) : 0) << " want "
                               << (bad >= 0 ? f32_bits(want[bad]) : 0);
        }
    }
}

// A row at an odd address (a GGUF whose general.alignment is 1 can place a tensor there)
// dequantizes as the same bytes aligned, on the reference and every variant.
TEST_P(QuantIsaTest, UnalignedRowEqualsAligned) {
    const GgmlType type = GetParam();
    std::mt19937 rng(77 + static_cast<int>(type));
    const int64_t n = 4 * block_shape(type).elems + (block_shape(type).elems == 1 ? 3 : 0);
    const std::vector<uint8_t> row = random_row(type, n, rng);
    std::vector<uint8_t> shifted(row.size() + 1);
    std::memcpy(shifted.data() + 1, row.data(), row.size());
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    ASSERT_TRUE(ref::dequantize_row_f32(type, row.data(), want.data(), n).ok());
    ASSERT_TRUE(ref::dequantize_row_f32(type, shifted.data() + 1, got.data(), n).ok());
    EXPECT_EQ(first_mismatch(got, want), -1) << "ref";
    for (Isa isa : vector_isas()) {
        std::fill(got.begin(), got.end(), -1.0f);
        ASSERT_TRUE(dequantize_row_f32(isa, type, shifted.data() + 1, got.data(), n).ok());
        EXPECT_EQ(first_mismatch(got, want), -1) << isa_name(isa);
    }
}

// The quant formats' fp16 scale decode must agree with F16C on NaN / inf / subnormal scales too
// (real files should not carry them, but the variants must not diverge if one does).
class QuantScaleTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(QuantScaleTest, NonFiniteScalesMatchReference) {
    const GgmlType type = GetParam();
    const std::vector<size_t> offsets = scale_offsets(type);
    ASSERT_FALSE(offsets.empty());
    std::mt19937 rng(99);
    const int64_t n = 4 * block_shape(type).elems;
    std::vector<uint8_t> row = random_row(type, n, rng);
    const uint16_t specials[] = {0x7c00, 0xfc00, 0x7e01, 0x7c01, 0x0001, 0x83ff};
    for (int64_t b = 0; b < 4; ++b) {
        const uint16_t h = specials[(b + 2) % 6];
        std::memcpy(row.data() + b * block_shape(type).bytes + offsets[0], &h, sizeof(h));
    }
    std::vector<float> want(static_cast<size_t>(n));
    ASSERT_TRUE(ref::dequantize_row_f32(type, row.data(), want.data(), n).ok());
    for (Isa isa : vector_isas()) {
        std::vector<float> got(static_cast<size_t>(n));
        ASSERT_TRUE(dequantize_row_f32(isa, type, row.data(), got.data(), n).ok());
        EXPECT_EQ(first_mismatch(got, want), -1) << isa_name(isa);
    }
}

INSTANTIATE_TEST_SUITE_P(QuantAllTypes, QuantIsaTest, ::testing::ValuesIn(kAllTypes),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                             return std::string(ggml_type_name(info.param));
                         });
INSTANTIATE_TEST_SUITE_P(QuantBlockTypes, QuantScaleTest,
                         ::testing::ValuesIn(std::begin(kAllTypes) + 3, std::end(kAllTypes)),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                             return std::string(ggml_type_name(info.param));
                         });

// Every fp16 bit pattern (NaNs included) through the F16 row converters, and every bf16 one.
TEST(QuantIsa, ExhaustiveHalfAndBf16Rows) {
    std::vector<uint16_t> all(65536);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
    for (GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
        std::vector<float> want(all.size());
        ASSERT_TRUE(ref::dequantize_row_f32(type, all.data(), want.data(), 65536).ok());
        for (Isa isa : vector_isas()) {
            std::vector<float> got(all.size());
            ASSERT_TRUE(dequantize_row_f32(isa, type, all.data(), got.data(), 65536).ok());
            EXPECT_EQ(first_mismatch(got, want), -1)
                << ggml_type_name(type) << " " << isa_name(isa);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Golden: gguf-py (scripts/golden_quant.py) decodes the same bytes.

std::vector<uint8_t> from_hex(const std::string& hex) {
    std::vector<uint8_t> out(hex.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) {
        out[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    }
    return out;
}

template <typename T>
std::vector<T> from_hex_as(const std::string& hex) {
    const std::vector<uint8_t> bytes = from_hex(hex);
    std::vector<T> out(bytes.size() / sizeof(T));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
}

nlohmann::json load_golden() {
    const std::string path = std::string(LAZYLLM_TEST_GOLDEN_DIR) + "/quant_golden.json";
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << "missing " << path << " (scripts/golden_quant.py writes it)";
    if (!in.good()) return {};
    return nlohmann::json::parse(in);
}

// numpy does the same single-rounding float32 products and sums as ggml's scalar code, so the
// match is exact, not approximate.
TEST(QuantGolden, ReferenceMatchesGgufPy) {
    const nlohmann::json golden = load_golden();
    ASSERT_TRUE(golden.contains("dequant"));
    int n_cases = 0;
    for (const nlohmann::json& c : golden["dequant"]) {
        const auto type = static_cast<GgmlType>(c["type_id"].get<uint32_t>());
        SCOPED_TRACE(c["type"].get<std::string>());
        ASSERT_EQ(std::string(ggml_type_name(type)), c["type"].get<std::string>());
        const int64_t n = c["n"].get<int64_t>();
        const std::vector<uint8_t> input = from_hex(c["input_hex"].get<std::string>());
        const std::vector<float> want =
            from_hex_as<float>(c["expected_f32_hex"].get<std::string>());
        ASSERT_EQ(static_cast<int64_t>(want.size()), n);
        ASSERT_EQ(input.size(),
                  static_cast<size_t>(n / block_shape(type).elems) * block_shape(type).bytes);
        std::vector<Isa> isas = vector_isas();
        isas.insert(isas.begin(), Isa::kRef);
        for (Isa isa : isas) {
            std::vector<float> got(static_cast<size_t>(n));
            ASSERT_TRUE(dequantize_row_f32(isa, type, input.data(), got.data(), n).ok());
            const int64_t bad = first_mismatch(got, want);
            EXPECT_EQ(bad, -1) << isa_name(isa) << " element " << bad << ": got "
                               << (bad >= 0 ? got[bad] : 0.0f) << " want "
                               << (bad >= 0 ? want[bad] : 0.0f);
        }
        ++n_cases;
    }
    EXPECT_EQ(n_cases, 14);  // every type quant.h supports
}

TEST(QuantGolden, RoundingMatchesGgufPyAndNumpy) {
    const nlohmann::json golden = load_golden();
    ASSERT_TRUE(golden.contains("fp32_to_bf16"));
    {
        const auto in = from_hex_as<float>(golden["fp32_to_bf16"]["input_f32_hex"]);
        const auto want = from_hex_as<uint16_t>(golden["fp32_to_bf16"]["expected_u16_hex"]);
        ASSERT_EQ(in.size(), want.size());
        for (size_t i = 0; i < in.size(); ++i) {
            EXPECT_EQ(fp32_to_bf16(in[i]), want[i]) << std::hex << "fp32 bits " << f32_bits(in[i]);
        }
    }
    {
        const auto in = from_hex_as<float>(golden["fp32_to_fp16"]["input_f32_hex"]);
        const auto want = from_hex_as<uint16_t>(golden["fp32_to_fp16"]["expected_u16_hex"]);
        ASSERT_EQ(in.size(), want.size());
        for (size_t i = 0; i < in.size(); ++i) {
            EXPECT_EQ(fp32_to_fp16(in[i]), want[i]) << std::hex << "fp32 bits " << f32_bits(in[i]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Conversions.

TEST(QuantConvert, Bf16RoundToNearestEven) {
    auto from_bits = [](uint32_t u) { return quant::bits_f32(u); };
    EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
    EXPECT_EQ(fp32_to_bf16(from_bits(0x3f808000)), 0x3f80);  // tie, even below: down
    EXPECT_EQ(fp32_to_bf16(from_bits(0x3f818000)), 0x3f82);  // tie, odd below: up
    EXPECT_EQ(fp32_to_bf16(from_bits(0x3f808001)), 0x3f81);  // above the tie: up
    EXPECT_EQ(fp32_to_bf16(from_bits(0x3f807fff)), 0x3f80);  // below the tie: down
    EXPECT_EQ(fp32_to_bf16(from_bits(0xbf818000)), 0xbf82);  // sign does not change rounding
    EXPECT_EQ(fp32_to_bf16(from_bits(0x7f7fffff)), 0x7f80);  // largest float rounds to inf
    EXPECT_EQ(fp32_to_bf16(INFINITY), 0x7f80);
    EXPECT_EQ(fp32_to_bf16(-INFINITY), 0xff80);
    EXPECT_EQ(fp32_to_bf16(-0.0f), 0x8000);
    // Subnormals round (not flushed): 0x00018000 is a tie above odd 0x0001.
    EXPECT_EQ(fp32_to_bf16(from_bits(0x00018000)), 0x0002);
    EXPECT_EQ(fp32_to_bf16(from_bits(0x00008000)), 0x0000);
    EXPECT_EQ(fp32_to_bf16(from_bits(0x00008001)), 0x0001);
    EXPECT_EQ(fp32_to_bf16(from_bits(0x007fffff)), 0x0080);  // rounds up to the smallest normal
    // NaN stays NaN and comes out quiet, even when rounding would have carried into inf.
    EXPECT_EQ(fp32_to_bf16(from_bits(0x7f800001)), 0x7fc0);
    EXPECT_EQ(fp32_to_bf16(from_bits(0xffffffff)), 0xffff);
    EXPECT_EQ(fp32_to_bf16(from_bits(0x7fc00000)), 0x7fc0);
    EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(NAN))));
    // bf16 -> fp32 is exact for every pattern.
    for (uint32_t h = 0; h < 65536; ++h) {
        ASSERT_EQ(f32_bits(bf16_to_fp32(static_cast<bf16_t>(h))), h << 16);
    }
}

__attribute__((target("f16c"))) uint16_t hw_fp32_to_fp16(float x) {
    return static_cast<uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float hw_fp16_to_fp32(uint16_t h) { return _cvtsh_ss(h); }

// The scalar fp16 converters equal F16C: all 65536 halves, and every 509th fp32 pattern.
TEST(QuantConvert, Fp16MatchesF16c) {
    if (!detect_cpu_features().f16c) GTEST_SKIP() << "no F16C";
    for (uint32_t h = 0; h < 65536; ++h) {
        ASSERT_EQ(f32_bits(fp16_to_fp32(static_cast<uint16_t>(h))),
                  f32_bits(hw_fp16_to_fp32(static_cast<uint16_t>(h))))
            << std::hex << "half " << h;
    }
    for (uint64_t u = 0; u < (1ull << 32); u += 509) {
        const float x = quant::bits_f32(static_cast<uint32_t>(u));
        ASSERT_EQ(fp32_to_fp16(x), hw_fp32_to_fp16(x)) << std::hex << "fp32 bits " << u;
    }
}

TEST(QuantConvert, Fp16RoundTripsEveryHalf) {
    for (uint32_t h = 0; h < 65536; ++h) {
        const float x = fp16_to_fp32(static_cast<uint16_t>(h));
        if (std::isnan(x)) {
            const uint16_t back = fp32_to_fp16(x);
            EXPECT_TRUE((back & 0x7c00) == 0x7c00 && (back & 0x3ff) != 0) << std::hex << h;
            continue;
        }
        ASSERT_EQ(fp32_to_fp16(x), h) << std::hex << "half " << h;
    }
}

// ---------------------------------------------------------------------------------------------
// Bad input.

TEST(QuantErrors, UnsupportedTypeNamesIt) {
    float out[256];
    const uint8_t in[1024] = {};
    for (GgmlType type : {GgmlType::Q2_K, GgmlType::I32, GgmlType::Q8_1, GgmlType::F64}) {
        const std::string name(ggml_type_name(type));
        Status s = dequantize_row_f32(Isa::kRef, type, in, out, 256);
        ASSERT_FALSE(s.ok()) << name;
        EXPECT_EQ(s.error().code(), ErrorCode::kUnsupported);
        EXPECT_NE(s.error().message().find(name), std::string::npos) << s.error().message();
        s = ref::dequantize_row_f32(type, in, out, 256);
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.error().message().find(name), std::string::npos) << s.error().message();
    }
    // A number the spec does not define (hostile file) is reported by number.
    Status s = dequantize_row_f32(Isa::kRef, static_cast<GgmlType>(77), in, out, 256);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message().find("77"), std::string::npos) << s.error().message();
}

TEST(QuantErrors, LengthNotMultipleOfBlockNamesTypeAndN) {
    std::vector<uint8_t> in(4096);
    std::vector<float> out(1024);
    struct Case {
        GgmlType type;
        int64_t n;
    };
    for (Case c :
         {Case{GgmlType::Q4_1, 33}, Case{GgmlType::Q8_0, 48}, Case{GgmlType::Q4_K, 288},
          Case{GgmlType::Q6_K, 100}, Case{GgmlType::Q3_K, 300}, Case{GgmlType::IQ4_XS, 128},
          Case{GgmlType::IQ4_NL, 40}, Case{GgmlType::F16, -2}}) {
        const std::string name(ggml_type_name(c.type));
        const std::string n = std::to_string(c.n);
        std::vector<Isa> isas = vector_isas();
        isas.insert(isas.begin(), Isa::kRef);
        for (Isa isa : isas) {
            Status s = dequantize_row_f32(isa, c.type, in.data(), out.data(), c.n);
            ASSERT_FALSE(s.ok()) << name << " n=" << n;
            EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
            EXPECT_NE(s.error().message().find(name), std::string::npos) << s.error().message();
            EXPECT_NE(s.error().message().find(n), std::string::npos) << s.error().message();
        }
        Status s = ref::dequantize_row_f32(c.type, in.data(), out.data(), c.n);
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.error().message().find(n), std::string::npos) << s.error().message();
    }
    // Zero elements is a valid empty row.
    EXPECT_TRUE(dequantize_row_f32(Isa::kRef, GgmlType::Q4_K, nullptr, nullptr, 0).ok());
}

TEST(QuantErrors, IsaTheCpuLacksIsAnError) {
    const CpuFeatures f = detect_cpu_features();
    float out[32];
    const uint8_t in[64] = {};
    int n_checked = 0;
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kAmx}) {
        if (isa_supported(isa, f)) continue;
        const Status s = dequantize_row_f32(isa, GgmlType::Q8_0, in, out, 32);
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.error().message().find(isa_name(isa)), std::string::npos);
        ++n_checked;
    }
    if (n_checked == 0) GTEST_SKIP() << "this CPU supports every ISA";
}

// The block table the kernels use agrees with the GGUF type traits.
TEST(QuantErrors, BlockShapesMatchTypeTraits) {
    for (GgmlType type : kAllTypes) {
        const auto traits = ggml_type_traits(static_cast<uint32_t>(type));
        ASSERT_TRUE(traits.has_value());
        EXPECT_EQ(traits->block_size, block_shape(type).elems) << traits->name;
        EXPECT_EQ(traits->type_size, block_shape(type).bytes) << traits->name;
        EXPECT_TRUE(traits->dequantizable) << traits->name;
    }
}

}  // namespace
}  // namespace lazyllm::kernels
