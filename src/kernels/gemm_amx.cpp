// AMX bf16 GEMM with fused output stages (see gemm_amx.h for the contract and layout).
//
// Micro-tile: 32 rows x 32 columns in tiles 0-3 (0: rows 0-15 x cols 0-15, 1: rows 0-15 x
// cols 16-31, 2: rows 16-31 x cols 0-15, 3: rows 16-31 x cols 16-31); A operands (x rows,
// copied into tile order by pack_rows) in tiles 4-5, B operands (packed weights) in tiles
// 6-7: four TDPBF16PS per four tile loads per 32-deep k step.
//
// Work items: a block of rows times all panels (times a group of panels when there are too
// few rows for the threads). Two loop orders inside an item:
// - panel by panel (run_item): the item first copies its rows into A-tile order (pack_rows),
//   then walks the panels; within a panel the weights stay in L1 across the item's row
//   micro-tiles. For big weights (gate|up) and several k blocks (down).
// - micro-tile by micro-tile (run_item_by_rows): all panels of 32 rows, then the next 32,
//   the weights read from L2. For weights that fit L2 (qkv, attn_out): each micro-tile's
//   output rows are final together, so the row hook runs on them in cache instead of on a
//   block whose output went out to memory (which pays on long prompts).
// No software prefetch: the hardware prefetchers keep up with the packed operands, and
// prefetching the next micro-tile into L1 evicts the current one, which slows every GEMM stage
// (docs/architecture.md, "Model and weights").
//
// Output stage: a plain fp32 store with full row tiles goes tile-to-memory; accumulate, bias,
// GLUs and a short last micro-tile (rows padded with zeros) go through a 4 KiB buffer and
// AVX-512 (accumulate adds y there, so that a row's result does not depend on its tile).
#include "kernels/gemm_amx.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/scratch.h"
#include "kernels/amx_tiles.h"
#include "kernels/ops_simd_avx512.h"
#include "kernels/workspace.h"

