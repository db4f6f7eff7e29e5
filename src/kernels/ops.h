// Row-wise operators of the Llama-family forward: RMSNorm, RoPE, SwiGLU/GeGLU, residual add,
// softmax-free helpers. Each has a scalar reference (namespace ref) and a vectorized variant
// chosen by ctx.isa; the vectorized ones are tested against the reference.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cpu.h"

namespace lazyllm::kernels {

// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w   (x, y: [n_rows, n], may alias)
void rms_norm(const KernelContext& ctx, const float* x, const float* w, float* y, int64_t n_rows,
              int64_t n, float eps);

// Per-head RMSNorm in place (QK-norm: Qwen3, Gemma 3): each of the n_heads heads of head_dim
// elements of each row (x: [n_rows, row_stride], head h at h*head_dim) is normalized and
// scaled by the shared weight w [head_dim].
void rms_norm_heads(const KernelContext& ctx, float* x, int64_t row_stride, int64_t n_rows,
                    int n_heads, int head_dim, const float* w, float eps);

// Gated FFN activations: out[r, i] = act(gate_up[r, i]) * gate_up[r, n_ff + i] (gate_up:
// [n_rows, 2 n_ff] from one fused GEMM, out: [n_rows, n_ff]), act = silu (SwiGLU: Llama, Qwen,
// Phi-3) or GELU's tanh approximation (GeGLU: Gemma). glu_bf16 writes out as bf16.
enum class GluAct { kSilu, kGeluTanh };
void glu(const KernelContext& ctx, GluAct act, const float* gate_up, float* out, int64_t n_rows,
         int64_t n_ff);
void glu_bf16(const KernelContext& ctx, GluAct act, const float* gate_up, uint16_t* out,
              int64_t n_rows, int64_t n_ff);

// rms_norm writing bf16 (raw bits, round to nearest even) for PackedLinear::forward_bf16, as
// glu_bf16: the same math in fp32, only the final store rounded.
void rms_norm_bf16(const KernelContext& ctx, const float* x, const float* w, uint16_t* y,
                   int64_t n_rows, int64_t n, float eps);

// x[i] += y[i]
void add_inplace(const KernelContext& ctx, float* x, const float* y, int64_t n);

// RoPE rotation tables: cos/sin for every position below n_ctx and every rotated pair.
// Pair frequency i: theta^(-2i/n_rot) / freq_factors[i] (Llama 3 scaling passes factors).
enum class RopeMode {
    kNorm,  // rotate adjacent pairs (x[2i], x[2i+1]): llama GGUFs (Q/K permuted by convert)
    kNeox,  // rotate halves (x[i], x[i + n_rot/2]): qwen2, gemma
};
// Rows are made on first use, kFillRows positions at a time (ensure(), called by rope()), so
// a table over a 128k-token training context holds only the positions runs have reached: all
// of it would take 32 MiB for Llama 3.2 1B and as long to compute as a short prompt's prefill.
class RopeTable {
public:
    static constexpr int64_t kFillRows = 1024;

    RopeTable() = default;
    RopeTable(int64_t n_ctx, int n_rot, float theta, const std::vector<float>& freq_factors = {});
    int n_rot() const { return n_rot_; }
    int64_t n_ctx() const { return n_ctx_; }
    // Makes the rows of positions below n (<= n_ctx) that are not made yet; thread-safe, and
    // cheap once they are.
    void ensure(int64_t n) const;
    // The rows of `pos`, once ensure(pos + 1) has returned.
    const float* cos_row(int32_t pos) const {
        return cos_.get() + static_cast<int64_t>(pos) * (n_rot_ / 2);
    }
    const float* sin_row(int32_t pos) const {
        return sin_.get() + static_cast<int64_t>(pos) * (n_rot_ / 2);
    }

private:
    int64_t n_ctx_ = 0;
    int n_rot_ = 0;
    std::vector<double> freq_;                  // [n_rot/2]
    std::unique_ptr<float[]> cos_, sin_;        // [n_ctx, n_rot/2], untouched until made
    std::unique_ptr<std::once_flag[]> filled_;  // one per kFillRows rows
};

// Rotates, in place, the first n_rot dims of each of n_heads heads of each row.
// x: [n_rows, row_stride], head h at h*head_dim; pos: [n_rows], each < table.n_ctx().
void rope(const KernelContext& ctx, const RopeTable& table, RopeMode mode, float* x,
          const int32_t* pos, int64_t n_rows, int64_t row_stride, int n_heads, int head_dim);

// work over blocks of [0, n_rows) (rows of about row_elems floats of work each), in one
// parallel region of ctx.n_threads: for row-local work made of several kernels, which it runs
// single-threaded on its block, in place of one region per kernel.
void parallel_rows(const KernelContext& ctx, int64_t n_rows, int64_t row_elems,
                   const RowsDone& work);

namespace ref {
void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps);
void swiglu(const float* gate_up, float* out, int64_t n_rows, int64_t n_ff);
void add_inplace(float* x, const float* y, int64_t n);
void rms_norm_bf16(const float* x, const float* w, uint16_t* y, int64_t n_rows, int64_t n,
                   float eps);
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as torch's gelu(approximate="tanh").
float gelu_tanh(float x);
void glu(GluAct act, const float* gate_up, float* out, int64_t n_rows, int64_t n_ff);
void glu_bf16(GluAct act, const float* gate_up, uint16_t* out, int64_t n_rows, int64_t n_ff);
void rope(const RopeTable& table, RopeMode mode, float* x, const int32_t* pos, int64_t n_rows,
          int64_t row_stride, int n_heads, int head_dim);
}  // namespace ref

}  // namespace lazyllm::kernels
