// ModelConfig: the hyper-parameters of a Llama-family model (llama, qwen2, qwen3, phi3,
// gemma3), read from GGUF metadata. Plain data; derived sizes are const methods. A missing or
// invalid key fails with its name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "lazyllm/gguf.h"
#include "lazyllm/result.h"

namespace lazyllm {

enum class Arch { kLlama, kQwen2, kQwen3, kPhi3, kGemma3 };

struct ModelConfig {
    std::string arch_name;  // general.architecture
    Arch arch = Arch::kLlama;
    std::string name;       // general.name (may be empty)
    int n_layer = 0;
    int n_embd = 0;
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim = 0;
    int n_ff = 0;
    int n_vocab = 0;
    int n_ctx_train = 0;
    int n_rot = 0;
    float rope_theta = 10000.0f;
    float rms_eps = 1e-5f;
    kernels::RopeMode rope_mode = kernels::RopeMode::kNorm;
    bool tied_embeddings = false;  // no output.weight: the LM head reuses token_embd
    bool qkv_bias = false;         // qwen2
    bool qk_norm = false;          // qwen3, gemma3: per-head RMSNorm of q and k before RoPE
    bool post_norms = false;       // gemma3: RMSNorm of the attention and FFN outputs before
                                   // each residual add
    kernels::GluAct ffn_act = kernels::GluAct::kSilu;  // gemma3: GELU (tanh)
    float embd_scale = 1.0f;       // gemma3: token embeddings times sqrt(n_embd)
    float attn_scale = 0.0f;       // query scale (1/sqrt(head_dim) for every arch here)
    float final_softcap = 0.0f;    // > 0: logits = c * tanh(logits / c)
    // Sliding-window attention (gemma3): local layers see the last `sliding_window` positions
    // and rotate with their own RoPE base; global layers see everything.
    int sliding_window = 0;
    std::vector<uint8_t> swa_layers;  // [n_layer] 1 = local (only when sliding_window > 0)
    float rope_theta_swa = 10000.0f;
    float rope_freq_scale = 1.0f;  // linear RoPE scaling of the global layers (rope.scaling.factor)

    bool is_swa(int il) const { return sliding_window > 0 && swa_layers[il] != 0; }

    int n_embd_q() const { return n_head * head_dim; }
    int n_embd_kv() const { return n_head_kv * head_dim; }
    int n_qkv() const { return n_embd_q() + 2 * n_embd_kv(); }

    static Result<ModelConfig> from_gguf(const GgufFile& gguf);
};

}  // namespace lazyllm
