// Linear layers: y[m, n_out] = x[m, n_in] . W^T (+ bias), W stored [n_out, n_in] row-major
// (GGUF ne[0] = n_in). Weights are converted once at load into the layout the GEMM wants:
// - bf16 for our own AMX kernel (gemm_amx.h) where the CPU has AMX and n_in, n_out are
//   multiples of 32: fused output stages (accumulate, bias, SwiGLU), any row count and row
//   stride without copies;
// - bf16 packed by oneDNN (format_tag::any + reorder) for other shapes on CPUs with AMX or
//   AVX-512-BF16, or everywhere when KernelContext::gemm is kOneDnn (LAZYLLM_GEMM=onednn, for
//   comparisons);
// - fp32 in panels of 16 columns for our own AVX2 + FMA kernel (gemm_avx2.h) when the
//   context ISA is avx2 (any shape; also LAZYLLM_ISA=avx2 on an AVX-512 CPU);
// - fp32 packed by oneDNN otherwise (avx512 and ref contexts, or GemmKernels::kOneDnn).
// The model never names the ISA: it passes a KernelContext.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/cpu.h"
#include "kernels/ops.h"
#include "lazyllm/result.h"

namespace lazyllm::kernels {

// Caps oneDNN's own kernels at `isa` when it is below the CPU's best (LAZYLLM_ISA=avx512 on an
// AMX CPU): oneDNN picks its ISA from the CPU, so without the cap it would run AMX there, neither
// a Zen 4's kernels nor row-invariant (Gemma 3's down projection gives a row other values in a
// call of other rows). Takes effect before oneDNN's first primitive in the process; false after
// (or where oneDNN refuses), leaving oneDNN as it was.
bool cap_onednn_isa(Isa isa);

enum class GemmPrecision {
    kAuto,  // bf16 when ctx.isa >= kAvx512 and cpu_bf16_gemm_pays(), else fp32
    kF32,   // exact reference-grade path
    kBf16,
};

enum class GemmLayout {
    kPlain,
    // w = [gate rows; up rows] ([2 n_ff, n_in]) of a SwiGLU FFN: enables forward_glu_bf16
    // as one fused GEMM on the AMX kernel. forward() and forward_bf16() still return the
    // [gate | up] columns in order.
    kSwiGlu,
};

enum class GemmBackend { kOneDnn, kAmx, kAvx2 };

class PackedLinear {
public:
    // `w`: [n_out, n_in] fp32 (dequantized). `bias`: [n_out] or nullptr.
    static Result<PackedLinear> create(const KernelContext& ctx, const float* w, int64_t n_out,
                                       int64_t n_in, const float* bias = nullptr,
                                       GemmPrecision precision = GemmPrecision::kAuto,
                                       GemmLayout layout = GemmLayout::kPlain);
    PackedLinear();
    PackedLinear(PackedLinear&&) noexcept;
    PackedLinear& operator=(PackedLinear&&) noexcept;
    ~PackedLinear();

    int64_t n_in() const;
    int64_t n_out() const;
    bool is_bf16() const;
    GemmBackend backend() const;
    size_t weight_bytes() const;

    // x: [m, n_in] fp32 rows with leading dimension ldx (>= n_in, 0 = n_in);
    // y: [m, n_out] fp32 with leading dimension ldy (>= n_out, 0 = n_out); x and y must not
    // overlap. accumulate: y += x W^T (+ bias). Allocates nothing after the first call for a
    // given m (oneDNN: primitives/scratch cached per m, ldx/ldy > row length cost one extra
    // copy; the AVX2 backend reads strided rows in place). Runs on the ctx.n_threads given to
    // create() (oneDNN: sets OpenMP's thread count for the calling thread for the duration of
    // the call and restores it). Thread-safe (oneDNN calls on one PackedLinear are serialized
    // by a mutex; the AMX and AVX2 backends keep no state across calls). Activation scratch
    // comes from ws (workspace.h; without one, a temporary one per call).
    void forward(const float* x, int64_t m, float* y, int64_t ldx = 0, int64_t ldy = 0,
                 bool accumulate = false, Workspace* ws = nullptr) const;

    // As forward(), with x already in bf16 (raw bits, [m, n_in], leading dimension ldx): for
    // producers that write bf16 directly (rms_norm_bf16, glu_bf16), which saves the fp32
    // round trip of the activations through memory. Only when is_bf16() (checked).
    // With `done`, returns true when done->fn was called for every row of [0, m) (the AMX
    // backend, when its work items span all output columns); false when it was called for
    // none, and the caller must do that work on the rows itself.
    bool forward_bf16(const uint16_t* x, int64_t m, float* y, int64_t ldx = 0, int64_t ldy = 0,
                      bool accumulate = false, const RowsDone* done = nullptr,
                      Workspace* ws = nullptr) const;

    // out[m, n_out / 2] = bf16(act(x W_gate^T) * (x W_up^T)) (SwiGLU, GeGLU) for a
    // kSwiGlu-layout linear with x in bf16 (leading dimensions ldx, ld_out; 0 = dense). One
    // fused GEMM on the AMX backend; otherwise GEMM + glu_bf16 kSwiGluChunkRows rows at a time
    // (the same result as forward_bf16 + glu_bf16 over all rows; against the fused GEMM, the
    // same up to fp32 summation order). Only when is_bf16() (checked). x and out must not
    // overlap.
    void forward_glu_bf16(GluAct act, const uint16_t* x, int64_t m, uint16_t* out, int64_t ldx = 0,
                          int64_t ld_out = 0, Workspace* ws = nullptr) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Rows per gate|up GEMM call of PackedLinear::forward_glu_bf16 off the AMX backend: its fp32
// gate|up rows ([rows, n_out]) stay in cache between the GEMM that writes them and the GLU
// that reads them (3 MiB at the default model's 3072 columns), where a whole 4k prompt's would
// be 48 MiB and go through memory (docs/benchmarks/zen5.md, "Where prefill time goes (Zen 5)").
inline constexpr int64_t kSwiGluChunkRows = 256;

// Whether PackedLinear::create(ctx, ..., precision) converts weights to bf16 (else fp32);
// false where it would fail (kBf16 without AVX-512-BF16).
bool gemm_uses_bf16(const KernelContext& ctx, GemmPrecision precision);

namespace ref {
// Plain triple loop, fp32 accumulation (the reference every fast path is tested against).
void linear(const float* x, const float* w, const float* bias, float* y, int64_t m, int64_t n_out,
            int64_t n_in);
}  // namespace ref

}  // namespace lazyllm::kernels
