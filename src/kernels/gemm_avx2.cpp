// AVX2 + FMA fp32 GEMM (see gemm_avx2.h for the contract and the packed layout).
//
// Micro-tile: kMr = 6 rows x 16 columns in 12 ymm accumulators; per k, two loads of the
// packed panel and six broadcasts of x, twelve vfmadd231ps (the 6x16 shape of BLIS's Zen
// kernels: 12 independent chains cover two FMA pipes of latency 4, and 15 of the 16 ymm
// registers are live). Every tile sums k in order, whatever its rows, so that a row's
// values do not depend on the rows beside it in the call (a prompt continued over a cached
// prefix gives a cold run's values); tiles of 1-3 rows, latency-bound that way, come with
// decode-sized calls, whose weights stream from memory at the same rate either way (splitting
// k into even and odd accumulators measured no faster on the default model's decode). x is
// read in place: broadcasts need no packing.
//
// Loop order in a work item (rows [r0, r1) x panels [p0, p1)), after BLIS: for each k block,
// for each panel, for each micro-tile. A panel's k block (kc x 16 floats) stays in L1 or L2
// while the item's rows pass over it; the item's rows of x (rows x kc floats) stay in L2
// while the panels pass over them. Work items split the rows over the threads when there
// are enough of them, else the panels (one row block, up to ~100 rows at n_in 576: each
// thread streams its share of W).
//
// Its rate at the model's shapes against oneDNN's: bench/gemm_bench.cpp stage_rows
// (docs/benchmarks/zen3.md, "Our fp32 GEMM against oneDNN by row count").
#include "kernels/gemm_avx2.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <numeric>

namespace lazyllm::kernels::detail {

namespace {

constexpr int64_t kMr = 6;               // micro-tile rows
constexpr int64_t kNr = kAvx2GemmPanel;  // micro-tile columns

// Largest k block. A panel's block is then up to 48 KiB, more than L1 (32 KiB): the panel
// streams from L2 at 64 bytes per 6 cycles of FMAs, which L2 sustains, and fewer k blocks
// mean fewer passes over y: blocks small enough to keep the panel in L1 are no faster, and at
// n_in = 1536 every block size from 400 to 1536 runs alike. So n_in = 576 runs in one block,
// 1536 in two of 768.
constexpr int64_t kKcMax = 768;
// Bytes of x rows per row block (rows x kc x 4), kept in L2 (512 KiB on Zen 3) while the
// panels pass over them: a quarter to three quarters of that L2 run alike, an eighth slower.
constexpr int64_t kRowBlockBytes = 256 * 1024;

// The k block size: n_in in the fewest blocks of at most kKcMax, split evenly.
int64_t block_k(int64_t n_in) {
    const int64_t n_kb = (n_in + kKcMax - 1) / kKcMax;
    return (n_in + n_kb - 1) / n_kb;
}

// Masks for the first n lanes of a ymm: load at kLaneMask + 8 - n (n in 0..8).
alignas(32) constexpr int32_t kLaneMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                               0,  0,  0,  0,  0,  0,  0,  0};

inline __m256i lane_mask(int64_t n) {
    n = std::clamp<int64_t>(n, 0, 8);
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLaneMask + 8 - n));
}

// Output stage of one micro-tile: y (+)= c (+ bias) on `nr` <= 16 valid columns. Columns past
// nr are neither read nor written (masked loads and stores), so y's row padding and whatever
// follows the last row stay untouched.
template <int MR>
inline void store_tile(__m256 (&c)[MR][2], float* y, int64_t ldy, const float* bias, bool load_y,
                       int64_t nr) {
    // load(p, k) / store(p, k, v): half k (columns 8k..8k+7) of a row, whole or masked.
    const auto run = [&](auto load, auto store) {
        if (bias != nullptr) {
            const __m256 b0 = load(bias, 0), b1 = load(bias + 8, 1);
#pragma GCC unroll 6
            for (int i = 0; i < MR; ++i) {
                c[i][0] = _mm256_add_ps(c[i][0], b0);
                c[i][1] = _mm256_add_ps(c[i][1], b1);
            }
        }
#pragma GCC unroll 6
        for (int i = 0; i < MR; ++i) {
            float* yr = y + i * ldy;
            if (load_y) {
                c[i][0] = _mm256_add_ps(c[i][0], load(yr, 0));
                c[i][1] = _mm256_add_ps(c[i][1], load(yr + 8, 1));
            }
            store(yr, 0, c[i][0]);
            store(yr + 8, 1, c[i][1]);
        }
    };
    if (nr == kNr) {
        run([](const float* p, int) { return _mm256_loadu_ps(p); },
            [](float* p, int, __m256 v) { _mm256_storeu_ps(p, v); });
        return;
    }
    const __m256i mask[2] = {lane_mask(nr), lane_mask(nr - 8)};
    run([&](const float* p, int k) { return _mm256_maskload_ps(p, mask[k]); },
        [&](float* p, int k, __m256 v) { _mm256_maskstore_ps(p, mask[k], v); });
}

// c[i] += a[i * lda + k] * b[k][0..16) for the MR rows: one k step of a micro-tile.
template <int MR>
inline void rank1(__m256 (&c)[MR][2], const float* a, int64_t lda, const float* b, int64_t k) {
    const __m256 b0 = _mm256_load_ps(b + k * kNr), b1 = _mm256_load_ps(b + k * kNr + 8);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
        const __m256 ai = _mm256_broadcast_ss(a + i * lda + k);
        c[i][0] = _mm256_fmadd_ps(ai, b0, c[i][0]);
        c[i][1] = _mm256_fmadd_ps(ai, b1, c[i][1]);
    }
}

