// Quantized linear layer for decode (few activation rows): y[m, n_out] = x[m, n_in] . W^T
// (+ bias) with W kept in 4- or 8-bit GGML blocks, so a decode step streams ~0.6 bytes per
// weight (Q4_1) instead of bf16's 2.
//
// The math is llama.cpp's q4_1 x q8_1 vec_dot (ggml-cpu/quants.c) done our own way: each
// activation row is quantized once per forward() to int8 in blocks of 32 with an fp32 scale
// d = amax / 127 (and the block sum, for the formats' offset or min term); each block's dot
// product is an exact int32 sum, scaled by d_w * d_x in fp32. Weights are repacked at load so
// that 16 output rows are interleaved per block: one AVX-512 VNNI vpdpbusd multiplies 4
// weights of each of the 16 rows by the same 4 activations (broadcast), leaving one int32 lane
// per output row, with no horizontal sums. For m > 1 the activation rows are looped inside
// the weight loop, so the weights are streamed once for up to 8 rows.
//
// The model never names the ISA: it passes a KernelContext. Without VNNI (or with
// ctx.isa < kAvx512) forward() runs AVX2 kernels on the same layout (vpmaddubsw with exact
// int16 partial sums, qgemv_avx2.cpp), and without AVX2 (or with ctx.isa = kRef) the scalar
// reference, correct but slow; has_fast_path() tells the model whether QuantLinear beats
// PackedLinear on this machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "kernels/cpu.h"
#include "lazyllm/ggml_type.h"
#include "lazyllm/result.h"

namespace lazyllm::kernels {

// What a QuantLinear::forward call's rows are, which decides the kernels where there is a
// choice.
enum class QuantRows {
    kDecode,  // int8 activations per 32-block on every CPU
    kPrompt,  // prompt rows: calls of kTileMinRows or more on AMX tiles where has_tile_path(),
              // else kDecode's kernels
    kPromptOutliers,  // as kPrompt; off the tiles, each row's outlier channels kept exact
    kPromptTiles,     // rows of a prompt step of kTileMinRows rows or more: on AMX tiles where
                      // has_tile_path() whatever m (a step's short calls: the rows that go on
                      // at its last layer, its pruned stages), else as kPrompt
};

// Prompt calls of at least this many rows run on AMX tiles (has_tile_path). A tile call
// dequantizes every weight once, whatever m; the int8 kernels cost in proportion to m, and
// below this many rows they are the faster ones (bench/qgemv_bench.cpp, BM_QuantLinearPrompt;
// docs/benchmarks/amx_xeon.md, "Models of 0.5B-8B on their blocks (AMX tiles)").
inline constexpr int64_t kTileMinRows = 64;

class QuantLinear {
public:
    // One GGUF matrix: [n_out, n_in] row-major blocks (GGUF ne[0] = n_in) of `type`. Only read
    // during create(): the weights are repacked into QuantLinear's own memory.
    struct Part {
        GgmlType type;
        const uint8_t* data;
        int64_t n_out;
    };

