#include "model/config.h"

#include <algorithm>
#include <cmath>
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

// The architecture's fixed traits. llama GGUFs have Q/K rows permuted by
// convert_hf_to_gguf.py so that ggml's "normal" RoPE (adjacent pairs) reproduces HF's
// rotate_half; the others are not permuted and rotate halves (NEOX), as llama.cpp runs them.
Status set_arch(ModelConfig& c) {
    c.rope_mode = kernels::RopeMode::kNeox;
    if (c.arch_name == "llama") {
        c.arch = Arch::kLlama;
        c.rope_mode = kernels::RopeMode::kNorm;
    } else if (c.arch_name == "qwen2") {
        c.arch = Arch::kQwen2;
        c.qkv_bias = true;
    } else if (c.arch_name == "qwen3") {
        c.arch = Arch::kQwen3;
        c.qk_norm = true;
    } else if (c.arch_name == "phi3") {
        c.arch = Arch::kPhi3;  // fused attn_qkv and ffn_up (gate|up) tensors (llama_model.cpp)
    } else if (c.arch_name == "gemma3") {
        c.arch = Arch::kGemma3;
        c.qk_norm = true;
        c.post_norms = true;
        c.ffn_act = kernels::GluAct::kGeluTanh;
    } else {
        return make_error(ErrorCode::kUnsupported,
                          "unsupported architecture '{}' (supported: llama, qwen2, qwen3, phi3, "
                          "gemma3)",
                          c.arch_name);
    }
    return {};
}

Result<float> get_float_in(const GgufFile& gguf, const std::string& key, double lo, double hi) {
    LAZYLLM_ASSIGN_OR_RETURN(double v, gguf.get_float(key));
    if (!(v >= lo && v <= hi)) {
        return make_error(ErrorCode::kCorrupt, "'{}' = {} is out of range [{}, {}]", key, v, lo, hi);
    }
    return static_cast<float>(v);
}

// Linear RoPE scaling (rope.scaling.type "linear", factor f: positions / f), as llama.cpp's
// freq_scale; other scaling types are refused by name. (Llama 3's scaling comes as the
// rope_freqs tensor instead.)
Status read_rope_scaling(const GgufFile& gguf, ModelConfig& c) {
    const std::string type_key = names::arch_key(c.arch_name, names::kRopeScalingType);
    std::string type = "none";
    if (gguf.find(type_key) != nullptr) {
        LAZYLLM_ASSIGN_OR_RETURN(type, gguf.get_string(type_key));
    }
    if (type == "none") return {};
    if (type != "linear") {
        return make_error(ErrorCode::kUnsupported, "'{}' = '{}' is not supported (none, linear)",
                          type_key, type);
    }
    const std::string factor_key = names::arch_key(c.arch_name, names::kRopeScalingFactor);
    if (gguf.find(factor_key) == nullptr) return {};
    LAZYLLM_ASSIGN_OR_RETURN(float f, get_float_in(gguf, factor_key, 1e-3, 1e6));
    c.rope_freq_scale = 1.0f / f;
    return {};
}

