// Scalar reference of the row-wise operators: the definition every vectorized variant is
// tested against. Formulas follow HF transformers' modeling_llama.py (LlamaRMSNorm, silu MLP,
// rotary embedding), modeling_gemma3.py (gelu_pytorch_tanh MLP, per-head QK-norm) and
// llama.cpp's ggml_rope (GGML_ROPE_TYPE_NORM / NEOX pair layouts).
#include <cmath>
#include <vector>

#include "kernels/ops.h"
#include "kernels/ops_isa.h"

namespace lazyllm::kernels::ref {

void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) {
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        float sum_sq = 0.0f;  // fp32 accumulation, as HF (hidden_states.to(float32).pow(2).mean)
        for (int64_t i = 0; i < n; ++i) sum_sq += xr[i] * xr[i];
        const float inv = 1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps);
        for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * inv * w[i];
    }
}

void swiglu(const float* gate_up, float* out, int64_t n_rows, int64_t n_ff) {
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* g = gate_up + r * 2 * n_ff;
        const float* u = g + n_ff;
        float* o = out + r * n_ff;
        for (int64_t i = 0; i < n_ff; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    }
}

void rms_norm_bf16(const float* x, const float* w, uint16_t* y, int64_t n_rows, int64_t n,
                   float eps) {
    std::vector<float> row(n);  // [n] (reference only)
    for (int64_t r = 0; r < n_rows; ++r) {
        rms_norm(x + r * n, w, row.data(), 1, n, eps);
        for (int64_t i = 0; i < n; ++i) y[r * n + i] = detail::round_to_bf16(row[i]);
    }
}

float gelu_tanh(float x) {
    const float k = 0.7978845608028654f;  // sqrt(2/pi)
    return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

void glu(GluAct act, const float* gate_up, float* out, int64_t n_rows, int64_t n_ff) {
    if (act == GluAct::kSilu) {
        swiglu(gate_up, out, n_rows, n_ff);
        return;
    }
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* g = gate_up + r * 2 * n_ff;
        const float* u = g + n_ff;
        float* o = out + r * n_ff;
        for (int64_t i = 0; i < n_ff; ++i) o[i] = gelu_tanh(g[i]) * u[i];
    }
}

void glu_bf16(GluAct act, const float* gate_up, uint16_t* out, int64_t n_rows, int64_t n_ff) {
    std::vector<float> row(n_ff);  // [n_ff] (reference only)
    for (int64_t r = 0; r < n_rows; ++r) {
        glu(act, gate_up + r * 2 * n_ff, row.data(), 1, n_ff);
        for (int64_t i = 0; i < n_ff; ++i) out[r * n_ff + i] = detail::round_to_bf16(row[i]);
    }
}

void rope(const RopeTable& table, RopeMode mode, float* x, const int32_t* pos, int64_t n_rows,
          int64_t row_stride, int n_heads, int head_dim) {
    const int half = table.n_rot() / 2;
    for (int64_t r = 0; r < n_rows; ++r) {
        table.ensure(int64_t{pos[r]} + 1);
        const float* c = table.cos_row(pos[r]);
        const float* s = table.sin_row(pos[r]);
        for (int h = 0; h < n_heads; ++h) {
            float* xh = x + r * row_stride + static_cast<int64_t>(h) * head_dim;
            for (int i = 0; i < half; ++i) {
                // kNorm pairs adjacent dims; kNeox pairs dim i with dim i + n_rot/2.
                float* a = mode == RopeMode::kNorm ? xh + 2 * i : xh + i;
                float* b = mode == RopeMode::kNorm ? xh + 2 * i + 1 : xh + i + half;
                const float x0 = *a, x1 = *b;
                *a = x0 * c[i] - x1 * s[i];
                *b = x0 * s[i] + x1 * c[i];
            }
        }
    }
}

}  // namespace lazyllm::kernels::ref
