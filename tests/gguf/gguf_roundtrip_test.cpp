// Writer -> reader round trips, and hand-assembled files with every metadata value type.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iterator>
#include <thread>
#include <vector>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "gguf/gguf_test_util.h"
#include "lazyllm/gguf.h"

namespace lazyllm {
namespace {

using testing::RawGguf;

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = static_cast<uint8_t>(gen());
    return b;
}

uint64_t bytes_of(GgmlType type, const std::vector<int64_t>& shape) {
    return GgufTensorInfo{"", type, shape, 0}.n_bytes();
}

GgufFile parse_ok(const std::vector<uint8_t>& bytes) {
    auto f = GgufFile::from_memory(bytes.data(), bytes.size(), "test.gguf");
    EXPECT_TRUE(f.ok()) << f.error().message();
    if (!f.ok()) return GgufFile();
    return std::move(*f);
}

// What the engine drops once its tokenizer is built: the arrays under a prefix, nothing else.
TEST(GgufRoundTrip, DropArrayMetadataLeavesTheRest) {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string_array("tokenizer.ggml.tokens", {"a", "b"});
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_float32_array("tokenizer.ggml.scores", {0.5f, 1.0f});
    w.set_int32_array("llama.ints", {1, 2});
    w.set_uint32("llama.block_count", 2);
    auto bytes = w.to_bytes();
    GgufFile f = parse_ok(bytes);
    f.drop_array_metadata("tokenizer.ggml.");
    EXPECT_EQ(f.find("tokenizer.ggml.tokens"), nullptr);
    EXPECT_EQ(f.find("tokenizer.ggml.scores"), nullptr);
    ASSERT_NE(f.find("tokenizer.ggml.model"), nullptr);  // not an array
    EXPECT_EQ(*f.get_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(f.find("llama.ints")->array_size(), 2u);  // not under the prefix
    EXPECT_EQ(*f.get_uint("llama.block_count"), 2u);
    EXPECT_EQ(*f.get_string("general.architecture"), "llama");
    std::vector<std::string> keys;
    for (const auto& [k, v] : f.metadata()) keys.push_back(k);
    EXPECT_EQ(keys, (std::vector<std::string>{"general.architecture", "tokenizer.ggml.model",
                                              "llama.ints", "llama.block_count"}));
}

TEST(GgufRoundTrip, WriterMetadataOfEveryWriterType) {
    GgufWriter w;
    w.set_uint32("u32", 4000000000u);
    w.set_int32("i32", -7);
    w.set_uint64("u64", 1ull << 40);
    w.set_float32("f32", 1e-5f);
    w.set_bool("yes", true);
    w.set_bool("no", false);
    w.set_string("str", "hello");
    w.set_string("empty", "");
    w.set_string("bytes", std::string("\xff\xfe\0x", 4));  // not UTF-8, embedded NUL
    w.set_string_array("strs", {"a", "", "Ġthe"});
    w.set_float32_array("floats", {0.5f, -1.25f});
    w.set_int32_array("ints", {1, -2, 2147483647});
    w.set_int32_array("no_ints", {});
    auto bytes = w.to_bytes();
    GgufFile f = parse_ok(bytes);
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_TRUE(f.tensors().empty());

    const auto& md = f.metadata();
    ASSERT_EQ(md.size(), 13u);
    std::vector<std::string> keys;
    for (const auto& [k, v] : md) keys.push_back(k);
    EXPECT_EQ(keys,
              (std::vector<std::string>{"u32", "i32", "u64", "f32", "yes", "no", "str", "empty",
                                        "bytes", "strs", "floats", "ints", "no_ints"}));
    EXPECT_EQ(f.find("u32")->type, GgufValueType::UINT32);
    EXPECT_EQ(*f.get_uint("u32"), 4000000000u);
    EXPECT_EQ(f.find("i32")->type, GgufValueType::INT32);
    EXPECT_EQ(*f.find("i32")->as_int(), -7);
    EXPECT_EQ(f.find("u64")->type, GgufValueType::UINT64);
    EXPECT_EQ(*f.get_uint("u64"), 1ull << 40);
    EXPECT_EQ(f.find("f32")->type, GgufValueType::FLOAT32);
    EXPECT_EQ(static_cast<float>(*f.get_float("f32")), 1e-5f);
    EXPECT_TRUE(*f.find("yes")->as_bool());
    EXPECT_FALSE(*f.find("no")->as_bool());
    EXPECT_EQ(*f.get_string("str"), "hello");
    EXPECT_EQ(*f.get_string("empty"), "");
    EXPECT_EQ(*f.get_string("bytes"), std::string("\xff\xfe\0x", 4));
    EXPECT_EQ(f.find("strs")->elem_type, GgufValueType::STRING);
    EXPECT_EQ(*f.find("strs")->as_string_array(), (std::vector<std::string>{"a", "", "Ġthe"}));
    EXPECT_EQ(f.find("floats")->elem_type, GgufValueType::FLOAT32);
    EXPECT_EQ(*f.find("floats")->as_float_array(), (std::vector<double>{0.5, -1.25}));
    EXPECT_EQ(f.find("ints")->elem_type, GgufValueType::INT32);
    EXPECT_EQ(*f.find("ints")->as_int_array(), (std::vector<int64_t>{1, -2, 2147483647}));
    EXPECT_EQ(f.find("no_ints")->array_size(), 0u);
    EXPECT_EQ(f.find("missing"), nullptr);
}

TEST(GgufRoundTrip, SettingAKeyTwiceReplacesItInPlace) {
    GgufWriter w;
    w.set_uint32("a", 1);
    w.set_string("b", "x");
    w.set_string("a", "now a string");
    auto bytes = w.to_bytes();
    GgufFile f = parse_ok(bytes);
    ASSERT_EQ(f.metadata().size(), 2u);
    EXPECT_EQ(f.metadata()[0].first, "a");
    EXPECT_EQ(*f.get_string("a"), "now a string");
}

TEST(GgufRoundTrip, AccessorErrorsNameTheKey) {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    auto bytes = w.to_bytes();
    GgufFile f = parse_ok(bytes);
    auto missing = f.get_uint("llama.block_count");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
    EXPECT_EQ(missing.error().message(), "missing key 'llama.block_count'");
    auto wrong = f.get_uint("general.architecture");
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.error().message().find("general.architecture"), std::string::npos);
    EXPECT_NE(wrong.error().message().find("STRING"), std::string::npos);
    EXPECT_FALSE(f.get_float("general.architecture").ok());
    EXPECT_FALSE(f.get_string("nope").ok());
}

TEST(GgufRoundTrip, TensorsOfEveryTypeAndRank) {
    const std::vector<std::pair<GgmlType, std::vector<int64_t>>> cases = {
        {GgmlType::F32, {3}},         {GgmlType::F16, {5, 3}},         {GgmlType::BF16, {2, 3, 4}},
        {GgmlType::Q4_0, {64, 2}},    {GgmlType::Q4_1, {32, 1, 1, 3}}, {GgmlType::Q5_0, {32, 3}},
        {GgmlType::Q5_1, {96}},       {GgmlType::Q8_0, {32, 5}},       {GgmlType::Q8_1, {32}},
        {GgmlType::Q2_K, {256, 2}},   {GgmlType::Q3_K, {256}},         {GgmlType::Q4_K, {512, 3}},
        {GgmlType::Q5_K, {256, 1}},   {GgmlType::Q6_K, {256, 2, 2}},   {GgmlType::Q8_K, {256}},
        {GgmlType::IQ4_XS, {256, 3}}, {GgmlType::IQ4_NL, {64, 3}},     {GgmlType::I8, {7}},
        {GgmlType::I16, {7}},         {GgmlType::I32, {7, 2}},         {GgmlType::I64, {1}},
        {GgmlType::F64, {3, 3}},
    };
    GgufWriter w;
    w.set_string("general.name", "all types");
    std::vector<std::vector<uint8_t>> data;
    for (size_t i = 0; i < cases.size(); ++i) {
        data.push_back(random_bytes(bytes_of(cases[i].first, cases[i].second), i));
        w.add_tensor("t" + std::to_string(i), cases[i].first, cases[i].second, data.back());
    }
    auto bytes = w.to_bytes();
    GgufFile f = parse_ok(bytes);
    ASSERT_EQ(f.tensors().size(), cases.size());
    EXPECT_EQ(f.data_offset() % 32, 0u);
    EXPECT_EQ(f.file_size(), bytes.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const GgufTensorInfo& t = f.tensors()[i];
        SCOPED_TRACE(t.name);
        EXPECT_EQ(t.name, "t" + std::to_string(i));
        EXPECT_EQ(t.type, cases[i].first);
        EXPECT_EQ(t.shape, cases[i].second);
        EXPECT_EQ(t.offset % 32, 0u);
        EXPECT_EQ(t.n_bytes(), data[i].size());
        EXPECT_EQ(f.find_tensor(t.name), &t);
        const uint8_t* p = f.tensor_data(t);
        EXPECT_EQ(p, bytes.data() + f.data_offset() + t.offset);
        EXPECT_TRUE(std::equal(data[i].begin(), data[i].end(), p));
    }
    EXPECT_EQ(f.find_tensor("t999"), nullptr);
}

TEST(GgufRoundTrip, CustomAlignmentIsWrittenAndHonored) {
    GgufWriter w(64);
    w.add_tensor("a", GgmlType::F32, {3}, random_bytes(12, 1));
    w.add_tensor("b", GgmlType::F32, {5}, random_bytes(20, 2));
    auto bytes = w.to_bytes();
    GgufFile f = parse_ok(bytes);
    EXPECT_EQ(f.alignment(), 64u);
    EXPECT_EQ(*f.get_uint("general.alignment"), 64u);
    EXPECT_EQ(f.find("general.alignment")->type, GgufValueType::UINT32);
    EXPECT_EQ(f.data_offset() % 64, 0u);
    EXPECT_EQ(f.tensors()[1].offset, 64u);
    EXPECT_EQ(bytes.size() % 64, 0u);
}

TEST(GgufRoundTrip, DefaultAlignmentAddsNoKey) {
    GgufWriter w;
    w.add_tensor("a", GgmlType::F32, {1}, random_bytes(4, 1));
    auto bytes = w.to_bytes();
    GgufFile f = parse_ok(bytes);
    EXPECT_EQ(f.find("general.alignment"), nullptr);
    EXPECT_EQ(f.alignment(), 32u);
}

// Every value type of the spec, as scalars and as arrays, in a v2 and a v3 file.
RawGguf every_value_type_file(uint32_t version) {
    RawGguf r;
    r.header(version, 1, 25);
    r.str("u8").type(GgufValueType::UINT8).u8(200);
    r.str("i8").type(GgufValueType::INT8).put<int8_t>(-100);
    r.str("u16").type(GgufValueType::UINT16).put<uint16_t>(65000);
    r.str("i16").type(GgufValueType::INT16).put<int16_t>(-32000);
    r.str("u32").type(GgufValueType::UINT32).u32(4000000000u);
    r.str("i32").type(GgufValueType::INT32).put<int32_t>(-2000000000);
    r.str("f32").type(GgufValueType::FLOAT32).put<float>(0.25f);
    r.str("bool").type(GgufValueType::BOOL).u8(1);
    r.str("string").type(GgufValueType::STRING).str("text");
    r.str("u64").type(GgufValueType::UINT64).u64(UINT64_MAX);
    r.str("i64").type(GgufValueType::INT64).put<int64_t>(INT64_MIN);
    r.str("f64").type(GgufValueType::FLOAT64).put<double>(-1.5);
    auto arr = [&](const char* key, GgufValueType elem, uint64_t n) -> RawGguf& {
        return r.str(key).type(GgufValueType::ARRAY).type(elem).u64(n);
    };
    arr("a_u8", GgufValueType::UINT8, 2).u8(1).u8(255);
    arr("a_i8", GgufValueType::INT8, 2).put<int8_t>(-1).put<int8_t>(127);
    arr("a_u16", GgufValueType::UINT16, 1).put<uint16_t>(65535);
    arr("a_i16", GgufValueType::INT16, 1).put<int16_t>(-5);
    arr("a_u32", GgufValueType::UINT32, 2).u32(0).u32(7);
    arr("a_i32", GgufValueType::INT32, 1).put<int32_t>(-9);
    arr("a_f32", GgufValueType::FLOAT32, 2).put<float>(1.0f).put<float>(-0.5f);
    arr("a_bool", GgufValueType::BOOL, 3).u8(1).u8(0).u8(1);
    arr("a_str", GgufValueType::STRING, 2).str("x").str("yz");
    arr("a_u64", GgufValueType::UINT64, 1).u64(1ull << 63);
    arr("a_i64", GgufValueType::INT64, 1).put<int64_t>(-(1ll << 62));
    arr("a_f64", GgufValueType::FLOAT64, 1).put<double>(2.5);
    arr("a_empty", GgufValueType::STRING, 0);
    r.tensor_info("w", {4}, 0, 0);
    r.pad(32);
    for (int i = 0; i < 4; ++i) r.put<float>(static_cast<float>(i));
    return r;
}

void check_every_value_type(const GgufFile& f) {
    ASSERT_EQ(f.metadata().size(), 25u);
    EXPECT_EQ(*f.get_uint("u8"), 200u);
    EXPECT_EQ(f.find("u8")->type, GgufValueType::UINT8);
    EXPECT_EQ(*f.find("i8")->as_int(), -100);
    EXPECT_EQ(*f.get_uint("u16"), 65000u);
    EXPECT_EQ(*f.find("i16")->as_int(), -32000);
    EXPECT_EQ(*f.get_uint("u32"), 4000000000u);
    EXPECT_EQ(*f.find("i32")->as_int(), -2000000000);
    EXPECT_EQ(*f.get_float("f32"), 0.25);
    EXPECT_TRUE(*f.find("bool")->as_bool());
    EXPECT_EQ(*f.get_string("string"), "text");
    EXPECT_EQ(*f.get_uint("u64"), UINT64_MAX);
    EXPECT_EQ(*f.find("i64")->as_int(), INT64_MIN);
    EXPECT_EQ(f.find("f64")->type, GgufValueType::FLOAT64);
    EXPECT_EQ(*f.get_float("f64"), -1.5);
    EXPECT_EQ(*f.find("a_u8")->as_int_array(), (std::vector<int64_t>{1, 255}));
    EXPECT_EQ(*f.find("a_i8")->as_int_array(), (std::vector<int64_t>{-1, 127}));
    EXPECT_EQ(*f.find("a_u16")->as_int_array(), (std::vector<int64_t>{65535}));
    EXPECT_EQ(*f.find("a_i16")->as_int_array(), (std::vector<int64_t>{-5}));
    EXPECT_EQ(*f.find("a_u32")->as_int_array(), (std::vector<int64_t>{0, 7}));
    EXPECT_EQ(*f.find("a_i32")->as_int_array(), (std::vector<int64_t>{-9}));
    EXPECT_EQ(*f.find("a_f32")->as_float_array(), (std::vector<double>{1.0, -0.5}));
    EXPECT_EQ(std::get<std::vector<bool>>(f.find("a_bool")->data),
              (std::vector<bool>{true, false, true}));
    EXPECT_EQ(*f.find("a_str")->as_string_array(), (std::vector<std::string>{"x", "yz"}));
    EXPECT_EQ(std::get<std::vector<uint64_t>>(f.find("a_u64")->data)[0], 1ull << 63);
    EXPECT_EQ(*f.find("a_i64")->as_int_array(), (std::vector<int64_t>{-(1ll << 62)}));
    EXPECT_EQ(*f.find("a_f64")->as_float_array(), (std::vector<double>{2.5}));
    EXPECT_EQ(f.find("a_empty")->array_size(), 0u);
    EXPECT_EQ(f.find("a_empty")->elem_type, GgufValueType::STRING);
    ASSERT_EQ(f.tensors().size(), 1u);
    const float* w = reinterpret_cast<const float*>(f.tensor_data(f.tensors()[0]));
    EXPECT_EQ(w[3], 3.0f);
}

TEST(GgufRoundTrip, EveryValueTypeVersion3) {
    RawGguf r = every_value_type_file(3);
    GgufFile f = parse_ok(r.bytes);
    EXPECT_EQ(f.version(), 3u);
    check_every_value_type(f);
}

TEST(GgufRoundTrip, EveryValueTypeVersion2) {
    RawGguf r = every_value_type_file(2);
    GgufFile f = parse_ok(r.bytes);
    EXPECT_EQ(f.version(), 2u);
    check_every_value_type(f);
}

// Writers of one path at the same time (tests in parallel processes share fixture files): each
// renames a complete file into place, so a reader never sees a truncated one.
TEST(GgufRoundTrip, ConcurrentWritersOfOnePathLeaveACompleteFile) {
    auto dir = std::filesystem::temp_directory_path() /
               ("lazyllm_gguf_concurrent_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "m.gguf").string();
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.add_tensor("x", GgmlType::F32, {256, 64}, random_bytes(256 * 64 * 4, 5));
    const size_t size = w.to_bytes().size();
    std::atomic<bool> ok{true};
    std::vector<std::thread> writers;
    for (int t = 0; t < 3; ++t) {
        writers.emplace_back([&] {
            for (int i = 0; i < 20; ++i) ok = ok && w.write(path).ok();
        });
    }
    int reads = 0;
    for (int i = 0; i < 200 && reads < 50; ++i) {
        if (!std::filesystem::exists(path)) continue;
        auto f = GgufFile::open(path);
        ASSERT_TRUE(f.ok()) << f.error().message();
        EXPECT_EQ(f->file_size(), size);
        ++reads;
    }
    for (auto& t : writers) t.join();
    EXPECT_TRUE(ok);
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                            std::filesystem::directory_iterator()),
              1);  // no temporary left behind
    std::filesystem::remove_all(dir);
}

