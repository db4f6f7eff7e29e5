#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "lazyllm/gguf.h"

namespace lazyllm {
namespace {

GgufValue scalar(GgufValueType t, decltype(GgufValue::data) d) {
    GgufValue v;
    v.type = t;
    v.data = std::move(d);
    return v;
}

GgufValue array(GgufValueType elem, decltype(GgufValue::data) d) {
    GgufValue v;
    v.type = GgufValueType::ARRAY;
    v.elem_type = elem;
    v.data = std::move(d);
    return v;
}

TEST(GgufValue, TypeNamesFollowTheSpec) {
    EXPECT_EQ(gguf_value_type_name(GgufValueType::UINT8), "UINT8");
    EXPECT_EQ(gguf_value_type_name(GgufValueType::FLOAT32), "FLOAT32");
    EXPECT_EQ(gguf_value_type_name(GgufValueType::STRING), "STRING");
    EXPECT_EQ(gguf_value_type_name(GgufValueType::ARRAY), "ARRAY");
    EXPECT_EQ(gguf_value_type_name(GgufValueType::FLOAT64), "FLOAT64");
    EXPECT_EQ(gguf_value_type_name(static_cast<GgufValueType>(77)), "UNKNOWN");
}

TEST(GgufValue, UintAccessor) {
    EXPECT_EQ(*scalar(GgufValueType::UINT32, uint64_t{30}).as_uint(), 30u);
    EXPECT_EQ(*scalar(GgufValueType::INT32, int64_t{7}).as_uint(), 7u);
    auto neg = scalar(GgufValueType::INT32, int64_t{-3}).as_uint();
    ASSERT_FALSE(neg.ok());
    EXPECT_EQ(neg.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(neg.error().message().find("-3"), std::string::npos);
    auto str = scalar(GgufValueType::STRING, std::string("x")).as_uint();
    ASSERT_FALSE(str.ok());
    EXPECT_NE(str.error().message().find("STRING"), std::string::npos);
    EXPECT_FALSE(scalar(GgufValueType::FLOAT32, 1.0).as_uint().ok());
    EXPECT_FALSE(scalar(GgufValueType::BOOL, true).as_uint().ok());
}

TEST(GgufValue, IntAccessor) {
    EXPECT_EQ(*scalar(GgufValueType::INT64, int64_t{-5}).as_int(), -5);
    EXPECT_EQ(*scalar(GgufValueType::UINT8, uint64_t{255}).as_int(), 255);
    auto big = scalar(GgufValueType::UINT64, std::numeric_limits<uint64_t>::max()).as_int();
    ASSERT_FALSE(big.ok());
    EXPECT_EQ(big.error().code(), ErrorCode::kCorrupt);
    EXPECT_FALSE(scalar(GgufValueType::FLOAT64, 2.0).as_int().ok());
}

TEST(GgufValue, FloatAccessorAcceptsIntegers) {
    EXPECT_DOUBLE_EQ(*scalar(GgufValueType::FLOAT32, 0.5).as_float(), 0.5);
    EXPECT_DOUBLE_EQ(*scalar(GgufValueType::UINT32, uint64_t{3}).as_float(), 3.0);
    EXPECT_DOUBLE_EQ(*scalar(GgufValueType::INT16, int64_t{-2}).as_float(), -2.0);
    auto b = scalar(GgufValueType::BOOL, true).as_float();
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.error().message().find("BOOL"), std::string::npos);
}

TEST(GgufValue, BoolStringAccessors) {
    EXPECT_TRUE(*scalar(GgufValueType::BOOL, true).as_bool());
    auto nb = scalar(GgufValueType::UINT8, uint64_t{1}).as_bool();
    ASSERT_FALSE(nb.ok());
    EXPECT_NE(nb.error().message().find("expected BOOL, got UINT8"), std::string::npos);
    EXPECT_EQ(*scalar(GgufValueType::STRING, std::string("gpt2")).as_string(), "gpt2");
    auto ns = array(GgufValueType::STRING, std::vector<std::string>{"a"}).as_string();
    ASSERT_FALSE(ns.ok());
    EXPECT_NE(ns.error().message().find("ARRAY of STRING"), std::string::npos);
}

TEST(GgufValue, ArrayAccessors) {
    auto strings = array(GgufValueType::STRING, std::vector<std::string>{"a", "b"});
    EXPECT_EQ(*strings.as_string_array(), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(strings.array_size(), 2u);
    EXPECT_FALSE(strings.as_float_array().ok());
    EXPECT_FALSE(strings.as_int_array().ok());

    auto ints = array(GgufValueType::INT32, std::vector<int64_t>{1, -2, 3});
    EXPECT_EQ(*ints.as_int_array(), (std::vector<int64_t>{1, -2, 3}));
    EXPECT_EQ(*ints.as_float_array(), (std::vector<double>{1.0, -2.0, 3.0}));
    EXPECT_FALSE(ints.as_string_array().ok());

    auto uints = array(GgufValueType::UINT64, std::vector<uint64_t>{1, UINT64_MAX});
    EXPECT_FALSE(uints.as_int_array().ok());
    EXPECT_EQ(array(GgufValueType::UINT8, std::vector<uint64_t>{4, 5}).as_int_array()->at(1), 5);

    auto floats = array(GgufValueType::FLOAT32, std::vector<double>{0.25});
    EXPECT_EQ(*floats.as_float_array(), (std::vector<double>{0.25}));
    EXPECT_FALSE(floats.as_int_array().ok());

    EXPECT_EQ(scalar(GgufValueType::UINT32, uint64_t{3}).array_size(), 0u);
    EXPECT_EQ(scalar(GgufValueType::STRING, std::string("abc")).array_size(), 0u);
    EXPECT_FALSE(scalar(GgufValueType::UINT32, uint64_t{3}).as_int_array().ok());
}

TEST(GgufValue, DisplayScalars) {
    EXPECT_EQ(scalar(GgufValueType::UINT32, uint64_t{576}).to_display(), "576");
    EXPECT_EQ(scalar(GgufValueType::INT32, int64_t{-1}).to_display(), "-1");
    EXPECT_EQ(scalar(GgufValueType::BOOL, false).to_display(), "false");
    // A FLOAT32 prints as a float, not as its double expansion 9.999999747378752e-06.
    EXPECT_EQ(scalar(GgufValueType::FLOAT32, double{1e-5f}).to_display(), "1e-05");
    EXPECT_EQ(scalar(GgufValueType::FLOAT64, 0.1).to_display(), "0.1");
    EXPECT_EQ(scalar(GgufValueType::STRING, std::string("llama")).to_display(), "llama");
}

TEST(GgufValue, DisplayEscapesAndTruncatesStrings) {
    EXPECT_EQ(scalar(GgufValueType::STRING, std::string("a\nb\tc\x01")).to_display(),
              "a\\nb\\tc\\x01");
    std::string long_str(200, 'x');
    std::string shown = scalar(GgufValueType::STRING, long_str).to_display();
    EXPECT_LT(shown.size(), 100u);
    EXPECT_NE(shown.find("(200 bytes)"), std::string::npos);
    // Truncation never splits a UTF-8 sequence: 'é' is 2 bytes, 63 + 2 crosses the limit.
    std::string utf = std::string(63, 'a') + "\xc3\xa9" + std::string(10, 'b');
    std::string d = scalar(GgufValueType::STRING, utf).to_display();
    EXPECT_EQ(d.substr(0, 63), std::string(63, 'a'));
    EXPECT_EQ(d.find('\xc3'), std::string::npos);
}

TEST(GgufValue, DisplayArrays) {
    auto ints = array(GgufValueType::INT32, std::vector<int64_t>{1, 2, 3});
    EXPECT_EQ(ints.to_display(), "[1, 2, 3]");
    std::vector<int64_t> many(10);
    for (int i = 0; i < 10; ++i) many[i] = i;
    EXPECT_EQ(array(GgufValueType::INT32, many).to_display(3), "[0, 1, 2, ... (10 items)]");
    EXPECT_EQ(array(GgufValueType::INT32, many).to_display(0), "[... (10 items)]");
    EXPECT_EQ(array(GgufValueType::STRING, std::vector<std::string>{"Ġt", "a\"b"}).to_display(),
              "[\"Ġt\", \"a\\\"b\"]");
    EXPECT_EQ(array(GgufValueType::BOOL, std::vector<bool>{true, false}).to_display(),
              "[true, false]");
    EXPECT_EQ(array(GgufValueType::FLOAT32, std::vector<double>{0.5, double{0.1f}}).to_display(),
              "[0.5, 0.1]");
    EXPECT_EQ(array(GgufValueType::UINT8, std::vector<uint64_t>{}).to_display(), "[]");
}

TEST(GgufTensorInfo, SizesFromTypeTraits) {
    GgufTensorInfo t{"w", GgmlType::Q4_0, {64, 3}, 0};
    EXPECT_EQ(t.n_elements(), 192u);
    EXPECT_EQ(t.n_bytes(), 192u / 32 * 18);
    GgufTensorInfo k{"k", GgmlType::Q6_K, {512, 2, 2}, 0};
    EXPECT_EQ(k.n_bytes(), 2048u / 256 * 210);
    GgufTensorInfo f{"f", GgmlType::F32, {7}, 0};
    EXPECT_EQ(f.n_bytes(), 28u);
}

}  // namespace
}  // namespace lazyllm
