// Truncated, corrupt and crafted files: each must fail with an Error whose message names the
// key, tensor or offset at fault; none may crash, hang or allocate without bound. Run under
// the ASan build (-DLAZYLLM_SANITIZE=ON) to catch any read past a buffer.
#include <gtest/gtest.h>

#include <random>

#include "gguf/gguf_test_util.h"
#include "lazyllm/gguf.h"

namespace lazyllm {
namespace {

using testing::RawGguf;

constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ4_0 = 2;

// Expects failure with `code` and every one of `needles` in the message.
void expect_error(const RawGguf& r, ErrorCode code, std::initializer_list<std::string> needles) {
    auto f = r.parse();
    ASSERT_FALSE(f.ok()) << "parsed a bad file";
    EXPECT_EQ(f.error().code(), code) << f.error().message();
    for (const auto& n : needles) {
        EXPECT_NE(f.error().message().find(n), std::string::npos)
            << "message '" << f.error().message() << "' lacks '" << n << "'";
    }
}

// A small valid file with strings, arrays and two tensors of different types.
std::vector<uint8_t> small_valid_file() {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_uint32("llama.block_count", 2);
    w.set_float32("llama.rope.freq_base", 10000.0f);
    w.set_bool("flag", true);
    w.set_string_array("tokens", {"a", "bc", "Ġthe"});
    w.set_int32_array("types", {1, 3, 1});
    w.set_float32_array("scores", {0.5f});
    w.add_tensor("norm", GgmlType::F32, {4}, std::vector<uint8_t>(16, 0x3f));
    w.add_tensor("q", GgmlType::Q4_0, {32, 2}, std::vector<uint8_t>(36, 0x11));
    return w.to_bytes();
}

TEST(GgufHostile, TruncatedAtEveryByteBoundary) {
    const std::vector<uint8_t> full = small_valid_file();
    auto whole = GgufFile::from_memory(full.data(), full.size(), "full");
    ASSERT_TRUE(whole.ok()) << whole.error().message();
    const GgufTensorInfo& last = whole->tensors().back();
    const uint64_t data_end = whole->data_offset() + last.offset + last.n_bytes();
    ASSERT_LE(data_end, full.size());

    for (size_t len = 0; len < full.size(); ++len) {
        // A fresh allocation of exactly `len` bytes, so ASan flags any read past it.
        std::vector<uint8_t> prefix(full.begin(), full.begin() + static_cast<ptrdiff_t>(len));
        auto f = GgufFile::from_memory(prefix.data(), prefix.size(), "prefix");
        if (len >= data_end) {
            // Only the padding after the last tensor is missing: still a complete file.
            EXPECT_TRUE(f.ok()) << len << ": " << f.error().message();
            continue;
        }
        ASSERT_FALSE(f.ok()) << "prefix of " << len << " bytes parsed";
        EXPECT_EQ(f.error().code(), ErrorCode::kCorrupt) << len << ": " << f.error().message();
        const std::string& msg = f.error().message();
        if (len < 4) {
            EXPECT_NE(msg.find("too small"), std::string::npos) << msg;
        } else {
            EXPECT_NE(msg.find("offset"), std::string::npos) << len << ": " << msg;
        }
    }
}

TEST(GgufHostile, RandomByteCorruptionNeverCrashes) {
    const std::vector<uint8_t> full = small_valid_file();
    std::mt19937_64 gen(1234);
    int failures = 0;
    for (int iter = 0; iter < 3000; ++iter) {
        std::vector<uint8_t> b = full;
        int n_flips = 1 + static_cast<int>(gen() % 4);
        for (int k = 0; k < n_flips; ++k) {
            size_t at = gen() % b.size();
            // Mostly single-bit flips; sometimes a byte set to 0xFF to make counts huge.
            b[at] = (gen() % 4 == 0) ? 0xFF : static_cast<uint8_t>(b[at] ^ (1u << (gen() % 8)));
        }
        auto f = GgufFile::from_memory(b.data(), b.size(), "fuzz");
        if (!f.ok()) {
            ++failures;
            EXPECT_FALSE(f.error().message().empty());
        } else {
            // Whatever parsed must be self-consistent: every tensor inside the buffer.
            for (const auto& t : f->tensors()) {
                EXPECT_LE(f->data_offset() + t.offset + t.n_bytes(), b.size()) << t.name;
            }
        }
    }
    EXPECT_GT(failures, 100);  // the corruption does reach the checks
}

TEST(GgufHostile, EmptyAndTinyBuffers) {
    auto f = GgufFile::from_memory(nullptr, 0, "empty.gguf");
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.error().message().find("empty.gguf"), std::string::npos);
    EXPECT_NE(f.error().message().find("too small"), std::string::npos);
}

TEST(GgufHostile, WrongMagic) {
    RawGguf r;
    r.bytes = {'g', 'g', 'j', 't', 3, 0, 0, 0};
    expect_error(r, ErrorCode::kCorrupt, {"magic", "ggjt", "offset 0"});
}

TEST(GgufHostile, Version1IsRejected) {
    RawGguf r;
    r.header(1, 0, 0);
    expect_error(r, ErrorCode::kUnsupported, {"version 1"});
}

TEST(GgufHostile, UnknownVersion) {
    RawGguf r;
    r.header(4, 0, 0);
    expect_error(r, ErrorCode::kUnsupported, {"version 4"});
}

TEST(GgufHostile, BigEndianIsRecognized) {
    RawGguf r;
    r.header(0x03000000, 0, 0);
    expect_error(r, ErrorCode::kUnsupported, {"big-endian"});
}

TEST(GgufHostile, AbsurdTensorCount) {
    RawGguf r;
    r.header(3, 1ull << 40, 0);
    r.bytes.resize(1024, 0);
    expect_error(r, ErrorCode::kCorrupt, {"tensor count 1099511627776", "offset 8"});
}

TEST(GgufHostile, AbsurdKvCount) {
    RawGguf r;
    r.header(3, 0, 1ull << 40);
    r.bytes.resize(1024, 0);
    expect_error(r, ErrorCode::kCorrupt, {"metadata count 1099511627776", "offset 16"});
}

TEST(GgufHostile, TensorCountTooLargeForBytesAfterMetadata) {
    RawGguf r;
    r.header(3, 3, 1);
    r.str("big").type(GgufValueType::ARRAY).type(GgufValueType::UINT8).u64(80);
    r.bytes.resize(r.size() + 80, 0);
    r.tensor_info("a", {4}, kF32, 0);  // room for one tensor info, not three
    expect_error(r, ErrorCode::kCorrupt, {"tensor count 3"});
}

TEST(GgufHostile, KeyLengthTwoToThe63) {
    RawGguf r;
    r.header(3, 0, 1).u64(1ull << 63);
    r.bytes.resize(1024, 'k');
    expect_error(r, ErrorCode::kCorrupt, {"metadata entry #0", "9223372036854775808", "offset 24"});
}

TEST(GgufHostile, StringValueLengthTwoToThe63) {
    RawGguf r;
    r.header(3, 0, 1).str("general.name").type(GgufValueType::STRING).u64(1ull << 63);
    r.bytes.resize(1024, 'x');
    expect_error(r, ErrorCode::kCorrupt, {"general.name", "9223372036854775808", "offset"});
}

TEST(GgufHostile, ArrayCountTwoToThe62) {
    for (GgufValueType elem : {GgufValueType::UINT8, GgufValueType::STRING, GgufValueType::UINT64,
                               GgufValueType::BOOL}) {
        SCOPED_TRACE(std::string(gguf_value_type_name(elem)));
        RawGguf r;
        r.header(3, 0, 1).str("tokenizer.ggml.tokens").type(GgufValueType::ARRAY).type(elem);
        r.u64(1ull << 62);
        r.bytes.resize(1024, 0);
        expect_error(r, ErrorCode::kCorrupt,
                     {"tokenizer.ggml.tokens", "4611686018427387904", "offset"});
    }
}

// A count the file's bytes allow but no model's metadata has: each element is held widened (8
// bytes a UINT8), so 512 MiB of bytes (sparse on disk) would take 4 GiB.
TEST(GgufHostile, ArrayBeyondAnyMetadataIsRefused) {
    RawGguf r;
    r.header(3, 0, 1).str("tokenizer.ggml.token_type").type(GgufValueType::ARRAY);
    r.type(GgufValueType::UINT8).u64((1ull << 24) + 1);
    r.bytes.resize(r.bytes.size() + (1u << 24) + 1, 0);
    expect_error(r, ErrorCode::kCorrupt, {"tokenizer.ggml.token_type", "16777217", "at most"});
}

TEST(GgufHostile, StringInsideArrayPastEnd) {
    RawGguf r;
    r.header(3, 0, 1).str("tokens").type(GgufValueType::ARRAY).type(GgufValueType::STRING);
    r.u64(3).str("ok").str("fine").u64(1000).str("short");
    expect_error(r, ErrorCode::kCorrupt, {"tokens", "array element 2", "length 1000"});
}

TEST(GgufHostile, UnknownValueType) {
    RawGguf r;
    r.header(3, 0, 1).str("weird.key").u32(13).u32(0);
    expect_error(r, ErrorCode::kCorrupt, {"weird.key", "unknown value type 13"});
    RawGguf r2;
    r2.header(3, 0, 1).str("weird.key").u32(0xFFFFFFFF).u32(0);
    expect_error(r2, ErrorCode::kCorrupt, {"weird.key", "4294967295"});
}

TEST(GgufHostile, UnknownArrayElementType) {
    RawGguf r;
    r.header(3, 0, 1).str("arr").type(GgufValueType::ARRAY).u32(42).u64(1).u64(0);
    expect_error(r, ErrorCode::kCorrupt, {"arr", "element type 42"});
}

TEST(GgufHostile, NestedArraysAreRejected) {
    RawGguf r;
    r.header(3, 0, 1).str("nested").type(GgufValueType::ARRAY).type(GgufValueType::ARRAY);
    r.u64(1).type(GgufValueType::UINT8).u64(1).u8(0);
    expect_error(r, ErrorCode::kUnsupported, {"nested", "ARRAY of ARRAY"});
}

TEST(GgufHostile, BoolOutOfRange) {
    RawGguf r;
    r.header(3, 0, 1).str("tokenizer.ggml.add_bos_token").type(GgufValueType::BOOL).u8(2);
    expect_error(r, ErrorCode::kCorrupt, {"tokenizer.ggml.add_bos_token", "BOOL"});
}

TEST(GgufHostile, DuplicateKey) {
    RawGguf r;
    r.header(3, 0, 2).kv_u32("llama.block_count", 2).kv_u32("llama.block_count", 3);
    expect_error(r, ErrorCode::kCorrupt, {"duplicate", "llama.block_count"});
}

// One tensor info plus data, with every field under the test's control.
RawGguf one_tensor(const std::vector<uint64_t>& ne, uint32_t type, uint64_t offset,
                   size_t data_bytes, uint32_t alignment_kv = 0) {
    RawGguf r;
    r.header(3, 1, alignment_kv ? 1 : 0);
    if (alignment_kv) r.kv_u32("general.alignment", alignment_kv);
    r.tensor_info("blk.0.attn_q.weight", ne, type, offset);
    r.pad(alignment_kv && alignment_kv <= 4096 && (alignment_kv & (alignment_kv - 1)) == 0
              ? alignment_kv
              : 32);
    r.bytes.resize(r.size() + data_bytes, 0);
    return r;
}

TEST(GgufHostile, ValidSingleTensorBaseline) {
    auto f = one_tensor({8, 2}, kF32, 0, 64).parse();
    ASSERT_TRUE(f.ok()) << f.error().message();
    EXPECT_EQ(f->tensors()[0].n_bytes(), 64u);
}

TEST(GgufHostile, UnknownTensorType) {
    expect_error(one_tensor({8}, 99, 0, 64), ErrorCode::kUnsupported,
                 {"blk.0.attn_q.weight", "99"});
    expect_error(one_tensor({256}, 16, 0, 1024), ErrorCode::kUnsupported,
                 {"blk.0.attn_q.weight", "16", "IQ2_XXS"});
}

TEST(GgufHostile, TooManyDims) {
    expect_error(one_tensor({2, 2, 2, 2, 2}, kF32, 0, 128), ErrorCode::kCorrupt,
                 {"blk.0.attn_q.weight", "n_dims 5"});
}

TEST(GgufHostile, ZeroDims) {
    RawGguf r;
    r.header(3, 1, 0).str("scalar").u32(0).u32(kF32).u64(0);
    r.pad(32).u32(0);
    expect_error(r, ErrorCode::kCorrupt, {"scalar", "n_dims 0"});
}

TEST(GgufHostile, ZeroDimension) {
    expect_error(one_tensor({8, 0}, kF32, 0, 64), ErrorCode::kCorrupt,
                 {"blk.0.attn_q.weight", "ne[1] = 0"});
}

TEST(GgufHostile, DimensionBeyondInt64) {
    expect_error(one_tensor({1ull << 63}, kF32, 0, 64), ErrorCode::kCorrupt,
                 {"blk.0.attn_q.weight", "ne[0]"});
}

TEST(GgufHostile, ElementCountOverflow) {
    expect_error(one_tensor({1ull << 32, 1ull << 32, 1ull << 32}, kF32, 0, 64), ErrorCode::kCorrupt,
                 {"blk.0.attn_q.weight", "overflow"});
}

TEST(GgufHostile, ByteSizeOverflowIsCaughtByTheExtentCheck) {
    // 2^62 elements of F32 is 2^64 bytes: the multiplication itself must not wrap.
    expect_error(one_tensor({1ull << 31, 1ull << 31}, kF32, 0, 64), ErrorCode::kCorrupt,
                 {"blk.0.attn_q.weight"});
}

TEST(GgufHostile, BlockSizeMismatch) {
    expect_error(one_tensor({16, 2}, kQ4_0, 0, 64), ErrorCode::kCorrupt,
                 {"blk.0.attn_q.weight", "block size 32"});
    expect_error(one_tensor({48, 2}, 20u, 0, 64), ErrorCode::kCorrupt,  // IQ4_NL
                 {"blk.0.attn_q.weight", "ne[0] = 48", "block size 32"});
    // The 256-element super-blocks: Q4_K (12), Q3_K (11), IQ4_XS (23) rows of 384 elements.
    for (uint32_t type : {12u, 11u, 23u}) {
        expect_error(one_tensor({384, 2}, type, 0, 1024), ErrorCode::kCorrupt,
                     {"blk.0.attn_q.weight", "ne[0] = 384", "block size 256"});
    }
}

TEST(GgufHostile, TensorExtentPastEof) {
    expect_error(one_tensor({8, 2}, kF32, 0, 63), ErrorCode::kCorrupt,
                 {"blk.0.attn_q.weight", "past the end", "offset"});
    // An offset far beyond the file (and one that would overflow data_offset + offset).
    expect_error(one_tensor({8}, kF32, 1ull << 40, 64), ErrorCode::kCorrupt,
                 {"blk.0.attn_q.weight", "past the end"});
    expect_error(one_tensor({8}, kF32, UINT64_MAX - 31, 64), ErrorCode::kCorrupt,
                 {"blk.0.attn_q.weight"});
}

TEST(GgufHostile, MisalignedTensorOffset) {
    expect_error(one_tensor({4}, kF32, 4, 64), ErrorCode::kCorrupt,
                 {"blk.0.attn_q.weight", "offset 4", "alignment 32"});
}

TEST(GgufHostile, BadAlignmentValues) {
    expect_error(one_tensor({4}, kF32, 0, 64, /*alignment_kv=*/0u + 3u), ErrorCode::kCorrupt,
                 {"general.alignment", "power of two"});
    RawGguf zero;
    zero.header(3, 0, 1).kv_u32("general.alignment", 0);
    expect_error(zero, ErrorCode::kCorrupt, {"general.alignment", "is 0"});
    RawGguf str;
    str.header(3, 0, 1).kv_str("general.alignment", "32");
    expect_error(str, ErrorCode::kCorrupt, {"general.alignment", "STRING"});
}

TEST(GgufHostile, CustomAlignmentMovesTheDataSection) {
    auto f = one_tensor({4}, kF32, 0, 16, 256).parse();
    ASSERT_TRUE(f.ok()) << f.error().message();
    EXPECT_EQ(f->alignment(), 256u);
    EXPECT_EQ(f->data_offset(), 256u);
}

TEST(GgufHostile, DuplicateTensorName) {
    RawGguf r;
    r.header(3, 2, 0).tensor_info("w", {4}, kF32, 0).tensor_info("w", {4}, kF32, 32);
    r.pad(32).bytes.resize(r.size() + 64, 0);
    expect_error(r, ErrorCode::kCorrupt, {"duplicate tensor name 'w'"});
}

TEST(GgufHostile, OverlappingTensors) {
    RawGguf r;
    r.header(3, 2, 0).tensor_info("a", {16}, kF32, 0).tensor_info("b", {4}, kF32, 32);
    r.pad(32).bytes.resize(r.size() + 64, 0);
    expect_error(r, ErrorCode::kCorrupt, {"'a'", "'b'", "overlap"});
}

TEST(GgufHostile, TruncatedInsideTensorInfoNamesTheTensor) {
    RawGguf r;
    r.header(3, 1, 0).str("blk.3.ffn_up.weight").u32(2).u64(64);  // second dim missing
    r.bytes.resize(r.size() + 4, 0);
    expect_error(r, ErrorCode::kCorrupt, {"blk.3.ffn_up.weight", "offset"});
}

}  // namespace
}  // namespace lazyllm
