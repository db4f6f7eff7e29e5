// The reference forward: a plain scalar Llama-family forward (no kernels, no caches, double
// accumulation) over a GGUF's own tensors, computing the logits of every position of a token
// sequence. It follows HF transformers' modeling_llama.py / modeling_qwen2.py on the GGUF's
// tensor layout (llama GGUFs store Q/K permuted, so RoPE rotates adjacent pairs; qwen2 rotates
// halves). The fast path (forward.cpp) is tested against it; it is meant for small models.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lazyllm/gguf.h"
#include "lazyllm/result.h"
#include "model/config.h"

namespace lazyllm {

class ReferenceForward {
public:
    // Reads the config and dequantizes every weight to fp32. Errors: a missing or
    // non-dequantizable tensor (named).
    static Result<ReferenceForward> create(const GgufFile& gguf);

    // logits: [n, n_vocab], every position (causal). ids must be < n_vocab.
    std::vector<float> run(const std::vector<int32_t>& ids) const;
    const ModelConfig& config() const { return cfg_; }

private:
    struct Layer {
        std::vector<float> attn_norm, wq, wk, wv, bq, bk, bv, wo, ffn_norm, w_gate, w_up, w_down;
    };
    ReferenceForward() = default;
    void rms(const std::vector<float>& in, const std::vector<float>& w, std::vector<float>& out,
             int n) const;
    void rope(float* x, int pos) const;
    // att[n, Q] = causal softmax(q k^T / sqrt(d)) v per head (GQA groups).
    void attention(const std::vector<float>& q, const std::vector<float>& k,
                   const std::vector<float>& v, std::vector<float>& att, int n) const;

    ModelConfig cfg_;
    std::vector<float> token_embd_, output_norm_, head_;
    std::vector<Layer> layers_;
};

}  // namespace lazyllm