// Gemma 3: the sliding window and which layers use it (every sliding_window_pattern-th layer
// is global, the others local, unless the pattern is given per layer), the local layers' RoPE
// base, the query scale and the embedding scale, as llama.cpp's gemma3 loader reads them.
Status read_gemma3(const GgufFile& gguf, ModelConfig& c) {
    const std::string& a = c.arch_name;
    c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
    // llama.cpp: 1/sqrt(n_embd / n_head) for the 27B model (62 layers), else 1/sqrt(head_dim).
    c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.n_layer == 62 ? c.n_embd / c.n_head
                                                                        : c.head_dim));
    const std::string softcap_key = names::arch_key(a, names::kFinalLogitSoftcap);
    if (gguf.find(softcap_key) != nullptr) {
        LAZYLLM_ASSIGN_OR_RETURN(c.final_softcap, get_float_in(gguf, softcap_key, 0.0, 1e6));
    }
    const std::string window_key = names::arch_key(a, names::kSlidingWindow);
    if (gguf.find(window_key) == nullptr) return {};
    LAZYLLM_ASSIGN_OR_RETURN(c.sliding_window, get_positive_int(gguf, window_key));
    c.swa_layers.assign(c.n_layer, 0);
    const std::string pattern_key = names::arch_key(a, names::kSlidingWindowPattern);
    const GgufValue* pattern = gguf.find(pattern_key);
    if (pattern != nullptr && pattern->type == GgufValueType::ARRAY) {
        LAZYLLM_ASSIGN_OR_RETURN(auto per_layer, pattern->as_int_array());
        if (static_cast<int>(per_layer.size()) != c.n_layer) {
            return make_error(ErrorCode::kCorrupt, "'{}' has {} entries for {} layers", pattern_key,
                              per_layer.size(), c.n_layer);
        }
        for (int il = 0; il < c.n_layer; ++il) c.swa_layers[il] = per_layer[il] != 0;
    } else {
        int n_pattern = 6;
        if (pattern != nullptr) {
            LAZYLLM_ASSIGN_OR_RETURN(n_pattern, get_positive_int(gguf, pattern_key));
        }
        for (int il = 0; il < c.n_layer; ++il) c.swa_layers[il] = il % n_pattern < n_pattern - 1;
    }
    const std::string base_key = names::arch_key(a, names::kRopeFreqBaseSwa);
    if (gguf.find(base_key) != nullptr) {
        LAZYLLM_ASSIGN_OR_RETURN(c.rope_theta_swa, get_float_in(gguf, base_key, 1e-3, 1e12));
    }
    return {};
}

}  // namespace

Result<ModelConfig> ModelConfig::from_gguf(const GgufFile& gguf) {
    ModelConfig c;
    LAZYLLM_ASSIGN_OR_RETURN(c.arch_name, gguf.get_string(names::kArchitecture));
    LAZYLLM_TRY(set_arch(c));
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
    // Products that size rows and buffers, in 64 bits: a hostile head_count x key_length could
    // wrap an int back to a small width that real tensors then match. Real models stay far below
    // these bounds (head dims up to 256, query widths up to 16384).
    constexpr int64_t kMaxHeadDim = 8192, kMaxWidth = int64_t{1} << 20;
    if (c.head_dim > kMaxHeadDim || static_cast<int64_t>(c.n_head) * c.head_dim > kMaxWidth ||
        c.n_embd > kMaxWidth || c.n_ff > 64 * kMaxWidth) {
        return make_error(
            ErrorCode::kCorrupt,
            "'{}' = {}, '{}' = {} (head dimension {}), '{}' = {}: beyond any model "
            "(head dimension <= {}, heads x head dimension and the embedding <= {})",
            names::arch_key(a, names::kHeadCount), c.n_head, names::arch_key(a, names::kKeyLength),
            gguf.find(names::arch_key(a, names::kKeyLength)) ? "given" : "absent", c.head_dim,
            names::arch_key(a, names::kEmbeddingLength), c.n_embd, kMaxHeadDim, kMaxWidth);
    }
    // Each layer's tensors are named blk.N.*: a block count beyond them would size per-layer
    // tables for layers that are not there.
    const std::string last_block = fmt::format("blk.{}.", c.n_layer - 1);
    const auto& tensors = gguf.tensors();
    if (!std::any_of(tensors.begin(), tensors.end(),
                     [&](const GgufTensorInfo& t) { return t.name.starts_with(last_block); })) {
        return make_error(ErrorCode::kCorrupt, "'{}' = {} but the file has no tensor '{}*'",
                          names::arch_key(a, names::kBlockCount), c.n_layer, last_block);
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
    if (embd->shape[1] > std::numeric_limits<int32_t>::max()) {
        return make_error(ErrorCode::kCorrupt, "tensor '{}' has {} rows, more than a vocabulary",
                          names::kTokenEmbd, embd->shape[1]);
    }
    c.n_vocab = static_cast<int>(embd->shape[1]);
    c.tied_embeddings = gguf.find_tensor(names::kOutput) == nullptr;
    c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    LAZYLLM_TRY(read_rope_scaling(gguf, c));
    if (c.arch == Arch::kGemma3) LAZYLLM_TRY(read_gemma3(gguf, c));
    return c;
}

}  // namespace lazyllm
