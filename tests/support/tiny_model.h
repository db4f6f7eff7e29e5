// Builds tiny random-weight Llama-family GGUF models for unit tests, with llama.cpp's tensor
// names and metadata keys, and a small byte-level BPE (gpt2) vocabulary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lazyllm/ggml_type.h"
#include "lazyllm/gguf.h"

namespace lazyllm::testing {

struct TinyModelSpec {
    // "llama"; "qwen2" (q/k/v biases); "qwen3" (QK-norm); "phi3" (fused attn_qkv and
    // gate|up ffn_up); "gemma3" (QK-norm, post-norms, sliding window on 5 of every 6 layers)
    std::string arch = "llama";
    int n_layer = 2;
    int n_embd = 64;
    int n_head = 4;
    int n_head_kv = 2;
    int n_ff = 128;
    int head_dim = 0;        // 0: n_embd / n_head (else written as attention.key_length)
    int sliding_window = 8;  // gemma3's attention.sliding_window
    int swa_pattern = 0;     // gemma3: attention.sliding_window_pattern if > 0 (else 6)
    int n_vocab = 300;      // >= 260: 256 byte tokens, specials, a few merges
    int n_ctx = 256;
    float rope_theta = 10000.0f;
    float rms_eps = 1e-5f;
    bool tied_embeddings = false;  // no output.weight when true
    bool chat_template = true;     // SmolLM2's tokenizer.chat_template; false: a base model
    GgmlType weight_type = GgmlType::F32;  // 2-D weights; norms stay F32
    // general.alignment; 1 packs the tensors back to back, every one at an odd offset.
    uint32_t alignment = 32;
    uint64_t seed = 1;
    float weight_scale = 0.08f;  // uniform(-scale, scale)
    // attn_norm and ffn_norm weights of channels 3 and n_embd / 2 + 1 times this: a residual
    // stream's outlier channels in the normed inputs (the int8 prefill's tests).
    float norm_outlier = 1.0f;
};

// The writer of the model, before its bytes: a test overrides keys (set_* replaces a key) to
// make a hostile file.
GgufWriter tiny_model_writer(const TinyModelSpec& spec);
// The GGUF as bytes (GgufFile::from_memory) or written to a file.
std::vector<uint8_t> build_tiny_model(const TinyModelSpec& spec);
Status write_tiny_model(const TinyModelSpec& spec, const std::string& path);
// Overwrites every value of the F32 tensor `name` in the GGUF file at `path` with NaN (a model
// whose logits are not finite).
Status fill_with_nan(const std::string& path, const std::string& name);

}  // namespace lazyllm::testing
