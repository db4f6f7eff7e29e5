#include "model/config.h"

#include <limits>

#include "model/tensor_names.h"

namespace lazyllm {

namespace {

Result<int> get_positive_int(const GgufFile& gguf, const std::string& key) {
    LAZYLLM_ASSIGN_OR_RETURN(uint64_t v, gguf.get_uint(key));
    if (v == 0 || v > static_cast<uint64_t>(std::numeric_limits<int>::max() / 16)) {
        return make_error(ErrorCode::kCorrupt, "key '{}' has invalid value {}", key, v);
    }
    return static_cast<int>(v);
}

}  // namespace

Result<ModelConfig> ModelConfig::from_gguf(const GgufFile& gguf) {
    ModelConfig c;
    LAZYLLM_ASSIGN_OR_RETURN(c.arch_name, gguf.get_string(names::kArchitecture));
    if (c.arch_name == "llama") {
        c.arch = Arch::kLlama;
        // convert_hf_to_gguf.py permutes Q/K rows for llama so ggml's "normal" rope (adjacent
        // pairs) reproduces HF's rotate_half.
        c.rope_mode = kernels::RopeMode::kNorm;
    } else if (c.arch_name == "qwen2") {
        c.arch = Arch::kQwen2;
        c.rope_mode = kernels::RopeMode::kNeox;  // qwen2 is not permuted: llama.cpp uses NEOX
        c.qkv_bias = true;
    } else {
        return make_error(ErrorCode::kUnsupported,
                          "unsupported architecture '{}' (supported: llama, qwen2)", c.arch_name);
    }
    if (auto name = gguf.get_string(names::kName); name.ok()) c.name = *name;
    const std::string& a = c.arch_name;
    LAZYLLM_ASSIGN_OR_RETURN(c.n_layer, get_positive_int(gguf, names::arch_key(a, names::kBlockCount)));
    LAZYLLM_ASSIGN_OR_RETURN(c.n_embd, get_positive_int(gguf, names::arch_key(a, names::kEmbeddingLength)));
    LAZYLLM_ASSIGN_OR_RETURN(c.n_head, get_positive_int(gguf, names::arch_key(a, names::kHeadCount)));
    LAZYLLM_ASSIGN_OR_RETURN(c.n_ff, get_positive_int(gguf, names::arch_key(a, names::kFeedForwardLength)));
    LAZYLLM_ASSIGN_OR_RETURN(c.n_ctx_train, get_positive_int(gguf, names::arch_key(a, names::kContextLength)));
    c.n_head_kv = c.n_head;
    if (gguf.find(names::arch_key(a, names::kHeadCountKv)) != nullptr) {
        LAZYLLM_ASSIGN_OR_RETURN(c.n_head_kv, get_positive_int(gguf, names::arch_key(a, names::kHeadCountKv)));
    }
    if (c.n_head % c.n_head_kv != 0) {
        return make_error(ErrorCode::kCorrupt, "'{}' = {} is not a multiple of '{}' = {}",
                          names::arch_key(a, names::kHeadCount), c.n_head,
                          names::arch_key(a, names::kHeadCountKv), c.n_head_kv);
    }
    if (gguf.find(names::arch_key(a, names::kKeyLength)) != nullptr) {
        LAZYLLM_ASSIGN_OR_RETURN(c.head_dim, get_positive_int(gguf, names::arch_key(a, names::kKeyLength)));
    } else {
        if (c.n_embd % c.n_head != 0) {
            return make_error(ErrorCode::kCorrupt, "embedding_length {} is not divisible by head_count {}",
                              c.n_embd, c.n_head);
        }
        c.head_dim = c.n_embd / c.n_head;
    }
    if (c.head_dim % 2 != 0) {
        return make_error(ErrorCode::kCorrupt, "head dimension {} is odd", c.head_dim);
    }
    c.n_rot = c.head_dim;
    if (gguf.find(names::arch_key(a, names::kRopeDimCount)) != nullptr) {
        LAZYLLM_ASSIGN_OR_RETURN(c.n_rot, get_positive_int(gguf, names::arch_key(a, names::kRopeDimCount)));
        if (c.n_rot > c.head_dim || c.n_rot % 2 != 0) {
            return make_error(ErrorCode::kCorrupt, "'{}' = {} must be even and <= head dim {}",
                              names::arch_key(a, names::kRopeDimCount), c.n_rot, c.head_dim);
        }
    }
    if (gguf.find(names::arch_key(a, names::kRopeFreqBase)) != nullptr) {
        LAZYLLM_ASSIGN_OR_RETURN(double theta, gguf.get_float(names::arch_key(a, names::kRopeFreqBase)));
        if (!(theta > 0.0)) {
            return make_error(ErrorCode::kCorrupt, "'{}' must be positive", names::arch_key(a, names::kRopeFreqBase));
        }
        c.rope_theta = static_cast<float>(theta);
    }
    {
        LAZYLLM_ASSIGN_OR_RETURN(double eps, gguf.get_float(names::arch_key(a, names::kRmsEps)));
        if (!(eps > 0.0) || eps > 1.0) {
            return make_error(ErrorCode::kCorrupt, "'{}' = {} is out of range",
                              names::arch_key(a, names::kRmsEps), eps);
        }
        c.rms_eps = static_cast<float>(eps);
    }
    // Vocabulary size: the embedding's row count is authoritative (vocab_size is optional).
    const GgufTensorInfo* embd = gguf.find_tensor(names::kTokenEmbd);
    if (embd == nullptr) {
        return make_error(ErrorCode::kNotFound, "missing tensor '{}'", names::kTokenEmbd);
    }
    if (embd->shape.size() != 2) {
        return make_error(ErrorCode::kCorrupt, "tensor '{}' must be 2-D", names::kTokenEmbd);
    }
    c.n_vocab = static_cast<int>(embd->shape[1]);
    c.tied_embeddings = gguf.find_tensor(names::kOutput) == nullptr;
    return c;
}

}  // namespace lazyllm
