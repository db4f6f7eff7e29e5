// The model's two ends around forward_layers (forward.cpp): the token embedding, read row by
// row from its GGUF blocks, and the LM head over the last row, with Gemma's final soft-cap.
#include <cmath>

#include "base/check.h"
#include "base/scratch.h"
#include "kernels/ops.h"
#include "kernels/quant.h"
#include "model/llama_model.h"

namespace lazyllm {

Status LlamaModel::embed(const int32_t* ids, int64_t n, float* h, Profile* prof) const {
    OpTimer t(prof, OpKind::kEmbed);
    const int64_t E = config_.n_embd;
    for (int64_t i = 0; i < n; ++i) {
        if (ids[i] < 0 || ids[i] >= config_.n_vocab) {
            return make_error(ErrorCode::kOutOfRange, "token id {} at index {} is outside the vocabulary [0, {})",
                              ids[i], i, config_.n_vocab);
        }
        const uint8_t* row = token_embd_ + static_cast<size_t>(ids[i]) * token_embd_row_bytes_;
        LAZYLLM_TRY(kernels::dequantize_row_f32(opts_.ctx.isa, token_embd_type_, row, h + i * E, E));
        if (config_.embd_scale != 1.0f) {
            for (int64_t e = 0; e < E; ++e) h[i * E + e] *= config_.embd_scale;
        }
    }
    return {};
}

void LlamaModel::logits(const float* h_row, int64_t step_rows, bool prompt, float* out,
                        ForwardScratch& s, Profile* prof) const {
    OpTimer t(prof, OpKind::kLmHead, 2.0 * config_.n_embd * config_.n_vocab);
    float* x = grow(s.logits_row, config_.n_embd);
    kernels::rms_norm(opts_.ctx, h_row, output_norm_.data(), x, 1, config_.n_embd, config_.rms_eps);
    // Off the QuantLinear weights, fp32 activations into the head's GGUF blocks, read in place
    // (load_head). On QuantLinear, a prompt's row keeps its outlier channels exact as the
    // layers' normed inputs do (the final norm's output carries the same residual channels): the
    // first token's mean KL to the fp32 path is 0.0010 on the default model, 0.0015 with the row
    // rounded whole (docs/evaluation.md). Decode steps round it whole: a new channel costs a column
    // of n_vocab weights dequantized, and decode runs the head once a token.
    const bool quant = prefill_quant_ || decode_weights_step(step_rows, prompt);
    if (!quant) {
        LAZYLLM_CHECK_MSG(head_rows_.data != nullptr, "the LM head's blocks are read in place");
        const Status st = kernels::gemv_rows_f32(kernel_ctx(s), head_rows_, x, out);
        LAZYLLM_CHECK_MSG(st.ok(), "the LM head's blocks were checked at load");
    } else {
        const LinearPath path = prompt ? LinearPath::kQuantOutliers : LinearPath::kQuant;
        lm_head_.forward(s.kernels, path, {x, nullptr}, 1, out);
    }
    softcap(out, 1);
}

void LlamaModel::softcap(float* logits, int64_t n_rows) const {
    const float c = config_.final_softcap;
    if (c <= 0.0f) return;
    for (int64_t i = 0; i < n_rows * config_.n_vocab; ++i) logits[i] = c * std::tanh(logits[i] / c);
}

}  // namespace lazyllm
