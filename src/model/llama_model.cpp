// Loading: validate every tensor's shape against the config; keep each matrix as QuantLinear's
// repacked 4/8-bit blocks where QuantLinear has a fast path (AVX-512 VNNI or AVX2), and unless
// prefill runs on those too (PrefillWeights), a copy in the GEMM's layout (bf16 on
// AMX/AVX-512-BF16, else fp32). A converted tensor's pages of the mapped file are released. The
// token embedding stays quantized in the mmap and is dequantized per looked-up row.
#include "model/llama_model.h"

#include <utility>

#include "base/check.h"
#include "base/timer.h"
#include "kernels/quant.h"
#include "lazyllm/memory.h"
#include "model/tensor_names.h"

namespace lazyllm {

namespace {

// The tensor `name`, checked to have `shape` (GGUF order, ne[0] first).
Result<const GgufTensorInfo*> find_checked(const GgufFile& gguf, const std::string& name,
                                           const std::vector<int64_t>& shape) {
    const GgufTensorInfo* t = gguf.find_tensor(name);
    if (t == nullptr) return make_error(ErrorCode::kNotFound, "missing tensor '{}'", name);
    if (t->shape != shape) {
        return make_error(ErrorCode::kCorrupt, "tensor '{}' has shape [{}], expected [{}]", name,
                          fmt::join(t->shape, ", "), fmt::join(shape, ", "));
    }
    return t;
}

// Dequantizes tensor t into out[0, n_elements).
Status dequantize_tensor(const GgufFile& gguf, const GgufTensorInfo& t, kernels::Isa isa,
                         float* out) {
    Status st = kernels::dequantize_row_f32(isa, t.type, gguf.tensor_data(t), out,
                                            static_cast<int64_t>(t.n_elements()));
    if (!st.ok()) return st.error().with_context(fmt::format("tensor '{}'", t.name));
    return {};
}

Result<std::vector<float>> read_tensor_f32(const GgufFile& gguf, const std::string& name,
                                           const std::vector<int64_t>& shape, kernels::Isa isa) {
    LAZYLLM_ASSIGN_OR_RETURN(const GgufTensorInfo* t, find_checked(gguf, name, shape));
    std::vector<float> out(t->n_elements());
    LAZYLLM_TRY(dequantize_tensor(gguf, *t, isa, out.data()));
    return out;
}

// Bytes of one row of n elements of a type whose blocks divide n.
size_t row_bytes(const GgmlTypeTraits& t, int64_t n) {
    return static_cast<size_t>(n / t.block_size) * t.type_size;
}

// Row r of the parts stacked along n_out, as fp32 (n_in floats).
Status dequantize_stacked_row(const std::vector<const GgufTensorInfo*>& infos,
                              const std::vector<kernels::QuantLinear::Part>& parts, int64_t r,
                              int64_t n_in, kernels::Isa isa, float* dst) {
    for (size_t i = 0; i < parts.size(); ++i) {
        if (r >= parts[i].n_out) {
            r -= parts[i].n_out;
            continue;
        }
        const auto traits = ggml_type_traits(static_cast<uint32_t>(parts[i].type));
        LAZYLLM_CHECK(traits.has_value() && n_in % traits->block_size == 0);
        Status st = kernels::dequantize_row_f32(
            isa, parts[i].type, parts[i].data + static_cast<size_t>(r) * row_bytes(*traits, n_in),
            dst, n_in);
        if (!st.ok()) return st.error().with_context(fmt::format("tensor '{}'", infos[i]->name));
        return {};
    }
    LAZYLLM_CHECK_MSG(false, "row past the stacked parts");
    return {};
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
    // Attention's products in bf16 where the linear layers' are (prefill-sized calls on AMX, or
    // AVX-512-BF16 where bf16 pays: cpu_bf16_gemm_pays); --precision f32 keeps it fp32.
    m->bf16_attention_ = kernels::gemm_uses_bf16(m->opts_.ctx, opts.precision);
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
    const int64_t E = c.n_embd;

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
    token_embd_row_bytes_ = row_bytes(*traits, E);

    LAZYLLM_ASSIGN_OR_RETURN(WeightPlan plan, plan_weights(c, opts_));
    quantized_decode_ = plan.quantized_decode;
    prefill_quant_ = plan.prefill_quant;
    prefill_tiles_ = prefill_quant_ && kernels::QuantLinear::has_tile_path(opts_.ctx);
    prefill_choice_ = std::move(plan.prefill_choice);

    layers_.resize(c.n_layer);
    for (int il = 0; il < c.n_layer; ++il) LAZYLLM_TRY(load_layer(il));
    LAZYLLM_ASSIGN_OR_RETURN(output_norm_, read_tensor_f32(gguf_, std::string(names::kOutputNorm), {E}, isa));
    LAZYLLM_TRY(load_head());
    // How far a decode step's rows (revivals included) stay on the quantized weights depends
    // on what the GEMMs they would go to are (llama_model.h); without GEMMs, all of them.
    const kernels::GemmBackend gemm =
        layers_.empty() ? kernels::GemmBackend::kOneDnn : layers_[0].gate_up.gemm.backend();
    quant_max_rows_ = prefill_quant_ || gemm == kernels::GemmBackend::kAvx2 ? kQuantMaxRowsWide
                      : gemm == kernels::GemmBackend::kAmx                  ? kQuantMaxRowsAmx
                                                                            : kQuantMaxRows;
    return {};
}

Status LlamaModel::load_head() {
    const ModelConfig& c = config_;
    const std::string name(c.tied_embeddings ? names::kTokenEmbd : names::kOutput);
    // Off the blocks path the head's one row per prompt reads the GGUF's blocks in place (fp32
    // activations, each weight dequantized exactly), where a copy would take 2 or 4 bytes a
    // weight (Gemma 3 270M's tied head: 320 MiB in bf16, 640 MiB in fp32) for one row a prompt.
    const bool in_place = !prefill_quant_;
    LAZYLLM_TRY(make_linear(name, {{name, c.n_vocab}}, c.n_embd, nullptr,
                            kernels::GemmLayout::kPlain, lm_head_, /*gemm_copy=*/!in_place));
    if (in_place) {
        const GgufTensorInfo* t = gguf_.find_tensor(name);  // make_linear checked its shape
        head_rows_ = {t->type, gguf_.tensor_data(*t), c.n_vocab, c.n_embd};
        // The type and row length checked now (no rows run), not at the first prompt.
        float unused = 0.0f;
        const Status st = kernels::gemv_rows_f32(opts_.ctx, {t->type, head_rows_.data, 0, c.n_embd},
                                                 &unused, &unused);
        if (!st.ok()) return st.error().with_context(name);
    }
    return {};
}

Result<WeightPlan> LlamaModel::plan_weights(const ModelConfig& c, const ModelLoadOptions& o) {
    const int64_t E = c.n_embd, Q = c.n_embd_q(), KV = c.n_embd_kv(), F = c.n_ff;
    WeightPlan plan;
    // (--prefill-weights quant asks for them on any ISA: the scalar reference without one.)
    plan.quantized_decode = o.quantized_decode && o.precision != kernels::GemmPrecision::kF32 &&
                            (kernels::QuantLinear::has_fast_path(o.ctx) ||
                             o.prefill_weights == PrefillWeights::kQuant) &&
                            E % 32 == 0 && Q % 32 == 0 && F % 32 == 0;
    switch (o.prefill_weights) {
        case PrefillWeights::kCopy:
            break;
        case PrefillWeights::kQuant:
            if (!plan.quantized_decode) {
                return make_error(
                    ErrorCode::kUnsupported,
                    "prefill weights 'quant' need the quantized weights, which this run does not "
                    "have ({})",
                    o.precision == kernels::GemmPrecision::kF32 ? "precision f32 is exact"
                    : !o.quantized_decode                       ? "decode weights 'gemm'"
                                          : "n_embd, n_embd_q or n_ff is not a multiple of 32");
            }
            plan.prefill_quant = true;
            plan.prefill_choice = "quant (asked)";
            return plan;
        case PrefillWeights::kAuto:
            break;
    }
    // The copies' size against the memory available now: copies that cannot fit are refused;
    // kAuto takes them only within half of it, leaving the rest to the KV cache, the
    // activations and the rest of the machine.
    // (The LM head has no copy: its one row a prompt reads the blocks in place, load_head.)
    const bool bf16 = kernels::gemm_uses_bf16(o.ctx, o.precision);
    const double elems =
        static_cast<double>(c.n_layer) * static_cast<double>(E * (Q + 2 * KV) + Q * E + 3 * F * E);
    const double copy_bytes = elems * (bf16 ? 2.0 : 4.0);
    const double available =
        static_cast<double>(o.available_memory > 0 ? o.available_memory : available_memory_bytes());
    const double mib = 1024.0 * 1024.0;
    if (available > 0.0 && copy_bytes > available) {
        if (o.prefill_weights == PrefillWeights::kCopy || !plan.quantized_decode) {
            return make_error(ErrorCode::kOutOfRange,
                              "the prefill weight copies would take {:.0f} MiB, more than the "
                              "{:.0f} MiB of memory available{}",
                              copy_bytes / mib, available / mib,
                              plan.quantized_decode ? "; --prefill-weights quant runs on the "
                                                      "GGUF's blocks"
                                                    : "");
        }
    }
    if (o.prefill_weights == PrefillWeights::kCopy) {
        plan.prefill_choice = "copy (asked)";
        return plan;
    }
    if (!plan.quantized_decode) {
        plan.prefill_choice = "copy (no quantized weights on this run)";
        return plan;
    }
    // Without bf16 GEMMs the copies are fp32, and past kFp32CopyLimit (a model of about 335M
    // layer parameters) the blocks win on every count but exactness: on AVX2 (Zen 3) the int8
    // kernels prefill 1.6x faster at 1B and load 6x faster from a fifth of the memory, and as
    // fast as the fp32 copies at 0.5B from a quarter of it (docs/benchmarks/zen3.md). With bf16
    // GEMMs on oneDNN (AVX-512-BF16, no AMX), the VNNI int8 kernels prefill 1.13-1.48x faster
    // than the bf16 copies from 0.5B to 1B on Zen 4 and load 15-60x faster. The default model's
    // copies (203 MiB) keep its prefill on the measured bf16 path: its int8 prefill agrees with it
    // on 99% of first tokens (Zen 4), with the fp32 path on 144 of 144 (Zen 3; docs/evaluation.md,
    // int8 prefill), at ten times bf16's KL to fp32.
    const bool fp32_big = !bf16 && copy_bytes > kFp32CopyLimit;
    // With AMX the blocks' prompt rows run on bf16 tiles, a chunk of weights dequantized at a
    // time (QuantLinear::has_tile_path): as fast as the copies from 0.5B up (Qwen2.5-0.5B Q8_0
    // and Llama-3.2-1B Q4_K_M shapes at 512-2k, within noise), 1.35x slower on the default
    // model, whose copies run fused GEMM stages. Without AMX on the CPU at all, the VNNI int8
    // kernels (with LAZYLLM_ISA=avx512 on an AMX machine oneDNN still runs its bf16 GEMMs on
    // the tile unit).
    const bool blocks_fast =
        kernels::QuantLinear::has_tile_path(o.ctx) ||
        (o.ctx.isa == kernels::Isa::kAvx512 &&
         !kernels::isa_supported(kernels::Isa::kAmx, kernels::detect_cpu_features()) &&
         kernels::QuantLinear::has_vnni_path(o.ctx));
    const bool bf16_big = bf16 && blocks_fast && copy_bytes > kBf16CopyLimit;
    plan.prefill_quant = (available > 0.0 && copy_bytes > 0.5 * available) || fp32_big || bf16_big;
    plan.prefill_choice =
        fmt::format("{} (auto: {}copies {:.0f} MiB{}, memory available {:.0f} MiB)",
                    plan.prefill_quant ? "quant" : "copy", fp32_big ? "fp32 " : "",
                    copy_bytes / mib, bf16_big ? " over the blocks' limit" : "", available / mib);
    return plan;
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
    const kernels::GemmLayout plain = kernels::GemmLayout::kPlain;
    if (c.arch == Arch::kPhi3) {
        // Fused tensors as convert_hf_to_gguf.py writes Phi-3: attn_qkv = [q; k; v] rows,
        // ffn_up = [gate; up] rows (HF's gate_up_proj, chunked gate first).
        LAZYLLM_TRY(make_linear(name(names::kAttnQkv), {{name(names::kAttnQkv), Q + 2 * KV}}, E,
                                nullptr, plain, L.qkv));
    } else {
        std::vector<float> bias;
        if (c.qkv_bias) {
            LAZYLLM_ASSIGN_OR_RETURN(auto bq, read(names::kAttnQBias, {Q}));
            LAZYLLM_ASSIGN_OR_RETURN(auto bk, read(names::kAttnKBias, {KV}));
            LAZYLLM_ASSIGN_OR_RETURN(auto bv, read(names::kAttnVBias, {KV}));
            bias = concat_rows({&bq, &bk, &bv});
        }
        LAZYLLM_TRY(make_linear(
            name("attn_qkv"),
            {{name(names::kAttnQ), Q}, {name(names::kAttnK), KV}, {name(names::kAttnV), KV}}, E,
            c.qkv_bias ? bias.data() : nullptr, plain, L.qkv));
    }
    LAZYLLM_TRY(make_linear(name(names::kAttnOutput), {{name(names::kAttnOutput), E}}, Q, nullptr,
                            plain, L.wo));
    if (c.arch == Arch::kPhi3) {
        LAZYLLM_TRY(make_linear(name(names::kFfnUp), {{name(names::kFfnUp), 2 * F}}, E, nullptr,
                                kernels::GemmLayout::kSwiGlu, L.gate_up));
    } else {
        LAZYLLM_TRY(make_linear(name("ffn_gate_up"),
                                {{name(names::kFfnGate), F}, {name(names::kFfnUp), F}}, E, nullptr,
                                kernels::GemmLayout::kSwiGlu, L.gate_up));
    }
    LAZYLLM_TRY(make_linear(name(names::kFfnDown), {{name(names::kFfnDown), E}}, F, nullptr, plain,
                            L.down));
    return {};
}

Status LlamaModel::make_linear(std::string_view what, std::initializer_list<MatrixPart> parts,
                               int64_t n_in, const float* bias, kernels::GemmLayout layout,
                               Linear& out, bool gemm_copy) const {
    const kernels::Isa isa = opts_.ctx.isa;
    std::vector<const GgufTensorInfo*> infos;
    std::vector<kernels::QuantLinear::Part> qparts;
    int64_t n_out = 0;
    bool direct = true;  // QuantLinear takes the blocks as they are
    for (const MatrixPart& p : parts) {
        LAZYLLM_ASSIGN_OR_RETURN(const GgufTensorInfo* t,
                                 find_checked(gguf_, p.name, {n_in, p.rows}));
        direct = direct && kernels::QuantLinear::supports(t->type);
        qparts.push_back({t->type, gguf_.tensor_data(*t), p.rows});
        infos.push_back(t);
        n_out += p.rows;
    }
    std::vector<float> w;  // [n_out, n_in] fp32, the parts stacked, read once when needed
    const auto read_f32 = [&]() -> Status {
        if (!w.empty()) return {};
        w.resize(static_cast<size_t>(n_out * n_in));
        float* dst = w.data();
        for (const GgufTensorInfo* t : infos) {
            LAZYLLM_TRY(dequantize_tensor(gguf_, *t, isa, dst));
            dst += t->n_elements();
        }
        return {};
    };
    const auto fail = [&](const Error& e) -> Status { return e.with_context(std::string(what)); };
    if (!prefill_quant_ && gemm_copy) {
        LAZYLLM_TRY(read_f32());
        auto p = kernels::PackedLinear::create(opts_.ctx, w.data(), n_out, n_in, bias,
                                               opts_.precision, layout);
        if (!p.ok()) return fail(p.error());
        out.gemm = std::move(p).value();
    }
    if (quantized_decode_) {
        Result<kernels::QuantLinear> q =
            direct ? kernels::QuantLinear::create(opts_.ctx, qparts, n_in, bias)
                   : make_error(ErrorCode::kUnsupported, "not taken directly");
        // Types QuantLinear does not take: Q8_0
        // requantized from fp32, from the copy where one was read, else a row at a time (a
        // 128k x 2048 tied head would otherwise pass through 1 GiB of fp32 at load).
        if (!q.ok() && q.error().code() == ErrorCode::kUnsupported) {
            q = !w.empty()
                    ? kernels::QuantLinear::create_from_f32(opts_.ctx, w.data(), n_out, n_in, bias)
                    : kernels::QuantLinear::create_from_rows(
                          opts_.ctx, n_out, n_in,
                          [&](int64_t r, float* dst) {
                              return dequantize_stacked_row(infos, qparts, r, n_in, isa, dst);
                          },
                          bias);
        }
        if (!q.ok()) return fail(q.error());
        out.quant = std::move(q).value();
    }
    // (Blocks that prompts read in place stay mapped: they would fault back in at the first.)
    if (gemm_copy) {
        for (const GgufTensorInfo* t : infos) gguf_.release_tensor_pages(*t);
    }
    return {};
}

bool LlamaModel::gemm_bf16() const { return layers_.front().qkv.gemm.is_bf16(); }

kernels::KvType LlamaModel::kv_type() const {
    // f16 wherever prefill is not the exact fp32 path (--precision f32): the attention tiles
    // read K/V from fp32 copies made once per call, so f16 rows cost a prefill nothing, and
    // decode reads half the bytes (auto's fp32 GEMMs on a Xeon model 207: with AVX-512 a full
    // prefill at 4k-8k 1.17-1.3x faster than with fp32 rows; with LAZYLLM_ISA=avx2 prefill at
    // 2k-4k equal or faster and decode 1.27-1.37x faster at 4k).
    const bool f16 = prefill_quant_ || opts_.precision != kernels::GemmPrecision::kF32;
    return f16 ? kernels::KvType::kF16 : kernels::KvType::kF32;
}

size_t LlamaModel::weight_bytes() const {
    // The QuantLinear copies count 0 bytes when empty (no quantized decode).
    // The head's blocks read in place count too: every prompt's logits touch all of them.
    size_t total = lm_head_.weight_bytes() + output_norm_.size() * sizeof(float);
    if (head_rows_.data != nullptr) {
        total +=
            static_cast<size_t>(head_rows_.n_out) *
            row_bytes(*ggml_type_traits(static_cast<uint32_t>(head_rows_.type)), head_rows_.n_in);
    }
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
