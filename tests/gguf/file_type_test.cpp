// gguf_file_type_name: llama.cpp's names for general.file_type, and the guess without it.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "lazyllm/gguf.h"

namespace lazyllm {
namespace {

// A file with a Q4_K [256, 64] and a Q8_0 [256, 2] matrix, a norm vector, and general.file_type
// set to `file_type` where it is not negative.
std::string name_of(int64_t file_type) {
    GgufWriter w;
    if (file_type >= 0) w.set_uint32("general.file_type", static_cast<uint32_t>(file_type));
    const auto add = [&w](const char* name, GgmlType type, std::vector<int64_t> shape) {
        const uint64_t bytes = GgufTensorInfo{"", type, shape, 0}.n_bytes();
        w.add_tensor(name, type, std::move(shape), std::vector<uint8_t>(bytes, 0));
    };
    add("blk.0.ffn_up.weight", GgmlType::Q4_K, {256, 64});
    add("token_embd.weight", GgmlType::Q8_0, {256, 2});
    add("blk.0.attn_norm.weight", GgmlType::F32, {256});
    const std::vector<uint8_t> bytes = w.to_bytes();
    auto f = GgufFile::from_memory(bytes.data(), bytes.size(), "file_type.gguf");
    EXPECT_TRUE(f.ok()) << f.error().message();
    return f.ok() ? gguf_file_type_name(*f) : "";
}

TEST(GgufFileType, NamesAsLlamaCpp) {
    EXPECT_EQ(name_of(15), "Q4_K - Medium");
    EXPECT_EQ(name_of(3), "Q4_1");
    EXPECT_EQ(name_of(7), "Q8_0");
    EXPECT_EQ(name_of(0), "all F32");
    EXPECT_EQ(name_of(30), "IQ4_XS - 4.25 bpw");
    EXPECT_EQ(name_of(15 | 1024), "Q4_K - Medium (guessed)");  // LLAMA_FTYPE_GUESSED
    EXPECT_EQ(name_of(999), "file type 999");
}

// Without the key: the type holding the most elements of the 2-D tensors (Q4_K's 16384
// against Q8_0's 512), marked as a guess.
TEST(GgufFileType, GuessedWithoutTheKey) { EXPECT_EQ(name_of(-1), "Q4_K (guessed)"); }

}  // namespace
}  // namespace lazyllm