namespace lazyllm::kernels::detail {

namespace {

constexpr int64_t kRows = kAmxGemmRows;
constexpr int64_t kTileElems = 512;     // one packed B tile: 16 pairs x 16 columns x 2
constexpr int64_t kChunkElems = 1024;   // the two B tiles of one panel and k chunk
// Rows per work item: as many as fit kBlockBytes of bf16 x (512 rows at n_in = 576, 192 at
// 1536). Each item streams all of the weights once, so bigger blocks read them fewer times.
// With the weights hot in cache the block size makes no difference; in the model, where a
// layer's weights come from memory, small fixed blocks (128 rows) are slower, and 384 KiB to
// 1 MiB of x run alike. At most 20 chunks per k block: none at n_in = 576 or 640 (SmolLM2,
// Gemma 3 270M), which is fastest (Gemma's 640 in blocks of 18 and 2 took 12-15% longer over
// a prefill); more chunks in blocks of equal size.
constexpr int64_t kBlockBytes = 576 * 1024;
constexpr int64_t kMaxBlockChunks = 20;
// Below this many rows per thread the panels are split across threads, not the rows (see
// amx_gemm); in full prefill the two splits break even at about this many rows per thread.
constexpr int64_t kMinRowsPerThread = 128;
// Packed weights up to this size (a work item's panels) stay in L2 and run micro-tile by
// micro-tile (run_item_by_rows): qkv (1.1 MB) and attn_out (0.66 MB) on SmolLM2-135M.
constexpr int64_t kHotWeightBytes = 1280 * 1024;

// Tiles 0-3 += x[32 rows] . panel over nc chunks; xt: packed x (pack_rows), bp: packed W.
inline void micro_tile(const uint16_t* xt, const uint16_t* bp, int64_t nc) {
    for (int64_t c = 0; c < nc; ++c) {
        const uint16_t* x = xt + c * kChunkElems;
        const uint16_t* b = bp + c * kChunkElems;
        _tile_loadd(4, x, 64);
        _tile_loadd(6, b, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, b + kTileElems, 64);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, x + kTileElems, 64);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
}

inline void zero_acc() {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
}

// Tiles 0-3 <-> a 32 x 32 fp32 block at p with row stride ld_b bytes.
inline void load_acc(const float* p, int64_t ld_b) {
    const float* p1 = reinterpret_cast<const float*>(reinterpret_cast<const char*>(p) + 16 * ld_b);
    _tile_loadd(0, p, ld_b);
    _tile_loadd(1, p + 16, ld_b);
    _tile_loadd(2, p1, ld_b);
    _tile_loadd(3, p1 + 16, ld_b);
}

inline void store_acc(float* p, int64_t ld_b) {
    float* p1 = reinterpret_cast<float*>(reinterpret_cast<char*>(p) + 16 * ld_b);
    _tile_stored(0, p, ld_b);
    _tile_stored(1, p + 16, ld_b);
    _tile_stored(2, p1, ld_b);
    _tile_stored(3, p1 + 16, ld_b);
}

// The columns of panel p that exist (amx_gemm_panels: the last panel may be partial).
inline int64_t panel_cols(const AmxGemmArgs& a, int64_t p) {
    return std::min(kAmxGemmPanel, a.n_out - p * kAmxGemmPanel);
}

// The vector output stage for `rows` rows of a micro-tile held in cbuf, columns of panel p
// below a.n_out only.
void epilogue(const AmxGemmArgs& a, const float (*cbuf)[kRows], int64_t r, int64_t rows,
              int64_t p) {
    const int64_t col0 = p * kAmxGemmPanel;
    const int64_t cols = panel_cols(a, p);
    const auto mask = [](int64_t n) {
        return n >= 16 ? __mmask16{0xFFFF}
                       : static_cast<__mmask16>((1u << std::max<int64_t>(n, 0)) - 1);
    };
    const __mmask16 m0 = mask(cols), m1 = mask(cols - 16);
    __m512 b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();
    if (a.bias != nullptr) {
        b0 = _mm512_maskz_loadu_ps(m0, a.bias + col0);
        b1 = _mm512_maskz_loadu_ps(m1, a.bias + col0 + 16);
    }
    for (int64_t rr = 0; rr < rows; ++rr) {
        const __m512 v0 = _mm512_add_ps(_mm512_load_ps(cbuf[rr]), b0);
        const __m512 v1 = _mm512_add_ps(_mm512_load_ps(cbuf[rr] + 16), b1);
        if (a.out == AmxGemmOut::kGlu) {
            uint16_t* o = a.y16 + (r + rr) * a.ldy16 + p * 16;
            const __m512 g =
                a.glu_act == GluAct::kSilu ? simd512::silu(v0) : simd512::gelu_tanh(v0);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(o),
                                simd512::to_bf16(_mm512_mul_ps(g, v1)));
            continue;
        }
        float* y = a.y + (r + rr) * a.ldy + col0;
        if (a.out == AmxGemmOut::kAccumulate) {
            _mm512_mask_storeu_ps(y, m0, _mm512_add_ps(_mm512_maskz_loadu_ps(m0, y), v0));
            _mm512_mask_storeu_ps(y + 16, m1, _mm512_add_ps(_mm512_maskz_loadu_ps(m1, y + 16), v1));
        } else {
            _mm512_mask_storeu_ps(y, m0, v0);
            _mm512_mask_storeu_ps(y + 16, m1, v1);
        }
    }
}

// A worker's part of the Workspace.
struct ThreadScratch {
    AlignedVector<uint16_t> xpack;  // the item's x rows in A-tile order (pack_rows)
    AlignedVector<float> acc;       // [rows, panels * 32] partial sums between k blocks
};

// Copies rows [r0, r0 + rows) of x into A-tile order: tile (micro-tile t, chunk c, half h)
// is 16 rows x 32 values, contiguous at ((t * n_chunks + c) * 2 + h) * 512. Rows past the
// end are zero. Tile loads with a 64-byte stride run faster than loads that gather 16 rows of
// the activations at their row stride.
// `chunk(r, c)`: the 32 bf16 values of row r, chunk c.
template <typename Chunk>
void pack_rows_from(int64_t n_in, int64_t rows, uint16_t* dst, Chunk&& chunk) {
    const int64_t n_chunks = n_in / kAmxGemmChunk;
    const int64_t n_tiles = (rows + kRows - 1) / kRows;
    for (int64_t t = 0; t < n_tiles; ++t) {
        for (int64_t rr = 0; rr < kRows; ++rr) {
            const int64_t r = t * kRows + rr;
            uint16_t* d = dst + (t * n_chunks * 2 + rr / 16) * kTileElems + (rr % 16) * 32;
            for (int64_t c = 0; c < n_chunks; ++c) {
                _mm512_storeu_si512(d + c * kChunkElems,
                                    r < rows ? chunk(r, c) : _mm512_setzero_si512());
            }
        }
    }
}

void pack_rows(const AmxGemmArgs& a, int64_t r0, int64_t rows, uint16_t* dst) {
    pack_rows_from(a.n_in, rows, dst, [&](int64_t r, int64_t c) {
        return _mm512_loadu_si512(a.x + (r0 + r) * a.ldx + c * kAmxGemmChunk);
    });
}

// One micro-tile (rows [r, r + rows)) times panel p over nc chunks: the accumulators start
// at zero (`fresh`) or from `part`; they go back to `part` (row stride part_ld_b bytes), or,
// when `finish`, through cbuf to the vector output stage.
inline void micro_step(const AmxGemmArgs& a, const uint16_t* xt, const uint16_t* bp, int64_t nc,
                       int64_t r, int64_t rows, int64_t p, float* part, int64_t part_ld_b,
                       bool fresh, bool finish, float (*cbuf)[kRows]) {
    if (fresh) {
        zero_acc();
    } else {
        load_acc(part, part_ld_b);
    }
    micro_tile(xt, bp, nc);
    if (finish) {
        store_acc(&cbuf[0][0], kRows * sizeof(float));
        epilogue(a, cbuf, r, rows, p);
    } else {
        store_acc(part, part_ld_b);
    }
}

// One work item: rows [r0, r1) x panels [p0, p1), the rows packed at xpack (pack_rows), panel p
// at wp + (p - p0) * n_chunks * kChunkElems. kAccumulate adds y in the output stage of every
// micro-tile, never as the tiles' starting value, so that each row's result is the same in any
// call (a full micro-tile would otherwise start from y, a short one add it last).
// The reduction runs in k blocks of at most kMaxBlockChunks chunks (n_in = 576 or 640 in one
// block, which is fastest even though a panel and a micro-tile's x then no longer fit L1
// together; n_in = 1536 in three of 16). Partial sums between blocks live in y itself (plain store)
// or in a per-thread buffer.
void run_item(const AmxGemmArgs& a, ThreadScratch& scratch, const uint16_t* xpack,
              const uint16_t* wp, int64_t r0, int64_t r1, int64_t p0, int64_t p1) {
    const int64_t n_chunks = a.n_in / kAmxGemmChunk;
    const int64_t n_kb = (n_chunks + kMaxBlockChunks - 1) / kMaxBlockChunks;
    const int64_t block_chunks = (n_chunks + n_kb - 1) / n_kb;
    const bool direct = a.bias == nullptr && a.out == AmxGemmOut::kStore;
    const int64_t rows_all = r1 - r0;
    const int64_t n_tiles = (rows_all + kRows - 1) / kRows;

    const int64_t acc_ld = (p1 - p0) * kAmxGemmPanel;
    if (n_kb > 1) grow(scratch.acc, n_tiles * kRows * acc_ld);

    alignas(64) float cbuf[kRows][kRows];
    for (int64_t kb = 0; kb < n_kb; ++kb) {
        const int64_t c0 = kb * block_chunks;
        const int64_t nc = std::min(block_chunks, n_chunks - c0);
        const bool first = kb == 0, last = kb == n_kb - 1;
        for (int64_t p = p0; p < p1; ++p) {
            const uint16_t* bp = wp + ((p - p0) * n_chunks + c0) * kChunkElems;
            const bool full_cols = panel_cols(a, p) == kAmxGemmPanel;
            for (int64_t t = 0; t < n_tiles; ++t) {
                const int64_t r = r0 + t * kRows;
                const int64_t rows = std::min(kRows, r1 - r);
                const uint16_t* xt = xpack + (t * n_chunks + c0) * kChunkElems;
                // Where this micro-tile's partial sums live between k blocks.
                // (Unused, and the buffer unallocated, with one k block outside y.)
                float* part = nullptr;
                int64_t part_ld_b = 0;
                const bool in_y = direct && rows == kRows && full_cols;
                if (in_y) {
                    part = a.y + r * a.ldy + p * kAmxGemmPanel;
                    part_ld_b = a.ldy * static_cast<int64_t>(sizeof(float));
                } else if (n_kb > 1) {
                    part = scratch.acc.data() + t * kRows * acc_ld + (p - p0) * kAmxGemmPanel;
                    part_ld_b = acc_ld * static_cast<int64_t>(sizeof(float));
                }
                micro_step(a, xt, bp, nc, r, rows, p, part, part_ld_b, first, last && !in_y, cbuf);
            }
        }
    }
}

// One work item micro-tile by micro-tile: all panels of one micro-tile before the next, so its
// 32 output rows are final together and the row hook (if `hook`) runs on them while they are
// still in L1/L2. For one k block and weights that stay in L2 (kHotWeightBytes): the panels
// are then read from L2 once per micro-tile, as run_item reads x, and the output is not
// written out to memory between the GEMM and the hook.
void run_item_by_rows(const AmxGemmArgs& a, ThreadScratch& scratch, int64_t r0, int64_t r1,
                      int64_t p0, int64_t p1, bool hook) {
    const int64_t n_chunks = a.n_in / kAmxGemmChunk;
    // kAccumulate adds y in the output stage, as run_item.
    const bool direct = a.bias == nullptr && a.out == AmxGemmOut::kStore;
    uint16_t* xt = grow(scratch.xpack, n_chunks * kChunkElems);
    const int64_t ld_b = a.ldy * static_cast<int64_t>(sizeof(float));
    alignas(64) float cbuf[kRows][kRows];
    for (int64_t r = r0; r < r1; r += kRows) {
        const int64_t rows = std::min(kRows, r1 - r);
        pack_rows(a, r, rows, xt);
        const bool in_y = direct && rows == kRows;
        for (int64_t p = p0; p < p1; ++p) {
            const uint16_t* bp = a.w + p * n_chunks * kChunkElems;
            float* part = in_y ? a.y + r * a.ldy + p * kAmxGemmPanel : nullptr;
            micro_step(a, xt, bp, n_chunks, r, rows, p, part, ld_b, true, !in_y, cbuf);
        }
        if (hook) a.rows_done(a.rows_ctx, r, r + rows);
    }
}

}  // namespace