// One micro-tile: MR rows of x at a (row stride lda) times a panel's k block b ([kc][16]),
// then the output stage.
template <int MR>
inline void tile(const float* a, int64_t lda, const float* b, int64_t kc, float* y, int64_t ldy,
                 const float* bias, bool load_y, int64_t nr) {
    __m256 c[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) c[i][0] = c[i][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) rank1<MR>(c, a, lda, b, k);
    store_tile<MR>(c, y, ldy, bias, load_y, nr);
}

using TileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, const float*,
                        bool, int64_t);
constexpr TileFn kTiles[kMr + 1] = {nullptr, tile<1>, tile<2>, tile<3>, tile<4>, tile<5>, tile<6>};

// One work item: rows [r0, r1) x panels [p0, p1). The first k block stores (or, with
// accumulate, adds to y) and adds the bias; later blocks add to y.
void run_item(const Avx2GemmArgs& a, int64_t r0, int64_t r1, int64_t p0, int64_t p1) {
    const int64_t n_panels = (a.n_out + kNr - 1) / kNr;
    const int64_t kc = block_k(a.n_in);
    for (int64_t k0 = 0; k0 < a.n_in; k0 += kc) {
        const int64_t kcb = std::min(kc, a.n_in - k0);
        const float* wb = a.w + k0 * n_panels * kNr;  // this k block's panels
        const bool first = k0 == 0;
        const bool load_y = a.accumulate || !first;
        for (int64_t p = p0; p < p1; ++p) {
            const float* bp = wb + p * kcb * kNr;
            const int64_t col = p * kNr;
            const int64_t nr = std::min(kNr, a.n_out - col);
            const float* bias = first && a.bias != nullptr ? a.bias + col : nullptr;
            // The rows in n_tiles micro-tiles of sizes that differ by at most one (8 rows: 4 +
            // 4, not 6 + 2: tiles of 1-2 rows are bound by loads, not FMAs).
            const int64_t n_tiles = (r1 - r0 + kMr - 1) / kMr;
            const int64_t base = (r1 - r0) / n_tiles, extra = (r1 - r0) % n_tiles;
            int64_t r = r0;
            for (int64_t t = 0; t < n_tiles; ++t) {
                const int64_t rows = base + (t < extra ? 1 : 0);
                kTiles[rows](a.x + r * a.ldx + k0, a.ldx, bp, kcb, a.y + r * a.ldy + col, a.ldy,
                             bias, load_y, nr);
                r += rows;
            }
        }
    }
}

}  // namespace

size_t avx2_gemm_packed_elems(int64_t n_in, int64_t n_out) {
    return static_cast<size_t>((n_out + kNr - 1) / kNr * kNr * n_in);
}

void avx2_gemm_pack(const float* w, int64_t n_in, int64_t n_out, float* w_packed) {
    const int64_t n_panels = (n_out + kNr - 1) / kNr;
    const int64_t kc = block_k(n_in);
    for (int64_t k0 = 0; k0 < n_in; k0 += kc) {
        const int64_t kcb = std::min(kc, n_in - k0);
        for (int64_t p = 0; p < n_panels; ++p) {
            float* dst = w_packed + k0 * n_panels * kNr + p * kcb * kNr;
            for (int64_t kk = 0; kk < kcb; ++kk) {
                for (int64_t j = 0; j < kNr; ++j) {
                    const int64_t col = p * kNr + j;
                    dst[kk * kNr + j] = col < n_out ? w[col * n_in + k0 + kk] : 0.0f;
                }
            }
        }
    }
}

void avx2_gemm(const Avx2GemmArgs& a, int n_threads) {
    if (a.m <= 0) return;
    const int64_t n_panels = (a.n_out + kNr - 1) / kNr;
    const int64_t n_micro = (a.m + kMr - 1) / kMr;
    const int64_t nt = std::max(1, n_threads);
    const int64_t kc = block_k(a.n_in);
    // Micro-tiles of x per row block that fit kRowBlockBytes.
    const int64_t block_micro =
        std::max<int64_t>(1, kRowBlockBytes / (kc * static_cast<int64_t>(sizeof(float))) / kMr);
    int64_t n_row_blocks = (n_micro + block_micro - 1) / block_micro;
    int64_t n_groups = 1;
    if (n_row_blocks >= nt) {
        // Enough rows: split them, in a multiple of the threads' count of blocks.
        n_row_blocks = std::min(n_micro, (n_row_blocks + nt - 1) / nt * nt);
    } else {
        // Few rows: each row block's panels split into groups so that the items come out a
        // multiple of the threads (1 row block: one group of panels per thread).
        n_groups = std::min(n_panels, nt / std::gcd(n_row_blocks, nt));
    }
    const int64_t n_items = n_row_blocks * n_groups;
    const int threads = static_cast<int>(std::min(nt, n_items));
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t item = 0; item < n_items; ++item) {
        const int64_t rb = item / n_groups, g = item % n_groups;
        const int64_t r0 = rb * n_micro / n_row_blocks * kMr;
        const int64_t r1 = std::min(a.m, (rb + 1) * n_micro / n_row_blocks * kMr);
        const int64_t p0 = g * n_panels / n_groups, p1 = (g + 1) * n_panels / n_groups;
        if (r0 < r1 && p0 < p1) run_item(a, r0, r1, p0, p1);
    }
}

}  // namespace lazyllm::kernels::detail
