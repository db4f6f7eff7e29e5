// Loading: validate every tensor's shape against the config, dequantize once to fp32, and pack
// into the GEMM's layout (bf16 on AMX/AVX-512-BF16); where QuantLinear has a fast path (AVX-512
// VNNI or AVX2) also keep each matrix in 4/8-bit blocks for decode steps. The token embedding
// stays quantized in the mmap and is dequantized per looked-up row.
#include "model/llama_model.h"

#include <utility>

#include "base/timer.h"
#include "kernels/quant.h"
#include "model/tensor_names.h"

namespace lazyllm {

namespace {

Result<std::vector<float>> read_tensor_f32(const GgufFile& gguf, const std::string& name,
                                           const std::vector<int64_t>& shape, kernels::Isa isa) {
    const GgufTensorInfo* t = gguf.find_tensor(name);
    if (t == nullptr) return make_error(ErrorCode::kNotFound, "missing tensor '{}'", name);
    if (t->shape != shape) {
        return make_error(ErrorCode::kCorrupt, "tensor '{}' has shape [{}], expected [{}]", name,
                          fmt::join(t->shape, ", "), fmt::join(shape, ", "));
    }
    std::vector<float> out(t->n_elements());
    Status st = kernels::dequantize_row_f32(isa, t->type, gguf.tensor_data(*t), out.data(),
                                            static_cast<int64_t>(out.size()));
    if (!st.ok()) return st.error().with_context(fmt::format("tensor '{}'", name));
    return out;
}

// Concatenates row blocks [rows_i, n_in] into one [sum rows_i, n_in] matrix.
std::vector<float> concat_rows(std::initializer_list<const std::vector<float>*> parts) {
    size_t total = 0;
    for (const auto* p : parts) total += p->size();
    std::vector<float> out;
    out.reserve(total);
    for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
    return out;
}

// The decode copy of one (possibly fused) matrix: straight from the GGUF's blocks when all
// parts share a type QuantLinear takes, else requantized to Q8_0 from the fp32 rows `w`
// (K-quants, mixed-type fusions, F16/F32 weights).
Result<kernels::QuantLinear> make_quant(const kernels::KernelContext& ctx, const GgufFile& gguf,
                                        std::initializer_list<std::string> names,
                                        const std::vector<float>& w, int64_t n_in,
                                        const float* bias) {
    std::vector<kernels::QuantLinear::Part> parts;
    bool direct = true;
    for (const std::string& n : names) {
        // Present and 2-D [n_in, n_out]: read_tensor_f32 checked it against the config.
        const GgufTensorInfo* t = gguf.find_tensor(n);
        direct = direct && kernels::QuantLinear::supports(t->type) &&
                 (parts.empty() || parts.front().type == t->type);
        parts.push_back({t->type, gguf.tensor_data(*t), t->shape[1]});
    }
    const int64_t n_out = static_cast<int64_t>(w.size()) / n_in;
    if (direct) return kernels::QuantLinear::create(ctx, parts, n_in, bias);
    return kernels::QuantLinear::create_from_f32(ctx, w.data(), n_out, n_in, bias);
}

}  // namespace

Result<std::unique_ptr<LlamaModel>> LlamaModel::load(const std::string& path,
                                                     const ModelLoadOptions& opts) {
    Timer timer;
    std::unique_ptr<LlamaModel> m(new LlamaModel());
    m->opts_ = opts;
    // The fp32 path is fp32 end to end: AMX kernels (bf16 attention tiles) are left out.
    if (opts.precision == kernels::GemmPrecision::kF32 && m->opts_.ctx.isa == kernels::Isa::kAmx) {
        m->opts_.ctx.isa = kernels::Isa::kAvx512;
    }
    {
        auto g = GgufFile::open(path);
        if (!g.ok()) return g.error();
        m->gguf_ = std::move(g).value();
    }
    {
        auto c = ModelConfig::from_gguf(m->gguf_);
        if (!c.ok()) return c.error().with_context(path);
        m->config_ = std::move(c).value();
    }
    Status st = m->load_weights();
    if (!st.ok()) return st.error().with_context(path);
    m->load_ms_ = timer.elapsed_ms();
    return m;
}

Status LlamaModel::load_weights() {
    const ModelConfig& c = config_;
    const kernels::Isa isa = opts_.ctx.isa;
    const int64_t E = c.n_embd, Q = c.n_embd_q(), F = c.n_ff;

    // Rope frequency factors (Llama 3 scaling) come as a tensor when present.
    std::vector<float> freq_factors;
    if (gguf_.find_tensor(names::kRopeFreqs) != nullptr) {
        LAZYLLM_ASSIGN_OR_RETURN(freq_factors, read_tensor_f32(gguf_, std::string(names::kRopeFreqs),
                                                               {c.n_rot / 2}, isa));
    }
    if (gguf_.find_tensor(names::kRopeFactorsLong) != nullptr) {
        return make_error(ErrorCode::kUnsupported, "LongRoPE ('{}') is not supported",
                          names::kRopeFactorsLong);
    }
    if (c.rope_freq_scale != 1.0f) {  // linear scaling: every frequency divided by the factor
        if (freq_factors.empty()) freq_factors.assign(c.n_rot / 2, 1.0f);
        for (float& f : freq_factors) f /= c.rope_freq_scale;
    }
    rope_ = kernels::RopeTable(c.n_ctx_train, c.n_rot, c.rope_theta, freq_factors);
    if (c.sliding_window > 0) rope_swa_ = kernels::RopeTable(c.n_ctx_train, c.n_rot, c.rope_theta_swa);

    const GgufTensorInfo* embd = gguf_.find_tensor(names::kTokenEmbd);
    if (embd->shape != std::vector<int64_t>{E, c.n_vocab}) {
        return make_error(ErrorCode::kCorrupt, "tensor '{}' has shape [{}], expected [{}, {}]",
                          names::kTokenEmbd, fmt::join(embd->shape, ", "), E, c.n_vocab);
    }
    auto traits = ggml_type_traits(static_cast<uint32_t>(embd->type));
    if (!traits || !traits->dequantizable || E % traits->block_size != 0) {
        return make_error(ErrorCode::kUnsupported, "tensor '{}' has unsupported type {}",
                          names::kTokenEmbd, ggml_type_name(embd->type));
    }
    token_embd_ = gguf_.tensor_data(*embd);
    token_embd_type_ = embd->type;
    token_embd_row_bytes_ = static_cast<size_t>(E / traits->block_size) * traits->type_size;

    // The quantized decode copies need whole 32-blocks along every n_in (n_embd, n_embd_q, n_ff)
    // and QuantLinear's fast path (AVX-512 VNNI or AVX2); without them (or on the exact fp32
    // path) decode uses the GEMM weights.
    quantized_decode_ = opts_.quantized_decode && opts_.precision != kernels::GemmPrecision::kF32 &&
                        kernels::QuantLinear::has_fast_path(opts_.ctx) && E % 32 == 0 &&
                        Q % 32 == 0 && F % 32 == 0;

    layers_.resize(c.n_layer);
    for (int il = 0; il < c.n_layer; ++il) LAZYLLM_TRY(load_layer(il));
    LAZYLLM_ASSIGN_OR_RETURN(output_norm_, read_tensor_f32(gguf_, std::string(names::kOutputNorm), {E}, isa));
    {
        const std::string head_name(c.tied_embeddings ? names::kTokenEmbd : names::kOutput);
        LAZYLLM_ASSIGN_OR_RETURN(auto w, read_tensor_f32(gguf_, head_name, {E, c.n_vocab}, isa));
        LAZYLLM_TRY(make_linear(head_name, {head_name}, w, c.n_vocab, E, nullptr,
                                kernels::GemmLayout::kPlain, lm_head_));
    }
    // How far a decode step's rows (revivals included) stay on the quantized weights depends
    // on what the GEMMs they would go to are (llama_model.h).
    quant_max_rows_ = !layers_.empty() && layers_[0].gate_up.gemm.backend() == kernels::GemmBackend::kAvx2
                          ? kQuantMaxRowsAvx2
                          : kQuantMaxRows;
    return {};
}

Status LlamaModel::load_layer(int il) {
    const ModelConfig& c = config_;
    const kernels::Isa isa = opts_.ctx.isa;
    const int64_t E = c.n_embd, Q = c.n_embd_q(), KV = c.n_embd_kv(), F = c.n_ff;
    LayerWeights& L = layers_[il];
    auto name = [&](std::string_view what) { return names::blk(il, what); };
    auto read = [&](std::string_view what, std::vector<int64_t> shape) {
        return read_tensor_f32(gguf_, name(what), std::move(shape), isa);
    };
    LAZYLLM_ASSIGN_OR_RETURN(L.attn_norm, read(names::kAttnNorm, {E}));
    LAZYLLM_ASSIGN_OR_RETURN(L.ffn_norm, read(names::kFfnNorm, {E}));
    if (c.qk_norm) {
        LAZYLLM_ASSIGN_OR_RETURN(L.q_norm, read(names::kAttnQNorm, {c.head_dim}));
        LAZYLLM_ASSIGN_OR_RETURN(L.k_norm, read(names::kAttnKNorm, {c.head_dim}));
    }
    if (c.post_norms) {
        LAZYLLM_ASSIGN_OR_RETURN(L.post_attn_norm, read(names::kPostAttnNorm, {E}));
        LAZYLLM_ASSIGN_OR_RETURN(L.post_ffn_norm, read(names::kPostFfnNorm, {E}));
    }
    if (c.arch == Arch::kPhi3) {
        // Fused tensors as convert_hf_to_gguf.py writes Phi-3: attn_qkv = [q; k; v] rows,
        // ffn_up = [gate; up] rows (HF's gate_up_proj, chunked gate first).
        LAZYLLM_ASSIGN_OR_RETURN(auto wqkv, read(names::kAttnQkv, {E, Q + 2 * KV}));
        LAZYLLM_TRY(make_linear(name(names::kAttnQkv), {name(names::kAttnQkv)}, wqkv,
                                Q + 2 * KV, E, nullptr, kernels::GemmLayout::kPlain, L.qkv));
    } else {
        LAZYLLM_ASSIGN_OR_RETURN(auto wq, read(names::kAttnQ, {E, Q}));
        LAZYLLM_ASSIGN_OR_RETURN(auto wk, read(names::kAttnK, {E, KV}));
        LAZYLLM_ASSIGN_OR_RETURN(auto wv, read(names::kAttnV, {E, KV}));
        std::vector<float> bias;
        if (c.qkv_bias) {
            LAZYLLM_ASSIGN_OR_RETURN(auto bq, read(names::kAttnQBias, {Q}));
            LAZYLLM_ASSIGN_OR_RETURN(auto bk, read(names::kAttnKBias, {KV}));
            LAZYLLM_ASSIGN_OR_RETURN(auto bv, read(names::kAttnVBias, {KV}));
            bias = concat_rows({&bq, &bk, &bv});
        }
        LAZYLLM_TRY(make_linear(name("attn_qkv"),
                                {name(names::kAttnQ), name(names::kAttnK), name(names::kAttnV)},
                                concat_rows({&wq, &wk, &wv}), Q + 2 * KV, E,
                                c.qkv_bias ? bias.data() : nullptr, kernels::GemmLayout::kPlain,
                                L.qkv));
    }
    {
        LAZYLLM_ASSIGN_OR_RETURN(auto wo, read(names::kAttnOutput, {Q, E}));
        LAZYLLM_TRY(make_linear(name(names::kAttnOutput), {name(names::kAttnOutput)}, wo, E, Q,
                                nullptr, kernels::GemmLayout::kPlain, L.wo));
    }
    if (c.arch == Arch::kPhi3) {
        LAZYLLM_ASSIGN_OR_RETURN(auto wgu, read(names::kFfnUp, {E, 2 * F}));
        LAZYLLM_TRY(make_linear(name(names::kFfnUp), {name(names::kFfnUp)}, wgu, 2 * F, E,
                                nullptr, kernels::GemmLayout::kSwiGlu, L.gate_up));
    } else {
        LAZYLLM_ASSIGN_OR_RETURN(auto wg, read(names::kFfnGate, {E, F}));
        LAZYLLM_ASSIGN_OR_RETURN(auto wu, read(names::kFfnUp, {E, F}));
        LAZYLLM_TRY(make_linear(name("ffn_gate_up"), {name(names::kFfnGate), name(names::kFfnUp)},
                                concat_rows({&wg, &wu}), 2 * F, E, nullptr,
                                kernels::GemmLayout::kSwiGlu, L.gate_up));
    }
    {
        LAZYLLM_ASSIGN_OR_RETURN(auto wd, read(names::kFfnDown, {F, E}));
        LAZYLLM_TRY(make_linear(name(names::kFfnDown), {name(names::kFfnDown)}, wd, E, F,
                                nullptr, kernels::GemmLayout::kPlain, L.down));
    }
    return {};
}

Status LlamaModel::make_linear(std::string_view what, std::initializer_list<std::string> tensors,
                               const std::vector<float>& w, int64_t n_out, int64_t n_in,
                               const float* bias, kernels::GemmLayout layout, Linear& out) const {
    auto p = kernels::PackedLinear::create(opts_.ctx, w.data(), n_out, n_in, bias, opts_.precision,
                                           layout);
    if (!p.ok()) return p.error().with_context(std::string(what));
    out.gemm = std::move(p).value();
    if (!quantized_decode_) return {};
    auto q = make_quant(opts_.ctx, gguf_, tensors, w, n_in, bias);
    if (!q.ok()) return q.error().with_context(std::string(what));
    out.quant = std::move(q).value();
    return {};
}

bool LlamaModel::gemm_bf16() const { return lm_head_.gemm.is_bf16(); }

size_t LlamaModel::weight_bytes() const {
    // The QuantLinear copies count 0 bytes when empty (no quantized decode).
    size_t total = lm_head_.weight_bytes() + output_norm_.size() * sizeof(float);
    for (const auto& L : layers_) {
        total += L.qkv.weight_bytes() + L.wo.weight_bytes() + L.gate_up.weight_bytes() +
                 L.down.weight_bytes() +
                 (L.attn_norm.size() + L.ffn_norm.size() + L.q_norm.size() + L.k_norm.size() +
                  L.post_attn_norm.size() + L.post_ffn_norm.size()) *
                     sizeof(float);
    }
    return total;
}

}  // namespace lazyllm