bool amx_gemm(const AmxGemmArgs& a, int n_threads) {
    if (a.m <= 0) return false;
    const int64_t n_panels = a.n_out / kAmxGemmPanel;
    const int64_t n_micro = (a.m + kRows - 1) / kRows;
    const int64_t nt = std::max(1, n_threads);
    const int64_t block_rows = std::max<int64_t>(kRows, kBlockBytes / (2 * a.n_in) / kRows * kRows);
    int64_t n_row_blocks = (a.m + block_rows - 1) / block_rows;
    // With kMinRowsPerThread rows or more per thread, the rows are split: ceil(m / block_rows)
    // blocks rounded up to a multiple of the threads, the micro-tiles shared out evenly
    // (fixed 128-row blocks would split 615 rows 384 / 231 on two threads). With fewer,
    // streaming the weights costs more than the tile work, and each thread takes a share of the
    // panels for all the rows instead (weights read once in all, not once per thread).
    const bool split_rows = a.m >= kMinRowsPerThread * nt;
    if (split_rows) n_row_blocks = std::min(n_micro, (n_row_blocks + nt - 1) / nt * nt);
    const int64_t n_groups =
        split_rows
            ? 1
            : std::min(n_panels, std::max<int64_t>(1, (2 * nt + n_row_blocks - 1) / n_row_blocks));
    const int64_t group = (n_panels + n_groups - 1) / n_groups;
    const int64_t n_items = n_groups * n_row_blocks;
    const int threads = static_cast<int>(std::min<int64_t>(nt, n_items));
    const bool rows_done = a.rows_done != nullptr && n_groups == 1;
    const int64_t n_chunks = a.n_in / kAmxGemmChunk;
    const bool by_rows =
        n_chunks <= kMaxBlockChunks && group * n_chunks * kChunkElems * 2 <= kHotWeightBytes;

    Workspace local;
    Workspace& ws = a.ws != nullptr ? *a.ws : local;
    ws.workers(threads);
#pragma omp parallel num_threads(threads)
    {
        const TileConfig cfg = full_tile_config();
        LAZYLLM_TILE_LOADCONFIG(cfg);
        ThreadScratch& scratch = ws.worker<ThreadScratch>(omp_get_thread_num());
#pragma omp for schedule(static)
        for (int64_t item = 0; item < n_items; ++item) {
            const int64_t rb = item / n_groups;
            const int64_t g = item % n_groups;
            const int64_t r0 = rb * n_micro / n_row_blocks * kRows;
            const int64_t r1 = std::min(a.m, (rb + 1) * n_micro / n_row_blocks * kRows);
            const int64_t p0 = g * group;
            const int64_t p1 = std::min(n_panels, p0 + group);
            if (by_rows) {
                if (p0 < p1) run_item_by_rows(a, scratch, r0, r1, p0, p1, rows_done);
            } else {
                if (p0 < p1) {
                    const int64_t n_tiles = (r1 - r0 + kRows - 1) / kRows;
                    uint16_t* xpack = grow(scratch.xpack, n_tiles * n_chunks * kChunkElems);
                    pack_rows(a, r0, r1 - r0, xpack);
                    run_item(a, scratch, xpack, a.w + p0 * n_chunks * kChunkElems, r0, r1, p0, p1);
                }
                if (rows_done) a.rows_done(a.rows_ctx, r0, r1);
            }
        }
        _tile_release();
    }
    return rows_done;
}

