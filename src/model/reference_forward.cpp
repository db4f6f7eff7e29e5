#include "model/reference_forward.h"

#include <algorithm>
#include <cmath>

#include "kernels/quant.h"

namespace lazyllm {

namespace {

Result<std::vector<float>> read_f32(const GgufFile& gguf, const std::string& name) {
    const GgufTensorInfo* t = gguf.find_tensor(name);
    if (t == nullptr) return make_error(ErrorCode::kNotFound, "missing tensor '{}'", name);
    std::vector<float> out(t->n_elements());
    Status st = kernels::ref::dequantize_row_f32(t->type, gguf.tensor_data(*t), out.data(),
                                                 static_cast<int64_t>(out.size()));
    if (!st.ok()) return st.error().with_context(name);
    return out;
}

// out[i, o] = sum_k in[i, k] W[o, k]   (W: [n_out, n_in] = GGUF ne [n_in, n_out])
void matmul(const std::vector<float>& in, const std::vector<float>& w, std::vector<float>& out,
            int n, int n_in, int n_out) {
    for (int i = 0; i < n; ++i) {
        for (int o = 0; o < n_out; ++o) {
            double acc = 0;
            for (int k = 0; k < n_in; ++k) {
                acc += static_cast<double>(in[static_cast<size_t>(i) * n_in + k]) *
                       w[static_cast<size_t>(o) * n_in + k];
            }
            out[static_cast<size_t>(i) * n_out + o] = static_cast<float>(acc);
        }
    }
}

void add_bias(std::vector<float>& x, const std::vector<float>& b, int n, int dim) {
    for (int i = 0; i < n; ++i) {
        for (int d = 0; d < dim; ++d) x[static_cast<size_t>(i) * dim + d] += b[d];
    }
}

}  // namespace

Result<ReferenceForward> ReferenceForward::create(const GgufFile& gguf) {
    ReferenceForward r;
    LAZYLLM_ASSIGN_OR_RETURN(r.cfg_, ModelConfig::from_gguf(gguf));
    LAZYLLM_ASSIGN_OR_RETURN(r.token_embd_, read_f32(gguf, "token_embd.weight"));
    LAZYLLM_ASSIGN_OR_RETURN(r.output_norm_, read_f32(gguf, "output_norm.weight"));
    LAZYLLM_ASSIGN_OR_RETURN(
        r.head_, read_f32(gguf, r.cfg_.tied_embeddings ? "token_embd.weight" : "output.weight"));
    if (gguf.find_tensor("rope_freqs.weight") != nullptr) {
        LAZYLLM_ASSIGN_OR_RETURN(r.freq_factors_, read_f32(gguf, "rope_freqs.weight"));
    }
    r.layers_.resize(static_cast<size_t>(r.cfg_.n_layer));
    for (int il = 0; il < r.cfg_.n_layer; ++il) LAZYLLM_TRY(r.read_layer(gguf, il));
    return r;
}

Status ReferenceForward::read_layer(const GgufFile& gguf, int il) {
    const ModelConfig& c = cfg_;
    Layer& L = layers_[static_cast<size_t>(il)];
    const std::string blk = "blk." + std::to_string(il) + ".";
    struct Entry {
        const char* name;
        std::vector<float>* out;
    };
    std::vector<Entry> entries = {{"attn_norm.weight", &L.attn_norm},
                                  {"attn_output.weight", &L.wo},
                                  {"ffn_norm.weight", &L.ffn_norm},
                                  {"ffn_down.weight", &L.w_down}};
    std::vector<float> qkv, gate_up;  // phi3's fused tensors
    if (c.arch == Arch::kPhi3) {
        entries.push_back({"attn_qkv.weight", &qkv});
        entries.push_back({"ffn_up.weight", &gate_up});
    } else {
        entries.insert(entries.end(), {{"attn_q.weight", &L.wq},
                                       {"attn_k.weight", &L.wk},
                                       {"attn_v.weight", &L.wv},
                                       {"ffn_gate.weight", &L.w_gate},
                                       {"ffn_up.weight", &L.w_up}});
    }
    if (c.qkv_bias) {
        entries.insert(entries.end(),
                       {{"attn_q.bias", &L.bq}, {"attn_k.bias", &L.bk}, {"attn_v.bias", &L.bv}});
    }
    if (c.qk_norm) {
        entries.insert(entries.end(),
                       {{"attn_q_norm.weight", &L.q_norm}, {"attn_k_norm.weight", &L.k_norm}});
    }
    if (c.post_norms) {
        entries.insert(entries.end(), {{"post_attention_norm.weight", &L.post_attn_norm},
                                       {"post_ffw_norm.weight", &L.post_ffn_norm}});
    }
    for (const Entry& e : entries) {
        LAZYLLM_ASSIGN_OR_RETURN(*e.out, read_f32(gguf, blk + e.name));
    }
    if (c.arch == Arch::kPhi3) {  // [q; k; v] rows and [gate; up] rows
        const size_t E = c.n_embd, Q = c.n_embd_q(), KV = c.n_embd_kv(), F = c.n_ff;
        L.wq.assign(qkv.begin(), qkv.begin() + Q * E);
        L.wk.assign(qkv.begin() + Q * E, qkv.begin() + (Q + KV) * E);
        L.wv.assign(qkv.begin() + (Q + KV) * E, qkv.end());
        L.w_gate.assign(gate_up.begin(), gate_up.begin() + F * E);
        L.w_up.assign(gate_up.begin() + F * E, gate_up.end());
    }
    return {};
}

std::vector<float> ReferenceForward::run(const std::vector<int32_t>& ids) const {
    const ModelConfig& c = cfg_;
    const int n = static_cast<int>(ids.size());
    const int E = c.n_embd, Q = c.n_embd_q(), KV = c.n_embd_kv(), D = c.head_dim;
    std::vector<float> h(static_cast<size_t>(n) * E);  // [n, E]
    for (int i = 0; i < n; ++i) {
        for (int e = 0; e < E; ++e) {
            h[static_cast<size_t>(i) * E + e] =
                token_embd_[static_cast<size_t>(ids[i]) * E + e] * c.embd_scale;
        }
    }
    std::vector<float> x(h.size()), o(h.size());              // [n, E]
    std::vector<float> q(static_cast<size_t>(n) * Q), att(q.size());  // [n, Q]
    std::vector<float> k(static_cast<size_t>(n) * KV), v(k.size());   // [n, KV]
    for (int il = 0; il < c.n_layer; ++il) {
        const Layer& L = layers_[static_cast<size_t>(il)];
        rms(h, L.attn_norm, x, n, E);
        matmul(x, L.wq, q, n, E, Q);
        matmul(x, L.wk, k, n, E, KV);
        matmul(x, L.wv, v, n, E, KV);
        if (c.qkv_bias) {
            add_bias(q, L.bq, n, Q);
            add_bias(k, L.bk, n, KV);
            add_bias(v, L.bv, n, KV);
        }
        if (c.qk_norm) {  // every head of every row on its own
            rms(q, L.q_norm, q, n * c.n_head, D);
            rms(k, L.k_norm, k, n * c.n_head_kv, D);
        }
        const double theta = c.is_swa(il) ? c.rope_theta_swa : c.rope_theta;
        for (int i = 0; i < n; ++i) {
            for (int hh = 0; hh < c.n_head; ++hh) rope(&q[static_cast<size_t>(i) * Q + hh * D], i, theta);
            for (int hh = 0; hh < c.n_head_kv; ++hh) rope(&k[static_cast<size_t>(i) * KV + hh * D], i, theta);
        }
        attention(q, k, v, att, n, c.is_swa(il) ? c.sliding_window : 0);
        matmul(att, L.wo, o, n, Q, E);
        if (c.post_norms) rms(o, L.post_attn_norm, o, n, E);
        for (size_t t = 0; t < h.size(); ++t) h[t] += o[t];
        ffn(L, h, n);
    }
    rms(h, output_norm_, x, n, E);
    std::vector<float> logits(static_cast<size_t>(n) * c.n_vocab);  // [n, n_vocab]
    matmul(x, head_, logits, n, E, c.n_vocab);
    if (c.final_softcap > 0.0f) {
        for (float& l : logits) l = c.final_softcap * std::tanh(l / c.final_softcap);
    }
    return logits;
}

void ReferenceForward::ffn(const Layer& L, std::vector<float>& h, int n) const {
    const ModelConfig& c = cfg_;
    const int E = c.n_embd, F = c.n_ff;
    std::vector<float> x(h.size()), o(h.size());                     // [n, E]
    std::vector<float> g(static_cast<size_t>(n) * F), u(g.size());  // [n, F]
    rms(h, L.ffn_norm, x, n, E);
    matmul(x, L.w_gate, g, n, E, F);
    matmul(x, L.w_up, u, n, E, F);
    for (size_t t = 0; t < g.size(); ++t) {
        const double a = g[t];
        const double act = c.ffn_act == kernels::GluAct::kSilu
                               ? a / (1.0 + std::exp(-a))
                               : 0.5 * a * (1.0 + std::tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)));
        g[t] = static_cast<float>(act * u[t]);
    }
    matmul(g, L.w_down, o, n, F, E);
    if (c.post_norms) rms(o, L.post_ffn_norm, o, n, E);
    for (size_t t = 0; t < h.size(); ++t) h[t] += o[t];
}

