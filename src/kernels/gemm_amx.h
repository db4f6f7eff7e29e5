// Our own AMX bf16 GEMM for the linear layers (used by PackedLinear where it applies).
//
// y[m, n_out] = x[m, n_in] . W^T with x bf16 row-major (any leading dimension) and W packed
// once into AMX B-tiles. The output stage is fused: store or accumulate fp32 (the residual
// add of attn_out and down), plus bias, or a gated activation (SwiGLU, GeGLU) straight to bf16
// (gate and up computed by one GEMM whose packed columns interleave gate and up 16 at a time,
// so each 32-column micro-tile holds 16 gate and the matching 16 up outputs: the fp32
// [m, 2 n_ff] gate/up buffer is never written).
//
// Packed layout, 32 columns per panel, 32 k per chunk, two 16-column halves:
//   w_packed[((p * n_chunks + c) * 2 + h) * 512 + kk * 32 + i * 2 + e]
//     = bf16(W[col_row(32 p + 16 h + i)][32 c + 2 kk + e])
// (the VNNI pair layout TDPBF16PS takes as its B operand, 1 KiB per tile).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ops.h"

namespace lazyllm::kernels {
class Workspace;  // workspace.h
}

namespace lazyllm::kernels::detail {

constexpr int64_t kAmxGemmPanel = 32;  // packed columns per panel
constexpr int64_t kAmxGemmChunk = 32;  // reduction depth per tile step
constexpr int64_t kAmxGemmRows = 32;   // rows per micro-tile (amx_pack_rows_f32's unit)

// The shape fits the kernel (n_in and n_out multiples of 32) and the CPU has AMX bf16 with
// the kernel's permission to use it.
bool amx_gemm_usable(int64_t n_in, int64_t n_out);

size_t amx_gemm_packed_elems(int64_t n_in, int64_t n_out);

// w: [n_out, n_in] fp32 row-major. Packed column j holds W row `row_of_col[j]` (nullptr:
// row j). Rounds to nearest even, like convert_rows_to_bf16_ref (gemm_convert.h).
void amx_gemm_pack(const float* w, int64_t n_in, int64_t n_out, const int64_t* row_of_col,
                   uint16_t* w_packed);

// The column order that makes a fused [gate | up] weight ([2 n_ff, n_in], gate rows first)
// run with AmxGemmOut::kGlu: out[j] for j in [0, 2 n_ff). n_ff must be a multiple of 16.
void amx_gemm_swiglu_order(int64_t n_ff, int64_t* row_of_col);

enum class AmxGemmOut {
    kStore,       // y = x W^T + bias
    kAccumulate,  // y += x W^T + bias
    kGlu,         // y16[r, 16 p + i] = bf16(act(g) * u), g = col 32 p + i, u = col 32 p + 16 + i
};

struct AmxGemmArgs {
    const uint16_t* x = nullptr;  // [m, n_in] bf16 bits, leading dimension ldx
    int64_t ldx = 0;
    int64_t m = 0;
    const uint16_t* w = nullptr;  // packed by amx_gemm_pack
    int64_t n_in = 0, n_out = 0;
    const float* bias = nullptr;  // [n_out] in packed column order, or nullptr
    AmxGemmOut out = AmxGemmOut::kStore;
    float* y = nullptr;  // kStore / kAccumulate: [m, n_out] fp32, leading dimension ldy
    int64_t ldy = 0;
    uint16_t* y16 = nullptr;  // kGlu: [m, n_out / 2] bf16 bits, leading dimension ldy16
    int64_t ldy16 = 0;
    GluAct glu_act = GluAct::kSilu;  // kGlu's act
    // If set: called as rows_done(rows_ctx, r0, r1) by the thread that computed rows
    // [r0, r1) of the output once they are final, while they are still in its cache (per
    // 32-row micro-tile or per row block, depending on the loop order); only when every work
    // item spans all output columns (amx_gemm says whether it did).
    void (*rows_done)(void* ctx, int64_t r0, int64_t r1) = nullptr;
    void* rows_ctx = nullptr;
    Workspace* ws = nullptr;  // the workers' packed rows and partial sums (null: per call)
};

// Runs on n_threads OpenMP threads. Requires amx_gemm_usable(n_in, n_out). Returns true when
// a.rows_done was called on disjoint ranges covering [0, m), each row once (false: never).
bool amx_gemm(const AmxGemmArgs& a, int n_threads);

// For callers that make the packed weights themselves, a set of panels at a time (QuantLinear's
// prompt rows on AMX, qgemv.cpp): x as fp32 rows packed once, in A-tile order, for every set.
// Elements of the packed rows of an m x n_in x (whole 32-row micro-tiles, zero padded).
size_t amx_packed_rows_elems(int64_t m, int64_t n_in);
// Micro-tiles [t0, t1) (rows [32 t0, min(m, 32 t1))) of x ([m, n_in] fp32, leading dimension
// ldx) rounded to bf16 (as convert_rows_to_bf16_ref) into their place in xpack.
void amx_pack_rows_f32(const float* x, int64_t ldx, int64_t m, int64_t n_in, int64_t t0, int64_t t1,
                       uint16_t* xpack);
// y[r, c] (+)= x[r] . W[c] (+ bias[c]) for every row r < a.m and the columns c < a.n_out of
// panels [p0, p1), held at `panels` in amx_gemm_pack's layout (panel p0 first; n_out need not
// be a multiple of 32: columns from n_out on are computed but not written). a.x and a.w are
// unused; a.out is kStore or kAccumulate; a.bias, when set, holds n_out values; a.ws must
// have had workers(n) called with n > `worker`. On the calling thread, inside or outside a
// parallel region: it loads its tile configuration and releases the tiles.
void amx_gemm_panels(const AmxGemmArgs& a, const uint16_t* xpack, const uint16_t* panels,
                     int64_t p0, int64_t p1, int worker);

// The tile unit's ceiling, for benchmarks: `iters` rounds of four independent TDPBF16PS on
// operands that stay in tile registers (no memory traffic). Returns the FLOPs done
// (iters * 4 * 16 * 16 * 32 * 2). Requires amx_permission().
double amx_tdp_loop(int64_t iters);

}  // namespace lazyllm::kernels::detail