size_t amx_packed_rows_elems(int64_t m, int64_t n_in) {
    return static_cast<size_t>((m + kRows - 1) / kRows * kRows * n_in);
}

void amx_pack_rows_f32(const float* x, int64_t ldx, int64_t m, int64_t n_in, int64_t t0, int64_t t1,
                       uint16_t* xpack) {
    const int64_t r0 = t0 * kRows;
    const int64_t rows = std::min(m, t1 * kRows) - r0;
    if (rows <= 0) return;
    pack_rows_from(n_in, rows, xpack + r0 * n_in, [&](int64_t r, int64_t c) {
        const float* src = x + (r0 + r) * ldx + c * kAmxGemmChunk;
        const __m256i lo = simd512::to_bf16(_mm512_loadu_ps(src));
        const __m256i hi = simd512::to_bf16(_mm512_loadu_ps(src + 16));
        return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    });
}

void amx_gemm_panels(const AmxGemmArgs& a, const uint16_t* xpack, const uint16_t* panels,
                     int64_t p0, int64_t p1, int worker) {
    if (a.m <= 0 || p0 >= p1) return;
    const int64_t n_chunks = a.n_in / kAmxGemmChunk;
    // Row blocks as amx_gemm's (kBlockBytes of x): the panels stay in L2 across them.
    const int64_t block_rows = std::max<int64_t>(kRows, kBlockBytes / (2 * a.n_in) / kRows * kRows);
    ThreadScratch& scratch = a.ws->worker<ThreadScratch>(worker);
    const TileConfig cfg = full_tile_config();
    LAZYLLM_TILE_LOADCONFIG(cfg);
    for (int64_t r0 = 0; r0 < a.m; r0 += block_rows) {
        const int64_t r1 = std::min(a.m, r0 + block_rows);
        run_item(a, scratch, xpack + (r0 / kRows) * n_chunks * kChunkElems, panels, r0, r1, p0, p1);
    }
    _tile_release();
}

double amx_tdp_loop(int64_t iters) {
    const TileConfig cfg = full_tile_config();
    LAZYLLM_TILE_LOADCONFIG(cfg);
    alignas(64) static const uint16_t kZeros[512] = {};  // the values do not matter
    _tile_loadd(4, kZeros, 64);
    _tile_loadd(5, kZeros, 64);
    _tile_loadd(6, kZeros, 64);
    _tile_loadd(7, kZeros, 64);
    zero_acc();
    for (int64_t i = 0; i < iters; ++i) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    alignas(64) float sink[16][16];
    _tile_stored(0, sink, 64);
    _tile_release();
    return static_cast<double>(iters) * 4 * 16 * 16 * 32 * 2 + 0.0 * sink[0][0];
}

}  // namespace lazyllm::kernels::detail
