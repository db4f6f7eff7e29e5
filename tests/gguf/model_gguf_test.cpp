// The real default model (SmolLM2-135M-Instruct Q4_1, scripts/fetch_model.py). Expected values
// were read from the file itself (header, metadata and tensor directory).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>

#include "lazyllm/gguf.h"
#include "support/model_path.h"

namespace lazyllm {
namespace {

TEST(ModelGguf, SmolLM2MetadataAndTensors) {
    LAZYLLM_MODEL_OR_SKIP(path);
    auto t0 = std::chrono::steady_clock::now();
    auto opened = GgufFile::open(path);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(opened.ok()) << opened.error().message();
    const GgufFile& f = *opened;
    std::printf("[          ] opened %s (%.1f MB) in %.1f ms\n", path.c_str(), f.file_size() / 1e6,
                ms);
    // Timing is reported, not asserted: speed is checked in benchmarks, never in timed tests.

    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_EQ(f.metadata().size(), 33u);
    EXPECT_EQ(*f.get_string("general.architecture"), "llama");
    EXPECT_EQ(*f.get_uint("llama.block_count"), 30u);
    EXPECT_EQ(*f.get_uint("llama.context_length"), 8192u);
    EXPECT_EQ(*f.get_uint("llama.embedding_length"), 576u);
    EXPECT_EQ(*f.get_uint("llama.feed_forward_length"), 1536u);
    EXPECT_EQ(*f.get_uint("llama.attention.head_count"), 9u);
    EXPECT_EQ(*f.get_uint("llama.attention.head_count_kv"), 3u);
    EXPECT_EQ(*f.get_uint("llama.vocab_size"), 49152u);
    EXPECT_EQ(*f.get_uint("llama.rope.dimension_count"), 64u);
    EXPECT_EQ(*f.get_float("llama.rope.freq_base"), 100000.0);
    EXPECT_EQ(static_cast<float>(*f.get_float("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
    EXPECT_EQ(*f.get_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(*f.get_string("tokenizer.ggml.pre"), "smollm");
    EXPECT_EQ(*f.get_uint("tokenizer.ggml.bos_token_id"), 1u);
    EXPECT_EQ(*f.get_uint("tokenizer.ggml.eos_token_id"), 2u);

    auto tokens = f.find("tokenizer.ggml.tokens")->as_string_array();
    ASSERT_TRUE(tokens.ok());
    EXPECT_EQ(tokens->size(), 49152u);
    EXPECT_EQ((*tokens)[0], "<|endoftext|>");
    EXPECT_EQ((*tokens)[1], "<|im_start|>");
    EXPECT_EQ((*tokens)[2], "<|im_end|>");
    EXPECT_EQ(f.find("tokenizer.ggml.token_type")->array_size(), 49152u);
    EXPECT_EQ(f.find("tokenizer.ggml.merges")->array_size(), 48900u);
    EXPECT_EQ((*f.find("tokenizer.ggml.merges")->as_string_array())[0], "Ġ t");
    EXPECT_EQ(f.find("tokenizer.ggml.tokens")->to_display(3),
              "[\"<|endoftext|>\", \"<|im_start|>\", \"<|im_end|>\", ... (49152 items)]");

    // 1 token_embd (Q8_0) + 30 x 9 block tensors + output_norm; embeddings are tied.
    EXPECT_EQ(f.tensors().size(), 272u);
    EXPECT_EQ(f.data_offset(), 1785664u);
    const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->type, GgmlType::Q8_0);
    EXPECT_EQ(embd->shape, (std::vector<int64_t>{576, 49152}));
    EXPECT_EQ(embd->offset, 0u);
    EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
    const GgufTensorInfo* k = f.find_tensor("blk.0.attn_k.weight");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->type, GgmlType::Q4_1);
    EXPECT_EQ(k->shape, (std::vector<int64_t>{576, 192}));
    const GgufTensorInfo* down = f.find_tensor("blk.29.ffn_down.weight");
    ASSERT_NE(down, nullptr);
    EXPECT_EQ(down->shape, (std::vector<int64_t>{1536, 576}));
    int n_f32 = 0, n_q4_1 = 0, n_q8_0 = 0;
    uint64_t end = 0;
    for (const auto& t : f.tensors()) {
        n_f32 += t.type == GgmlType::F32;
        n_q4_1 += t.type == GgmlType::Q4_1;
        n_q8_0 += t.type == GgmlType::Q8_0;
        end = std::max(end, f.data_offset() + t.offset + t.n_bytes());
    }
    EXPECT_EQ(n_f32, 61);
    EXPECT_EQ(n_q4_1, 210);
    EXPECT_EQ(n_q8_0, 1);
    EXPECT_LE(end, f.file_size());

    // The mapping is live: the final norm's weights are finite, positive-scale floats.
    const GgufTensorInfo* norm = f.find_tensor("output_norm.weight");
    ASSERT_NE(norm, nullptr);
    std::vector<float> w(576);
    std::memcpy(w.data(), f.tensor_data(*norm), w.size() * sizeof(float));
    double sum = 0;
    for (float x : w) {
        ASSERT_TRUE(std::isfinite(x));
        sum += x;
    }
    EXPECT_GT(sum / 576, 0.1);
}

}  // namespace
}  // namespace lazyllm
