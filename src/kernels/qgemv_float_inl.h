// The float part of QuantLinear's SIMD kernels (qgemv_isa.h, Float operations), written once
// against Vec<I> for one vector of output rows (a group of 16 on AVX-512, half a group on
// AVX2): the same operations in the same order as the reference, so every kernel set's
// results are bit-identical. The integer block sums stay in the ISA files. Include only from
// a file built for I's ISA, after its ops_simd_*.h.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "kernels/qgemv_isa.h"

namespace lazyllm::kernels::qgemv {

// One block's scales for one vector of output rows: lanes [lane0, lane0 + kWidth) of a
// group's, from the group's start and the block's offsets (block_offsets, qgemv_isa.h).
struct RowScales {
    const uint16_t* d = nullptr;  // fp16 scales (K-quants: the super-block's)
    const uint16_t* m = nullptr;  // fp16 mins (affine formats)
    const int8_t* sub = nullptr;  // K-quants' int8 (sc, mn) pairs, [16][2]

    static RowScales at(const uint8_t* group, const BlockOffsets& o, int lane0) {
        return {reinterpret_cast<const uint16_t*>(group + o.d) + lane0,
                reinterpret_cast<const uint16_t*>(group + o.m) + lane0,
                reinterpret_cast<const int8_t*>(group + o.sub) + lane0 * 2};
    }
};

// One block's weight scales for one vector of output rows: d and, for affine formats, m
// (K-quants: D * float(sc) and M * float(mn); IQ4_XS D * float(sc); mn zero without a min).
template <Isa I, Scales kS>
inline void block_scales(const RowScales& sc, typename Vec<I>::F& d, typename Vec<I>::F& mn) {
    using V = Vec<I>;
    constexpr bool kMin = has_min(kS);
    d = V::load(sc.d);
    mn = V::zero();
    if constexpr (kMin) mn = V::load(sc.m);
    if constexpr (block_multiplier(kS)) {
        typename V::F sc_f, mn_f;
        V::i8_pairs(sc.sub, sc_f, mn_f);
        d = V::mul(d, sc_f);
        if constexpr (kMin) mn = V::mul(mn, mn_f);
    }
}

// The fp32 accumulators of M activation rows: acc[r] += float(isum[r]) * (d * d_x[r])
// (+ m * s_x[r]) for one block of weight scales d and m (block_scales). xd, xs: the rows'
// scales and scaled sums of the block.
template <Isa I, bool kMin, int M>
inline void accumulate_scaled(typename Vec<I>::F d, typename Vec<I>::F mn,
                              const typename Vec<I>::Ints (&isum)[M], const float* xd,
                              const float* xs, typename Vec<I>::F (&acc)[M]) {
    using V = Vec<I>;
#pragma GCC unroll 8
    for (int r = 0; r < M; ++r) {
        const typename V::F dd = V::mul(d, V::set1(xd[r]));
        acc[r] = V::fmadd(V::from_i32(isum[r]), dd, acc[r]);
        if constexpr (kMin) acc[r] = V::fmadd(mn, V::set1(xs[r]), acc[r]);
    }
}

template <Isa I, Scales kS, int M>
inline void accumulate_block(const RowScales& sc, const typename Vec<I>::Ints (&isum)[M],
                             const float* xd, const float* xs, typename Vec<I>::F (&acc)[M]) {
    typename Vec<I>::F d, mn;
    block_scales<I, kS>(sc, d, mn);
    accumulate_scaled<I, has_min(kS), M>(d, mn, isum, xd, xs, acc);
}

// y[r0 + r, n0 ..] = (acc[r] + bias) + y_old for M rows and min(valid, kWidth) output columns
// from n0 (a ragged last group through a lane mask; none when valid <= 0). The bias is padded to
// whole groups, so a full load is in bounds.
template <Isa I, int M>
inline void store_rows(const typename Vec<I>::F (&acc)[M], const float* bias, int64_t n0,
                       int64_t valid, float* y, int64_t r0, int64_t ldy, bool accumulate) {
    using V = Vec<I>;
    if (valid <= 0) return;
    if (valid > V::kWidth) valid = V::kWidth;
    const typename V::Mask mask = V::tail(valid);
    const typename V::F bv = bias != nullptr ? V::load(bias + n0) : V::zero();
#pragma GCC unroll 8
    for (int r = 0; r < M; ++r) {
        typename V::F out = acc[r];
        if (bias != nullptr) out = V::add(out, bv);
        float* yp = y + (r0 + r) * ldy + n0;
        if (valid == V::kWidth) {
            if (accumulate) out = V::add(out, V::load(yp));
            V::store(yp, out);
        } else {
            if (accumulate) out = V::add(out, V::load(yp, mask));
            V::store(yp, mask, out);
        }
    }
}

// Software prefetch into L2 of block b of a group's stream, kPrefetchBytes ahead (pf: the
// group's start plus that distance). A decode step streams every layer's weights, far more
// than L2, and streams them faster with this than with the hardware prefetcher alone. On
// weights already in L2 it only costs time (bench/qgemv_bench.cpp, cold).
constexpr int64_t kPrefetchBytes = 4096;

template <int kBits, Scales kS>
inline void prefetch_block(const char* pf, int64_t b) {
    constexpr int64_t kBlockBytes = block_stream_bytes(kBits, kS);
#pragma GCC unroll 9
    for (int64_t l = 0; l < kBlockBytes; l += kChunkBytes) {
        _mm_prefetch(pf + b * kBlockBytes + l, _MM_HINT_T1);
    }
}

// Row r's outlier channels (RowOutliers, qgemv_isa.h) from its n_in values xr (n_in a multiple
// of 32), into *o; none without o. Lane j of the sums adds x[j], x[j + 16], ... in order, as
// the reference.
template <Isa I>
inline RowChannels row_outlier_channels(const float* xr, int64_t n_in, const RowOutliers* o,
                                        int64_t r) {
    if (o == nullptr) return {};
    using V = Vec<I>;
    constexpr int kVecs = 16 / V::kWidth;
    typename V::F acc[kVecs];
    for (auto& a : acc) a = V::zero();
    for (int64_t c = 0; c < n_in; c += 16) {
        for (int k = 0; k < kVecs; ++k) {
            acc[k] = V::add(acc[k], V::abs(V::load(xr + c + k * V::kWidth)));
        }
    }
    float lanes[16];
    for (int k = 0; k < kVecs; ++k) V::store(lanes + k * V::kWidth, acc[k]);
    const typename V::F bound = V::set1(RowOutlierPick::bound(lanes, n_in, o->ratio));
    RowOutlierPick pick;
    for (int64_t c = 0; c < n_in; c += V::kWidth) {
        pick.add_bits(c, V::gt_bits(V::abs(V::load(xr + c)), bound), xr);
    }
    const int n = pick.finish(*o, r);
    return {o->channel + r * kRowOutliers, n};
}

// quantize_rows (qgemv_isa.h) on Vec<I>: per 32-block the amax of |x| over the lanes not
// chosen as outlier channels, x * (127 / amax) rounded to nearest even (as the reference's
// nearbyint), the int8 quants and their int32 sum; every step exact or the reference's own
// rounding, so the results are the reference's bit for bit.
template <Isa I>
inline void quantize_rows_impl(const float* x, int64_t m, int64_t r0, int64_t r1, int64_t ldx,
                               int64_t n_in, int32_t offset, const ActivationBuffers& out,
                               const RowOutliers* outliers) {
    using V = Vec<I>;
    constexpr int kN = kBlock / V::kWidth;
    const int64_t nb = n_in / kBlock;
    for (int64_t r = r0; r < r1; ++r) {
        const float* xr = x + r * ldx;
        const RowChannels oc = row_outlier_channels<I>(xr, n_in, outliers, r);
        int next = 0;  // the row's first outlier channel in block b or later
        for (int64_t b = 0; b < nb; ++b) {
            typename V::F v[kN];
            for (int k = 0; k < kN; ++k) v[k] = V::load(xr + b * kBlock + k * V::kWidth);
            if (const uint32_t zero = block_outliers(oc.ch, oc.n, next, b); zero != 0) {
                for (int k = 0; k < kN; ++k) v[k] = V::zero_lanes(v[k], zero >> (k * V::kWidth));
            }
            typename V::F mx[kN];  // a pairwise tree of maxima
            for (int k = 0; k < kN; ++k) mx[k] = V::abs(v[k]);
            for (int w = kN / 2; w >= 1; w /= 2) {
                for (int k = 0; k < w; ++k) mx[k] = V::max(mx[2 * k], mx[2 * k + 1]);
            }
            const auto [d, id] = block_scale(V::reduce_max(mx[0]));
            typename V::Ints q[kN];
            for (int k = 0; k < kN; ++k) q[k] = V::round_i32(V::mul(v[k], V::set1(id)));
            typename V::Ints s = q[0];  // the block's quant sum: lanes first, one reduction
            for (int k = 1; k < kN; ++k) s = V::add_i32(s, q[k]);
            const int32_t sum = V::reduce_add_i32(s);
            V::store_i8x32(out.q + (b * m + r) * kBlock, q);
            set_block_stats(out, b * m + r, d, sum, offset);
        }
    }
}

// ref::add_columns (qgemv_isa.h) on Vec<I> for rows [r0, r1) and outputs [j0, n): the same
// fmas in the same order, kWidth outputs at a time.
template <Isa I>
inline void add_columns_rows(const float* xv, int64_t ldxv, int64_t r0, int64_t r1, int k,
                             const float* const* cols, int64_t j0, int64_t n, float* y,
                             int64_t ldy) {
    using V = Vec<I>;
    for (int64_t r = r0; r < r1; ++r) {
        const float* xr = xv + r * ldxv;
        float* yr = y + r * ldy;
        for_vectors<I>(n - j0, [&]<bool kFull>(int64_t i0, typename V::Mask m) {
            const int64_t j = j0 + i0;
            typename V::F acc = load_part<I, kFull>(yr + j, m);
            for (int i = 0; i < k; ++i) {
                acc = V::fmadd(V::set1(xr[i]), load_part<I, kFull>(cols[i] + j, m), acc);
            }
            store_out<I, kFull>(yr + j, m, acc);
        });
    }
}

// ref::add_columns on Vec<I>, bit for bit: tiles of kR rows x kC vectors of outputs keep
// their sums in registers, so each weight load serves kR rows and kR x kC fma chains run
// side by side; the rows and outputs past the last whole tile go through add_columns_rows.
template <Isa I>
inline void add_columns_impl(const float* xv, int64_t ldxv, int64_t m, int k,
                             const float* const* cols, int64_t n, float* y, int64_t ldy) {
    using V = Vec<I>;
    constexpr int kR = 4;
    constexpr int kC = V::kWidth >= 16 ? 4 : 2;  // 16 or 8 accumulators
    constexpr int64_t kSpan = kC * V::kWidth;
    const int64_t m_tiles = m / kR * kR, n_tiles = n / kSpan * kSpan;
    for (int64_t r = 0; r < m_tiles; r += kR) {
        for (int64_t j = 0; j < n_tiles; j += kSpan) {
            typename V::F acc[kR][kC];
            for (int a = 0; a < kR; ++a) {
                for (int c = 0; c < kC; ++c)
                    acc[a][c] = V::load(y + (r + a) * ldy + j + c * V::kWidth);
            }
            for (int i = 0; i < k; ++i) {
                typename V::F w[kC];
                for (int c = 0; c < kC; ++c) w[c] = V::load(cols[i] + j + c * V::kWidth);
                for (int a = 0; a < kR; ++a) {
                    const typename V::F xa = V::set1(xv[(r + a) * ldxv + i]);
                    for (int c = 0; c < kC; ++c) acc[a][c] = V::fmadd(xa, w[c], acc[a][c]);
                }
            }
            for (int a = 0; a < kR; ++a) {
                for (int c = 0; c < kC; ++c)
                    V::store(y + (r + a) * ldy + j + c * V::kWidth, acc[a][c]);
            }
        }
    }
    if (n_tiles < n) add_columns_rows<I>(xv, ldxv, 0, m_tiles, k, cols, n_tiles, n, y, ldy);
    add_columns_rows<I>(xv, ldxv, m_tiles, m, k, cols, 0, n, y, ldy);
}

// f.template operator()<M>() with M = rows (1 <= rows <= kMax): a pass per row count.
template <int kMax, typename F>
inline void with_rows(int64_t rows, F&& f) {
    with_value(rows, OneTo<kMax>{}, f);
}

// The passes of a gemv over groups [g0, g1) and rows [0, m), in the order that keeps both
// operands in cache on long prompts: groups in chunks of about pass_chunk_bytes() of weights
// (a multiple of `tile` groups), and per chunk the rows in passes of up to kRows over the
// chunk's groups, `tile` at a time (1 for a last group left over). A chunk's weights then
// come from L2 for every row pass after the first, and a row pass's activations from L1/L2
// for every group after the first. f.template operator()<M>(g, n_groups, r0) runs one pass
// of M rows from r0. Each output is computed by one pass, so the order changes no result.
//
// The general form: chunks of `chunk` groups (a multiple of tile), start(c0, c1) called before
// a chunk's passes.
template <int kRows, typename Start, typename F>
inline void for_each_pass(int64_t m, int64_t g0, int64_t g1, int64_t chunk, int64_t tile,
                          Start&& start, F&& f) {
    for (int64_t c0 = g0; c0 < g1; c0 += chunk) {
        const int64_t c1 = std::min(g1, c0 + chunk);
        start(c0, c1);
        for (int64_t r0 = 0; r0 < m; r0 += kRows) {
            with_rows<kRows>(std::min<int64_t>(kRows, m - r0), [&]<int M>() {
                for (int64_t g = c0; g < c1;) {
                    const int64_t n_groups = g + tile <= c1 ? tile : 1;
                    f.template operator()<M>(g, n_groups, r0);
                    g += n_groups;
                }
            });
        }
    }
}
template <int kRows, typename F>
inline void for_each_pass(const Weights& w, int64_t m, int64_t g0, int64_t g1, int64_t tile,
                          F&& f) {
    const int64_t fit = pass_chunk_bytes() / static_cast<int64_t>(w.group_bytes);
    const int64_t chunk = std::max<int64_t>(1, fit / tile) * tile;
    for_each_pass<kRows>(
        m, g0, g1, chunk, tile, [](int64_t, int64_t) {}, f);
}

}  // namespace lazyllm::kernels::qgemv
