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
    r.layers_.resize(static_cast<size_t>(r.cfg_.n_layer));
    for (int il = 0; il < r.cfg_.n_layer; ++il) {
        Layer& L = r.layers_[static_cast<size_t>(il)];
        const std::string blk = "blk." + std::to_string(il) + ".";
        struct Entry {
            const char* name;
            std::vector<float>* out;
        };
        std::vector<Entry> entries = {
            {"attn_norm.weight", &L.attn_norm}, {"attn_q.weight", &L.wq},
            {"attn_k.weight", &L.wk},           {"attn_v.weight", &L.wv},
            {"attn_output.weight", &L.wo},      {"ffn_norm.weight", &L.ffn_norm},
            {"ffn_gate.weight", &L.w_gate},     {"ffn_up.weight", &L.w_up},
            {"ffn_down.weight", &L.w_down}};
        if (r.cfg_.qkv_bias) {
            entries.push_back({"attn_q.bias", &L.bq});
            entries.push_back({"attn_k.bias", &L.bk});
            entries.push_back({"attn_v.bias", &L.bv});
        }
        for (const Entry& e : entries) {
            LAZYLLM_ASSIGN_OR_RETURN(*e.out, read_f32(gguf, blk + e.name));
        }
    }
    return r;
}

std::vector<float> ReferenceForward::run(const std::vector<int32_t>& ids) const {
    const ModelConfig& c = cfg_;
    const int n = static_cast<int>(ids.size());
    const int E = c.n_embd, Q = c.n_embd_q(), KV = c.n_embd_kv(), F = c.n_ff, D = c.head_dim;
    std::vector<float> h(static_cast<size_t>(n) * E);  // [n, E]
    for (int i = 0; i < n; ++i) {
        std::copy_n(token_embd_.begin() + static_cast<int64_t>(ids[i]) * E, E, h.begin() + i * E);
    }
    std::vector<float> x(h.size()), o(h.size());              // [n, E]
    std::vector<float> q(static_cast<size_t>(n) * Q), att(q.size());  // [n, Q]
    std::vector<float> k(static_cast<size_t>(n) * KV), v(k.size());   // [n, KV]
    std::vector<float> g(static_cast<size_t>(n) * F), u(g.size());    // [n, F]
    for (const Layer& L : layers_) {
        rms(h, L.attn_norm, x, n);
        matmul(x, L.wq, q, n, E, Q);
        matmul(x, L.wk, k, n, E, KV);
        matmul(x, L.wv, v, n, E, KV);
        if (c.qkv_bias) {
            add_bias(q, L.bq, n, Q);
            add_bias(k, L.bk, n, KV);
            add_bias(v, L.bv, n, KV);
        }
        for (int i = 0; i < n; ++i) {
            for (int hh = 0; hh < c.n_head; ++hh) rope(&q[static_cast<size_t>(i) * Q + hh * D], i);
            for (int hh = 0; hh < c.n_head_kv; ++hh) rope(&k[static_cast<size_t>(i) * KV + hh * D], i);
        }
        attention(q, k, v, att, n);
        matmul(att, L.wo, o, n, Q, E);
        for (size_t t = 0; t < h.size(); ++t) h[t] += o[t];
        rms(h, L.ffn_norm, x, n);
        matmul(x, L.w_gate, g, n, E, F);
        matmul(x, L.w_up, u, n, E, F);
        for (size_t t = 0; t < g.size(); ++t) g[t] = g[t] / (1.0f + std::exp(-g[t])) * u[t];
        matmul(g, L.w_down, o, n, F, E);
        for (size_t t = 0; t < h.size(); ++t) h[t] += o[t];
    }
    rms(h, output_norm_, x, n);
    std::vector<float> logits(static_cast<size_t>(n) * c.n_vocab);  // [n, n_vocab]
    matmul(x, head_, logits, n, E, c.n_vocab);
    return logits;
}

void ReferenceForward::attention(const std::vector<float>& q, const std::vector<float>& k,
                                 const std::vector<float>& v, std::vector<float>& att,
                                 int n) const {
    const ModelConfig& c = cfg_;
    const int Q = c.n_embd_q(), KV = c.n_embd_kv(), D = c.head_dim;
    const int group = c.n_head / c.n_head_kv;
    for (int i = 0; i < n; ++i) {
        for (int hh = 0; hh < c.n_head; ++hh) {
            const int g = hh / group;
            std::vector<double> s(static_cast<size_t>(i) + 1);
            double mx = -1e300;
            for (int j = 0; j <= i; ++j) {
                double d = 0;
                for (int t = 0; t < D; ++t) {
                    d += static_cast<double>(q[static_cast<size_t>(i) * Q + hh * D + t]) *
                         k[static_cast<size_t>(j) * KV + g * D + t];
                }
                s[j] = d / std::sqrt(static_cast<double>(D));
                mx = std::max(mx, s[j]);
            }
            double z = 0;
            for (int j = 0; j <= i; ++j) z += (s[j] = std::exp(s[j] - mx));
            for (int t = 0; t < D; ++t) {
                double acc = 0;
                for (int j = 0; j <= i; ++j) acc += s[j] / z * v[static_cast<size_t>(j) * KV + g * D + t];
                att[static_cast<size_t>(i) * Q + hh * D + t] = static_cast<float>(acc);
            }
        }
    }
}

void ReferenceForward::rms(const std::vector<float>& in, const std::vector<float>& w,
                           std::vector<float>& out, int n) const {
    const int E = cfg_.n_embd;
    for (int i = 0; i < n; ++i) {
        double ss = 0;
        for (int e = 0; e < E; ++e) ss += static_cast<double>(in[i * E + e]) * in[i * E + e];
        const double r = 1.0 / std::sqrt(ss / E + cfg_.rms_eps);
        for (int e = 0; e < E; ++e) out[i * E + e] = static_cast<float>(in[i * E + e] * r * w[e]);
    }
}

void ReferenceForward::rope(float* x, int pos) const {
    const int half = cfg_.n_rot / 2;
    for (int i = 0; i < half; ++i) {
        const double freq = std::pow(static_cast<double>(cfg_.rope_theta), -2.0 * i / cfg_.n_rot);
        const double a = pos * freq, cs = std::cos(a), sn = std::sin(a);
        const int i0 = cfg_.rope_mode == kernels::RopeMode::kNorm ? 2 * i : i;
        const int i1 = cfg_.rope_mode == kernels::RopeMode::kNorm ? 2 * i + 1 : i + half;
        const double x0 = x[i0], x1 = x[i1];
        x[i0] = static_cast<float>(x0 * cs - x1 * sn);
        x[i1] = static_cast<float>(x0 * sn + x1 * cs);
    }
}

}  // namespace lazyllm