TEST(GgufRoundTrip, FileWriteAndOpen) {
    auto dir = std::filesystem::temp_directory_path() /
               ("lazyllm_gguf_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::string path = (dir / "m.gguf").string();
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.add_tensor("x", GgmlType::F16, {4, 2}, random_bytes(16, 3));
    ASSERT_TRUE(w.write(path).ok());
    // Only the file itself is left: no temporary.
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                            std::filesystem::directory_iterator()),
              1);
    auto f = GgufFile::open(path);
    ASSERT_TRUE(f.ok()) << f.error().message();
    EXPECT_EQ(f->path(), path);
    EXPECT_EQ(f->file_size(), w.to_bytes().size());
    EXPECT_EQ(*f->get_string("general.architecture"), "llama");
    auto expected = random_bytes(16, 3);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), f->tensor_data(*f->find_tensor("x"))));

    // Moving the file object keeps tensor pointers and lookups valid.
    const uint8_t* before = f->tensor_data(*f->find_tensor("x"));
    GgufFile moved = std::move(*f);
    EXPECT_EQ(moved.tensor_data(*moved.find_tensor("x")), before);
    EXPECT_EQ(*moved.get_string("general.architecture"), "llama");

    std::filesystem::remove_all(dir);
}

TEST(GgufRoundTrip, WriteErrorNamesThePath) {
    GgufWriter w;
    std::string path = "/nonexistent-dir-lazyllm/sub/m.gguf";
    Status s = w.write(path);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code(), ErrorCode::kIo);
    EXPECT_NE(s.error().message().find(path), std::string::npos);
}

TEST(GgufRoundTrip, OpenMissingFileNamesThePath) {
    auto f = GgufFile::open("/nonexistent-lazyllm/model.gguf");
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.error().code(), ErrorCode::kNotFound);
    EXPECT_NE(f.error().message().find("/nonexistent-lazyllm/model.gguf"), std::string::npos);
}

TEST(GgufRoundTrip, LargeStringArrayParsesQuickly) {
    // A vocabulary the size of SmolLM2's: 49152 tokens plus their types.
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    for (int i = 0; i < 49152; ++i) {
        tokens.push_back("tok" + std::to_string(i));
        types.push_back(i < 3 ? 3 : 1);
    }
    GgufWriter w;
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_int32_array("tokenizer.ggml.token_type", types);
    auto bytes = w.to_bytes();
    auto t0 = std::chrono::steady_clock::now();
    GgufFile f = parse_ok(bytes);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(f.find("tokenizer.ggml.tokens")->array_size(), 49152u);
    EXPECT_EQ((*f.find("tokenizer.ggml.tokens")->as_string_array())[49151], "tok49151");
    std::printf("[          ] parsed a 49,152-token vocabulary in %.1f ms\n", ms);  // reported only
}

}  // namespace
}  // namespace lazyllm