void ReferenceForward::attention(const std::vector<float>& q, const std::vector<float>& k,
                                 const std::vector<float>& v, std::vector<float>& att, int n,
                                 int window) const {
    const ModelConfig& c = cfg_;
    const int Q = c.n_embd_q(), KV = c.n_embd_kv(), D = c.head_dim;
    const int group = c.n_head / c.n_head_kv;
    for (int i = 0; i < n; ++i) {
        const int j0 = window > 0 ? std::max(0, i - window + 1) : 0;  // first visible key
        for (int hh = 0; hh < c.n_head; ++hh) {
            const int g = hh / group;
            std::vector<double> s(static_cast<size_t>(i) + 1);
            double mx = -1e300;
            for (int j = j0; j <= i; ++j) {
                double d = 0;
                for (int t = 0; t < D; ++t) {
                    d += static_cast<double>(q[static_cast<size_t>(i) * Q + hh * D + t]) *
                         k[static_cast<size_t>(j) * KV + g * D + t];
                }
                s[j] = d * c.attn_scale;
                mx = std::max(mx, s[j]);
            }
            double z = 0;
            for (int j = j0; j <= i; ++j) z += (s[j] = std::exp(s[j] - mx));
            for (int t = 0; t < D; ++t) {
                double acc = 0;
                for (int j = j0; j <= i; ++j) acc += s[j] / z * v[static_cast<size_t>(j) * KV + g * D + t];
                att[static_cast<size_t>(i) * Q + hh * D + t] = static_cast<float>(acc);
            }
        }
    }
}