    // Stacks `parts` along n_out (fused q|k|v, gate|up), each of a type supports() takes;
    // parts of another type than the first are stored as layers of their own, run one after
    // the other into their columns of y. n_in must be a multiple of 32 (of 256 for the
    // K-quants). `bias`: [sum of n_out] or nullptr.
    static Result<QuantLinear> create(const KernelContext& ctx, std::span<const Part> parts,
                                      int64_t n_in, const float* bias = nullptr);
    // Any weight type through fp32: `w` [n_out, n_in] is requantized to Q8_0 blocks (fp16
    // scale per 32 weights, as ggml's quantize_row_q8_0), so every model gets an 8-bit decode
    // path. n_in must be a multiple of 32.
    static Result<QuantLinear> create_from_f32(const KernelContext& ctx, const float* w,
                                               int64_t n_out, int64_t n_in,
                                               const float* bias = nullptr);
    // As create_from_f32, with the fp32 rows made one at a time by `row(r, dst)` (dst: n_in
    // floats), so only one row per thread exists at once. `row` is called from several
    // threads, once per row; its first error is returned.
    using RowSource = std::function<Status(int64_t r, float* dst)>;
    static Result<QuantLinear> create_from_rows(const KernelContext& ctx, int64_t n_out,
                                                int64_t n_in, const RowSource& row,
                                                const float* bias = nullptr);
    // True when forward() runs SIMD kernels for this context: AVX-512 VNNI (CPU has VNNI and
    // ctx.isa >= kAvx512), else AVX2 (CPU has AVX2 + FMA + F16C and ctx.isa >= kAvx2); both
    // measured faster than PackedLinear's GEMM for decode rows (bench/qgemv_bench.cpp).
    // Otherwise forward() runs the scalar reference.
    static bool has_fast_path(const KernelContext& ctx);
    // True when that fast path is the AVX-512 VNNI one.
    static bool has_vnni_path(const KernelContext& ctx);
    // True when, beside it, prompt rows (QuantRows::kPrompt and kPromptOutliers from
    // kTileMinRows rows, kPromptTiles at any m) run on AMX bf16 tiles: x and the
    // weights (dequantized a chunk at a time into L2) rounded to bf16, fp32 sums, as
    // PackedLinear's bf16 GEMM; decode rows keep the int8 kernels. The VNNI path, ctx.isa
    // allowing AMX, and a CPU with AMX bf16 that lets this process use it.
    static bool has_tile_path(const KernelContext& ctx);
    // Whether calls of m rows of this kind take the AMX tiles where has_tile_path(): kPromptTiles
    // at any m, kPrompt and kPromptOutliers from kTileMinRows rows.
    static bool tile_rows(QuantRows rows, int64_t m);
    // Types create() takes directly, each with GGML's own values: Q4_0, Q4_1, Q5_0, Q5_1,
    // Q8_0, and the K-quants Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS with their scales per
    // 256-element super-block and per-block multipliers (3.625, 4.625, 5.625, 6.625 and 4.625
    // bits per weight stored, qgemv_isa.h), and IQ4_NL with its fp16 scale per block and its
    // indexes into IQ4_XS's grid (4.5 bits).
    static bool supports(GgmlType type);

    QuantLinear();
    QuantLinear(QuantLinear&&) noexcept;
    QuantLinear& operator=(QuantLinear&&) noexcept;
    ~QuantLinear();

    int64_t n_in() const;
    int64_t n_out() const;
    // Bytes of packed weights (quants and scales, with the last group's padding rows), which
    // is what one forward() streams.
    size_t weight_bytes() const;
    // The GGML type the weights (the first part's rows) are stored in (Q8_0 after
    // create_from_f32).
    GgmlType type() const;
    bool uses_fast_path() const;

    // As PackedLinear::forward. x: [m, n_in] fp32 rows with leading dimension ldx (>= n_in,
    // 0 = n_in); y: [m, n_out] fp32 with leading dimension ldy (>= n_out, 0 = n_out); x and y
    // must not overlap. accumulate: y += x W^T (+ bias). Runs on the ctx.n_threads given to
    // create() (OpenMP over groups of 16 output rows; from 16 rows on, the int8 rounding of x
    // too, over its rows). Thread-safe; the activation scratch comes from ws (workspace.h;
    // without one, a temporary one per call) and grows only, so steady-state calls allocate
    // nothing. Every row's output depends on that row of x alone, and on `rows`, not on m.
    // rows: kPrompt and kPromptOutliers calls of kTileMinRows rows or more, and kPromptTiles
    // calls of any size, run on AMX bf16 tiles where the context has them (has_tile_path); a
    // row's result is then the same in any such call, as it is in any call on the int8 kernels
    // (a prompt split into steps on the same side of kTileMinRows gives the same results). Off the
    // tiles, kPromptOutliers keeps each row's outlier channels (those above 12 times the row's mean
    // |x|, at most 8, the largest) out of its int8 blocks and adds them after the int8 product as
    // exact fp32 terms, x[r, c] times the dequantized column c (kept for up to 64 channels per
    // layer); see qgemv_outliers.h. The model asks for them on the prompt rows of q|k|v and
    // gate|up.
    void forward(const float* x, int64_t m, float* y, int64_t ldx = 0, int64_t ldy = 0,
                 bool accumulate = false, Workspace* ws = nullptr,
                 QuantRows rows = QuantRows::kDecode) const;
    // Weight (n, c) as GGML dequantizes it (0 <= n < n_out, 0 <= c < n_in).
    float weight(int64_t n, int64_t c) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace lazyllm::kernels
