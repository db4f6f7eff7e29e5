#include "lazyllm/ggml_type.h"

#include <gtest/gtest.h>

namespace lazyllm {
namespace {

struct Expected {
    GgmlType type;
    uint32_t number;
    const char* name;
    int64_t block_size;
    size_t type_size;
    bool dequantizable;
};

// Numbers from ggml.h (enum ggml_type); sizes from ggml-common.h's block_* static_asserts.
constexpr Expected kExpected[] = {
    {GgmlType::F32, 0, "F32", 1, 4, true},
    {GgmlType::F16, 1, "F16", 1, 2, true},
    {GgmlType::Q4_0, 2, "Q4_0", 32, 18, true},
    {GgmlType::Q4_1, 3, "Q4_1", 32, 20, true},
    {GgmlType::Q5_0, 6, "Q5_0", 32, 22, true},
    {GgmlType::Q5_1, 7, "Q5_1", 32, 24, true},
    {GgmlType::Q8_0, 8, "Q8_0", 32, 34, true},
    {GgmlType::Q8_1, 9, "Q8_1", 32, 36, false},
    {GgmlType::Q2_K, 10, "Q2_K", 256, 84, false},
    {GgmlType::Q3_K, 11, "Q3_K", 256, 110, true},
    {GgmlType::Q4_K, 12, "Q4_K", 256, 144, true},
    {GgmlType::Q5_K, 13, "Q5_K", 256, 176, true},
    {GgmlType::Q6_K, 14, "Q6_K", 256, 210, true},
    {GgmlType::Q8_K, 15, "Q8_K", 256, 292, false},
    {GgmlType::I8, 24, "I8", 1, 1, false},
    {GgmlType::I16, 25, "I16", 1, 2, false},
    {GgmlType::I32, 26, "I32", 1, 4, false},
    {GgmlType::I64, 27, "I64", 1, 8, false},
    {GgmlType::F64, 28, "F64", 1, 8, false},
    {GgmlType::BF16, 30, "BF16", 1, 2, true},
    {GgmlType::IQ4_XS, 23, "IQ4_XS", 256, 136, true},
    {GgmlType::IQ4_NL, 20, "IQ4_NL", 32, 18, true},
};

TEST(GgufTypeTraits, EveryEnumValueHasGgmlSizes) {
    for (const Expected& e : kExpected) {
        SCOPED_TRACE(e.name);
        EXPECT_EQ(static_cast<uint32_t>(e.type), e.number);
        auto t = ggml_type_traits(e.number);
        ASSERT_TRUE(t.has_value());
        EXPECT_EQ(t->name, e.name);
        EXPECT_EQ(t->block_size, e.block_size);
        EXPECT_EQ(t->type_size, e.type_size);
        EXPECT_EQ(t->dequantizable, e.dequantizable);
        EXPECT_EQ(ggml_type_name(e.type), e.name);
    }
}

TEST(GgufTypeTraits, UnknownNumbersHaveNoTraits) {
    // 4, 5: removed Q4_2/Q4_3; 16..19, 21, 22, 29: IQ formats (IQ4_NL, 20, and IQ4_XS, 23, are
    // known); 31+: not in lazyllm's enum.
    for (uint32_t n : {4u, 5u, 16u, 17u, 19u, 21u, 22u, 29u, 31u, 34u, 39u, 1000u, 0xFFFFFFFFu}) {
        EXPECT_FALSE(ggml_type_traits(n).has_value()) << n;
    }
    EXPECT_EQ(ggml_type_name(static_cast<GgmlType>(99)), "unknown");
}

TEST(GgufTypeTraits, CountOfKnownTypesMatchesEnum) {
    int known = 0;
    for (uint32_t n = 0; n < 64; ++n) known += ggml_type_traits(n).has_value() ? 1 : 0;
    EXPECT_EQ(known, static_cast<int>(std::size(kExpected)));
}

}  // namespace
}  // namespace lazyllm