void ReferenceForward::rms(const std::vector<float>& in, const std::vector<float>& w,
                           std::vector<float>& out, int n, int dim) const {
    for (int i = 0; i < n; ++i) {
        const size_t row = static_cast<size_t>(i) * dim;
        double ss = 0;
        for (int e = 0; e < dim; ++e) ss += static_cast<double>(in[row + e]) * in[row + e];
        const double r = 1.0 / std::sqrt(ss / dim + cfg_.rms_eps);
        for (int e = 0; e < dim; ++e) out[row + e] = static_cast<float>(in[row + e] * r * w[e]);
    }
}

// Pair frequency i: theta^(-2i/n_rot), divided by the rope_freqs factor (Llama 3) and scaled
// by the linear factor (rope.scaling), as the RoPE table.
void ReferenceForward::rope(float* x, int pos, double theta) const {
    const int half = cfg_.n_rot / 2;
    for (int i = 0; i < half; ++i) {
        double freq = std::pow(theta, -2.0 * i / cfg_.n_rot);
        if (!freq_factors_.empty()) freq /= freq_factors_[i];
        if (theta == cfg_.rope_theta) freq *= cfg_.rope_freq_scale;
        const double a = pos * freq, cs = std::cos(a), sn = std::sin(a);
        const int i0 = cfg_.rope_mode == kernels::RopeMode::kNorm ? 2 * i : i;
        const int i1 = cfg_.rope_mode == kernels::RopeMode::kNorm ? 2 * i + 1 : i + half;
        const double x0 = x[i0], x1 = x[i1];
        x[i0] = static_cast<float>(x0 * cs - x1 * sn);
        x[i1] = static_cast<float>(x0 * sn + x1 * cs);
    }
}

}  // namespace lazyllm
