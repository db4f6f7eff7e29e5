// GGUF metadata keys and tensor-name patterns used by the Llama-family loader, in one table.
// Names follow llama.cpp's convert_hf_to_gguf.py / gguf-py constants (LLM_KV_*, MODEL_TENSOR).
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace lazyllm::names {

// Per-architecture keys are "<arch>.<suffix>".
inline constexpr std::string_view kArchitecture = "general.architecture";
inline constexpr std::string_view kName = "general.name";
inline constexpr std::string_view kBlockCount = "block_count";
inline constexpr std::string_view kContextLength = "context_length";
inline constexpr std::string_view kEmbeddingLength = "embedding_length";
inline constexpr std::string_view kFeedForwardLength = "feed_forward_length";
inline constexpr std::string_view kHeadCount = "attention.head_count";
inline constexpr std::string_view kHeadCountKv = "attention.head_count_kv";
inline constexpr std::string_view kKeyLength = "attention.key_length";
inline constexpr std::string_view kRmsEps = "attention.layer_norm_rms_epsilon";
inline constexpr std::string_view kRopeFreqBase = "rope.freq_base";
inline constexpr std::string_view kRopeDimCount = "rope.dimension_count";
inline constexpr std::string_view kRopeScalingType = "rope.scaling.type";
inline constexpr std::string_view kRopeScalingFactor = "rope.scaling.factor";
inline constexpr std::string_view kRopeFreqBaseSwa = "rope.freq_base_swa";
inline constexpr std::string_view kSlidingWindow = "attention.sliding_window";
inline constexpr std::string_view kSlidingWindowPattern = "attention.sliding_window_pattern";
inline constexpr std::string_view kFinalLogitSoftcap = "final_logit_softcapping";

inline std::string arch_key(std::string_view arch, std::string_view suffix) {
    return fmt::format("{}.{}", arch, suffix);
}

inline constexpr std::string_view kTokenEmbd = "token_embd.weight";
inline constexpr std::string_view kOutputNorm = "output_norm.weight";
inline constexpr std::string_view kOutput = "output.weight";
inline constexpr std::string_view kRopeFreqs = "rope_freqs.weight";  // Llama 3 rope scaling

inline std::string blk(int il, std::string_view what) { return fmt::format("blk.{}.{}", il, what); }
inline constexpr std::string_view kAttnNorm = "attn_norm.weight";
inline constexpr std::string_view kAttnQ = "attn_q.weight";
inline constexpr std::string_view kAttnK = "attn_k.weight";
inline constexpr std::string_view kAttnV = "attn_v.weight";
inline constexpr std::string_view kAttnQBias = "attn_q.bias";
inline constexpr std::string_view kAttnKBias = "attn_k.bias";
inline constexpr std::string_view kAttnVBias = "attn_v.bias";
inline constexpr std::string_view kAttnOutput = "attn_output.weight";
inline constexpr std::string_view kFfnNorm = "ffn_norm.weight";
inline constexpr std::string_view kFfnGate = "ffn_gate.weight";
inline constexpr std::string_view kFfnUp = "ffn_up.weight";
inline constexpr std::string_view kFfnDown = "ffn_down.weight";
inline constexpr std::string_view kAttnQkv = "attn_qkv.weight";            // phi3: q, k, v fused
inline constexpr std::string_view kAttnQNorm = "attn_q_norm.weight";       // qwen3, gemma3
inline constexpr std::string_view kAttnKNorm = "attn_k_norm.weight";
inline constexpr std::string_view kPostAttnNorm = "post_attention_norm.weight";  // gemma3
inline constexpr std::string_view kPostFfnNorm = "post_ffw_norm.weight";
inline constexpr std::string_view kRopeFactorsLong = "rope_factors_long.weight";  // phi3 LongRoPE

}  // namespace lazyllm::names
