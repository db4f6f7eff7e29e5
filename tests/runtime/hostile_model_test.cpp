// Well-formed GGUF files whose metadata no real model has (found by a review of the loader):
// each is refused at load with an error naming the key or tensor, instead of a crash, an
// out-of-bounds write or an allocation sized by the hostile value.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "lazyllm/engine.h"
#include "support/tiny_model.h"

namespace lazyllm {
namespace {

using testing::TinyModelSpec;

// Loads the writer's file; expects an error holding every needle.
void expect_refused(GgufWriter& w, const std::string& name,
                    std::initializer_list<std::string> needles) {
    const std::string path = ::testing::TempDir() + "lazyllm_hostile_" + name + ".gguf";
    ASSERT_TRUE(w.write(path).ok());
    EngineOptions eo;
    eo.model_path = path;
    eo.n_threads = 1;
    eo.precision = "f32";
    auto e = Engine::load(eo);
    ASSERT_FALSE(e.ok()) << name << " was loaded";
    for (const std::string& n : needles) {
        EXPECT_NE(e.error().message().find(n), std::string::npos)
            << name << ": '" << e.error().message() << "' lacks '" << n << "'";
    }
    auto summary = Engine::inspect(path);  // what `lazyllm info` reads
    EXPECT_FALSE(summary.ok()) << name;
    std::filesystem::remove(path);
}

// More tokens than the embedding has rows: ids past its rows (and logits sized by the
// tokenizer, smaller than the model writes) once crashed `serve`.
TEST(HostileModel, TokenizerAndEmbeddingDisagree) {
    TinyModelSpec spec;
    GgufWriter w = testing::tiny_model_writer(spec);
    const auto bytes = testing::build_tiny_model(spec);
    auto f = GgufFile::from_memory(bytes.data(), bytes.size(), "tiny");
    ASSERT_TRUE(f.ok());
    auto tokens = f->find("tokenizer.ggml.tokens")->as_string_array();
    auto types = f->find("tokenizer.ggml.token_type")->as_int_array();
    ASSERT_TRUE(tokens.ok() && types.ok());
    std::vector<int32_t> types32(types->begin(), types->end());
    for (int i = 0; i < 8; ++i) {
        tokens->push_back("<extra_" + std::to_string(i) + ">");
        types32.push_back(1);
    }
    w.set_string_array("tokenizer.ggml.tokens", *tokens);
    w.set_int32_array("tokenizer.ggml.token_type", types32);
    expect_refused(w, "vocab", {"tokenizer.ggml.tokens holds 308 tokens", "token_embd.weight",
                                "300 rows"});
}

// 44739243 heads x 96 = 2^32 + 32: in int arithmetic the query width wraps to 32, which the
// real 32-wide tensors then matched, and RoPE ran over 44.7M heads of one row.
TEST(HostileModel, HeadCountTimesHeadDimBeyondAnyModel) {
    TinyModelSpec spec;
    spec.n_embd = 32;
    spec.n_head = 2;
    spec.n_head_kv = 1;
    GgufWriter w = testing::tiny_model_writer(spec);
    w.set_uint32("llama.attention.head_count", 44739243);
    w.set_uint32("llama.attention.head_count_kv", 44739243);
    w.set_uint32("llama.attention.key_length", 96);
    expect_refused(w, "heads", {"llama.attention.head_count", "beyond any model"});
}

// A block count far beyond the file's tensors sized per-layer tables before any layer was
// read (134M layers: an abort on bad_alloc).
TEST(HostileModel, BlockCountBeyondTheTensors) {
    TinyModelSpec spec;
    GgufWriter w = testing::tiny_model_writer(spec);
    w.set_uint32("llama.block_count", 134217727);
    expect_refused(w, "blocks", {"llama.block_count", "134217727", "blk.134217726."});
}

}  // namespace
}  // namespace lazyllm
