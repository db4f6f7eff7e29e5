// A plain scalar Llama-family forward written for the tests only (no kernels, no caches):
// it reads an F32 GGUF and computes the logits of every position of a token sequence.
// Follows HF transformers' modeling_llama.py / modeling_qwen2.py on the GGUF's tensor layout:
// llama GGUFs store Q/K permuted, so RoPE rotates adjacent pairs; qwen2 rotates halves.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "kernels/quant.h"
#include "lazyllm/gguf.h"
#include "model/config.h"

namespace lazyllm::testing {

class ReferenceForward {
public:
    explicit ReferenceForward(const GgufFile& gguf) : gguf_(gguf) {
        cfg_ = ModelConfig::from_gguf(gguf).value();
    }

    // logits: [n, n_vocab], every position (causal).
    std::vector<float> run(const std::vector<int32_t>& ids) const {
        const ModelConfig& c = cfg_;
        const int n = static_cast<int>(ids.size());
        const int E = c.n_embd, Q = c.n_embd_q(), KV = c.n_embd_kv(), F = c.n_ff, D = c.head_dim;
        const auto embd = tensor("token_embd.weight");
        std::vector<float> h(static_cast<size_t>(n) * E);
        for (int i = 0; i < n; ++i)
            for (int e = 0; e < E; ++e) h[i * E + e] = embd[static_cast<size_t>(ids[i]) * E + e];
        std::vector<float> x(h.size()), q(static_cast<size_t>(n) * Q), k(static_cast<size_t>(n) * KV),
            v(static_cast<size_t>(n) * KV), att(static_cast<size_t>(n) * Q);
        for (int il = 0; il < c.n_layer; ++il) {
            auto blk = [&](const char* w) { return tensor("blk." + std::to_string(il) + "." + w); };
            rms(h, blk("attn_norm.weight"), x, n, E);
            matmul(x, blk("attn_q.weight"), q, n, E, Q);
            matmul(x, blk("attn_k.weight"), k, n, E, KV);
            matmul(x, blk("attn_v.weight"), v, n, E, KV);
            if (c.qkv_bias) {
                add_bias(q, blk("attn_q.bias"), n, Q);
                add_bias(k, blk("attn_k.bias"), n, KV);
                add_bias(v, blk("attn_v.bias"), n, KV);
            }
            for (int i = 0; i < n; ++i) {
                for (int hh = 0; hh < c.n_head; ++hh) rope(&q[static_cast<size_t>(i) * Q + hh * D], i);
                for (int hh = 0; hh < c.n_head_kv; ++hh) rope(&k[static_cast<size_t>(i) * KV + hh * D], i);
            }
            const int group = c.n_head / c.n_head_kv;
            for (int i = 0; i < n; ++i) {
                for (int hh = 0; hh < c.n_head; ++hh) {
                    const int g = hh / group;
                    std::vector<double> s(i + 1);
                    double mx = -1e300;
                    for (int j = 0; j <= i; ++j) {
                        double d = 0;
                        for (int t = 0; t < D; ++t)
                            d += static_cast<double>(q[static_cast<size_t>(i) * Q + hh * D + t]) *
                                 k[static_cast<size_t>(j) * KV + g * D + t];
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
            std::vector<float> o(h.size());
            matmul(att, blk("attn_output.weight"), o, n, Q, E);
            for (size_t t = 0; t < h.size(); ++t) h[t] += o[t];
            rms(h, blk("ffn_norm.weight"), x, n, E);
            std::vector<float> g(static_cast<size_t>(n) * F), u(static_cast<size_t>(n) * F);
            matmul(x, blk("ffn_gate.weight"), g, n, E, F);
            matmul(x, blk("ffn_up.weight"), u, n, E, F);
            for (size_t t = 0; t < g.size(); ++t) g[t] = g[t] / (1.0f + std::exp(-g[t])) * u[t];
            matmul(g, blk("ffn_down.weight"), o, n, F, E);
            for (size_t t = 0; t < h.size(); ++t) h[t] += o[t];
        }
        rms(h, tensor("output_norm.weight"), x, n, E);
        const auto head = tensor(c.tied_embeddings ? "token_embd.weight" : "output.weight");
        std::vector<float> logits(static_cast<size_t>(n) * c.n_vocab);
        matmul(x, head, logits, n, E, c.n_vocab);
        return logits;
    }

    const ModelConfig& config() const { return cfg_; }

private:
    std::vector<float> tensor(const std::string& name) const {
        const GgufTensorInfo* t = gguf_.find_tensor(name);
        if (t == nullptr) throw std::runtime_error("missing " + name);
        std::vector<float> out(t->n_elements());
        if (!kernels::ref::dequantize_row_f32(t->type, gguf_.tensor_data(*t), out.data(),
                                              static_cast<int64_t>(out.size())).ok())
            throw std::runtime_error("cannot dequantize " + name);
        return out;
    }
    void rms(const std::vector<float>& in, const std::vector<float>& w, std::vector<float>& out, int n,
             int E) const {
        for (int i = 0; i < n; ++i) {
            double ss = 0;
            for (int e = 0; e < E; ++e) ss += static_cast<double>(in[i * E + e]) * in[i * E + e];
            const double r = 1.0 / std::sqrt(ss / E + cfg_.rms_eps);
            for (int e = 0; e < E; ++e) out[i * E + e] = static_cast<float>(in[i * E + e] * r * w[e]);
        }
    }
    // out[i, o] = sum_k in[i, k] W[o, k]   (W: [n_out, n_in] = GGUF ne [n_in, n_out])
    static void matmul(const std::vector<float>& in, const std::vector<float>& w, std::vector<float>& out,
                       int n, int n_in, int n_out) {
        for (int i = 0; i < n; ++i)
            for (int o = 0; o < n_out; ++o) {
                double acc = 0;
                for (int kk = 0; kk < n_in; ++kk)
                    acc += static_cast<double>(in[static_cast<size_t>(i) * n_in + kk]) * w[static_cast<size_t>(o) * n_in + kk];
                out[static_cast<size_t>(i) * n_out + o] = static_cast<float>(acc);
            }
    }
    static void add_bias(std::vector<float>& x, const std::vector<float>& b, int n, int dim) {
        for (int i = 0; i < n; ++i)
            for (int d = 0; d < dim; ++d) x[static_cast<size_t>(i) * dim + d] += b[d];
    }
    void rope(float* x, int pos) const {
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

    const GgufFile& gguf_;
    ModelConfig cfg_;
};

}  // namespace lazyllm::testing
