// The reference forward: a plain scalar Llama-family forward (no kernels, no caches, double
// accumulation) over a GGUF's own tensors, computing the logits of every position of a token
// sequence. It follows HF transformers' modeling_llama.py / modeling_qwen2.py /
// modeling_qwen3.py / modeling_phi3.py / modeling_gemma3.py on the GGUF's tensor layout (llama
// GGUFs store Q/K permuted, so RoPE rotates adjacent pairs; the others rotate halves; gemma3
// norms are stored as 1 + w). The fast path (forward.cpp) is tested against it; it is meant
// for small models.
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
        std::vector<float> q_norm, k_norm, post_attn_norm, post_ffn_norm;  // qwen3 / gemma3
    };
    Status read_layer(const GgufFile& gguf, int il);
    ReferenceForward() = default;
    // out[i] = rmsnorm(in[i]) * w over n rows of `dim` (in and out may alias).
    void rms(const std::vector<float>& in, const std::vector<float>& w, std::vector<float>& out,
             int n, int dim) const;
    void rope(float* x, int pos, double theta) const;
    // att[n, Q] = causal softmax(q k^T * scale) v per head (GQA groups), within `window`
    // positions when > 0.
    void attention(const std::vector<float>& q, const std::vector<float>& k,
                   const std::vector<float>& v, std::vector<float>& att, int n, int window) const;
    // h += (act(x Wg^T) * x Wu^T) Wd^T (post-normed for gemma3).
    void ffn(const Layer& L, std::vector<float>& h, int n) const;

    ModelConfig cfg_;
    std::vector<float> token_embd_, output_norm_, head_;
    std::vector<float> freq_factors_;  // rope_freqs (Llama 3), or empty
    std::vector<Layer> layers_;
};

}  // namespace lazyllm
