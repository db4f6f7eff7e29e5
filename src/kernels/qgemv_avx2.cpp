// AVX2 kernels of QuantLinear (layout and float operations: qgemv_isa.h), for CPUs with
// AVX2 + FMA + F16C but no AVX-512 VNNI (Zen 2/3, Haswell..Skylake client). Entered only after
// the run-time check in QuantLinear (qgemv.cpp).
//
// The packed layout is VNNI's: a 64-byte chunk holds 4 quants of each of 16 output rows (one
// int32 lane per row). Here a chunk is two __m256i "halves" of 8 rows each, and vpdpbusd is
// emulated with vpmaddubsw (u8 x s8 -> int16, adjacent pairs summed with signed saturation)
// followed, once per block, by vpmaddwd against ones (int16 pairs -> int32 lane per row).
//
// Exactness: every int16 partial sum must stay within +-32767 (|qx| <= 127).
//   4-bit quants (u <= 15): a pair is <= 2 * 15 * 127 = 3810 and a block adds 8 of them per
//     int16 lane (4 chunks x low/high nibble): <= 30480.
//   5-bit quants (Q5 u <= 31): a pair is <= 2 * 31 * 127 = 7874; each half block (2 chunks,
//     low and high nibble elements: 4 pairs per int16 lane) is summed apart (<= 31496) and
//     widened to int32.
//   8-bit quants (Q8_0 u = q + 128 <= 255): u = 16 * hi + lo is split into its nibbles, each
//     summed as above over the block's 8 chunks (<= 30480), and
//     sum u * qx = 16 * sum hi * qx + sum lo * qx in int32. (Q8_0's u * qx alone would reach
//     2 * 255 * 127 = 64770 per pair and saturate.) IQ4_XS's grid values (u <= 241) the same
//     way: each 4-bit index looked up in two tables, of the value's low and of its high nibble.
//   6-bit quants (Q6_K u <= 63): a pair is <= 2 * 63 * 127 = 16002; a chunk's two products
//     (<= 32004 per int16 lane) are widened at once, multiplied by their half's int8 scale
//     (vpmaddwd), and summed in int32 (block_sums_halves); 3-bit quants (Q3_K u <= 7) the same
//     way.
// So the int32 block sums equal the reference's, and the fp32 operations after them are the
// same ones in the same order: the results are bit-identical.
//
// Prompt calls (more than kMaxRowsPerPass rows) on the 4-, 5- and 6-bit formats unpack each
// chunk of groups once to a byte per quant (unpack_groups) and run every row pass over that
// copy, with the same int16 and int32 groupings (unpacked_block_sums): the unpacking then costs
// nothing per row pass.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/ops_simd_avx2.h"
#include "kernels/qgemv_bits_inl.h"
#include "kernels/qgemv_float_inl.h"
#include "kernels/qgemv_isa.h"

namespace lazyllm::kernels::qgemv {

namespace {

constexpr int kHalfRows = 8;    // output rows per __m256i of int32 lanes
constexpr int kHalfBytes = 32;  // one half of a 64-byte chunk
constexpr int kRowsPerPass = 4;

// 4 int8 activations broadcast to the 8 int32 lanes.
inline __m256i bcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof(v));
    return _mm256_set1_epi32(v);
}

// Byte vectors for unpack_chunk (qgemv_bits_inl.h).
struct Bytes256 {
    using V = __m256i;
    static V and_(V a, V b) { return _mm256_and_si256(a, b); }
    static V or_(V a, V b) { return _mm256_or_si256(a, b); }
    static V shl16(V a, int k) { return _mm256_slli_epi16(a, k); }
    static V shr16(V a, int k) { return _mm256_srli_epi16(a, k); }
    static V set1(char x) { return _mm256_set1_epi8(x); }
};

// acc + p, kept as one running sum in a register. Integer adds reassociate: without the barrier
// GCC computes a block's 16-32 vpmaddubsw products first and sums them as a tree, spilling
// the products to the stack.
inline void add_to(__m256i& acc, __m256i p) {
    acc = _mm256_add_epi16(acc, p);
    __asm__("" : "+x"(acc));
}

// A block's int32 sums from its int16 sums s_lo (and s_hi where kHi; x 16 where kShiftHi: the
// high nibbles of 8-bit quants and grid values), plus the offset correction xc[r] of formats
// without a min (those with a min have offset 0, qgemv_isa.h, so theirs is 0 and skipped).
template <bool kMin, bool kHi, bool kShiftHi, int H, int M>
inline void finish_sums(const __m256i (&s_lo)[H][M], const __m256i (&s_hi)[H][M], const int32_t* xc,
                        __m256i (&isum)[H][M]) {
    const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 4
    for (int r = 0; r < M; ++r) {
        const __m256i corr = _mm256_set1_epi32(kMin ? 0 : xc[r]);
#pragma GCC unroll 2
        for (int h = 0; h < H; ++h) {
            __m256i t = _mm256_madd_epi16(s_lo[h][r], ones);
            if constexpr (kHi) {
                __m256i hi = _mm256_madd_epi16(s_hi[h][r], ones);
                if constexpr (kShiftHi) hi = _mm256_slli_epi32(hi, 4);
                t = _mm256_add_epi32(t, hi);
            }
            isum[h][r] = kMin ? t : _mm256_add_epi32(corr, t);
        }
    }
}

// Int32 sums of one block for H halves (8 output rows each; qb: the block's quants at the
// first half) x M activation rows (xb: row 0's 32 quants, rows kBlock apart; xc: their
// offset corrections), one lane per output row, for the 4-, 5- and 8-bit formats (kGrid:
// IQ4_XS's 4-bit grid indexes). The M rows share each weight load and nibble unpack; the H
// halves share each activation broadcast.
template <int kBits, bool kMin, bool kGrid, int H, int M>
inline void block_sums(const uint8_t* qb, const int8_t* xb, const int32_t* xc,
                       __m256i (&isum)[H][M]) {
    // int16 pair sums (file comment): 4-bit quants sum both nibbles into s_lo; 5-bit quants
    // sum chunks 0-1 into s_lo and 2-3 into s_hi; 8-bit quants and grid values sum their low
    // and high nibbles apart (u = 16 * hi + lo).
    constexpr int kChunks = kBits == 8 ? 8 : 4;
    constexpr bool kNibbleSplit = kBits == 8 || kGrid;
    // The grid values' low and high nibbles, per index (vpshufb tables in both 128-bit lanes).
    __m256i grid_lo = _mm256_setzero_si256(), grid_hi = grid_lo;
    if constexpr (kGrid) {
        const __m256i g = _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(kGridU8.data())));
        grid_lo = _mm256_and_si256(g, _mm256_set1_epi8(0x0F));
        grid_hi = _mm256_and_si256(_mm256_srli_epi16(g, 4), _mm256_set1_epi8(0x0F));
    }
    __m256i s_lo[H][M], s_hi[H][M];
#pragma GCC unroll 2
    for (int h = 0; h < H; ++h) {
#pragma GCC unroll 4
        for (int r = 0; r < M; ++r) s_lo[h][r] = s_hi[h][r] = _mm256_setzero_si256();
    }
#pragma GCC unroll 8
    for (int c = 0; c < kChunks; ++c) {
#pragma GCC unroll 2
        for (int h = 0; h < H; ++h) {
            const __m256i v = _mm256_load_si256(
                reinterpret_cast<const __m256i*>(qb + c * kChunkBytes + h * kHalfBytes));
            // 5 bits: the fifth bits come from chunk 4.
            const __m256i high = kBits == 5 ? _mm256_load_si256(reinterpret_cast<const __m256i*>(
                                                  qb + 4 * kChunkBytes + h * kHalfBytes))
                                            : v;
            __m256i lo, hi;
            unpack_chunk<Bytes256, kBits == 5 ? 5 : 4>(v, high, c, lo, hi);
#pragma GCC unroll 4
            for (int r = 0; r < M; ++r) {
                if constexpr (kBits == 5) {
                    const int8_t* xr = xb + r * kBlock + 8 * c;
                    __m256i& sum = c < 2 ? s_lo[h][r] : s_hi[h][r];
                    add_to(sum, _mm256_maddubs_epi16(lo, bcast4(xr)));
                    add_to(sum, _mm256_maddubs_epi16(hi, bcast4(xr + 4)));
                } else if constexpr (kGrid) {
                    const int8_t* xr = xb + r * kBlock + 8 * c;
                    const __m256i x0 = bcast4(xr), x1 = bcast4(xr + 4);
                    add_to(s_lo[h][r], _mm256_maddubs_epi16(_mm256_shuffle_epi8(grid_lo, lo), x0));
                    add_to(s_lo[h][r], _mm256_maddubs_epi16(_mm256_shuffle_epi8(grid_lo, hi), x1));
                    add_to(s_hi[h][r], _mm256_maddubs_epi16(_mm256_shuffle_epi8(grid_hi, lo), x0));
                    add_to(s_hi[h][r], _mm256_maddubs_epi16(_mm256_shuffle_epi8(grid_hi, hi), x1));
                } else if constexpr (kBits == 4) {
                    const int8_t* xr = xb + r * kBlock + 8 * c;
                    add_to(s_lo[h][r], _mm256_maddubs_epi16(lo, bcast4(xr)));
                    add_to(s_lo[h][r], _mm256_maddubs_epi16(hi, bcast4(xr + 4)));
                } else {
                    const __m256i x = bcast4(xb + r * kBlock + 4 * c);
                    add_to(s_lo[h][r], _mm256_maddubs_epi16(lo, x));
                    add_to(s_hi[h][r], _mm256_maddubs_epi16(hi, x));
                }
            }
        }
    }
    finish_sums<kMin, kBits != 4 || kGrid, kNibbleSplit>(s_lo, s_hi, xc, isum);
}

// block_sums for the half-scale formats (Q6_K, Q3_K; layout and values: qgemv_isa.h). sc: the
// block's int8 (sc_0, sc_1) pairs at the first half's first row; hs: the rows' half sums (X_0,
// X_1). Each chunk's two vpmaddubsw (u <= 63: <= 2 * 16002 per int16 lane) are widened at once
// by a vpmaddwd against the chunk's half scale, so the int32 lanes hold sc_h * sum u * qx.
// kUnpacked: qb is the block unpacked to bytes (unpacked_block_sums), chunk c's low- and
// high-nibble elements at chunks 2c and 2c + 1.
template <int kBits, bool kUnpacked, int H, int M>
inline void block_sums_halves(const uint8_t* qb, const int8_t* sc, const int8_t* xb,
                              const int32_t* hs, __m256i (&isum)[H][M]) {
    constexpr int kOffsetShift = half_offset_shift(kBits);
    __m256i pairs[H], sc_half[H][2];
#pragma GCC unroll 2
    for (int h = 0; h < H; ++h) {
        // int16 (sc_0, sc_1) per int32 lane; each scale repeated over its lane's two int16.
        pairs[h] = _mm256_cvtepi8_epi16(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + h * kHalfRows * 2)));
        sc_half[h][0] = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(pairs[h], 0xA0), 0xA0);
        sc_half[h][1] = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(pairs[h], 0xF5), 0xF5);
#pragma GCC unroll 4
        for (int r = 0; r < M; ++r) isum[h][r] = _mm256_setzero_si256();
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
#pragma GCC unroll 2
        for (int h = 0; h < H; ++h) {
            __m256i u_lo, u_hi;
            if constexpr (kUnpacked) {
                const uint8_t* p = qb + 2 * c * kChunkBytes + h * kHalfBytes;
                u_lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
                u_hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(p + kChunkBytes));
            } else {
                const int lo_chunk = half_scale_low_chunk(kBits, c);
                const int hi_chunk = half_scale_high_chunk(kBits, c);
                const __m256i v = _mm256_load_si256(
                    reinterpret_cast<const __m256i*>(qb + lo_chunk * kChunkBytes + h * kHalfBytes));
                const __m256i high = _mm256_load_si256(
                    reinterpret_cast<const __m256i*>(qb + hi_chunk * kChunkBytes + h * kHalfBytes));
                unpack_chunk<Bytes256, kBits>(v, high, c, u_lo, u_hi);
            }
#pragma GCC unroll 4
            for (int r = 0; r < M; ++r) {
                const int8_t* xr = xb + r * kBlock + 8 * c;
                const __m256i t = _mm256_add_epi16(_mm256_maddubs_epi16(u_lo, bcast4(xr)),
                                                   _mm256_maddubs_epi16(u_hi, bcast4(xr + 4)));
                isum[h][r] = _mm256_add_epi32(isum[h][r], _mm256_madd_epi16(t, sc_half[h][c / 2]));
            }
        }
    }
    // - o (sc_0 X_0 + sc_1 X_1), the offset term.
#pragma GCC unroll 4
    for (int r = 0; r < M; ++r) {
        const __m256i x_halves = _mm256_set1_epi32(hs[r]);
#pragma GCC unroll 2
        for (int h = 0; h < H; ++h) {
            const __m256i corr = _mm256_madd_epi16(pairs[h], x_halves);
            isum[h][r] = _mm256_sub_epi32(isum[h][r], _mm256_slli_epi32(corr, kOffsetShift));
        }
    }
}

// block_sums over a block unpacked to a byte per quant (unpack_groups), and the layout
// block_sums_halves<kBits, true> reads:
// ub the block's bytes at the first half, chunk k (inputs 4k .. 4k + 3 of 16 rows) at k * 64.
// The products are the packed kernels' (chunk k of the unpacked layout is the low- or high-nibble
// half of packed chunk k / 2), summed in the same int16 and int32 groupings: 4-bit quants all 8
// chunks into one int16 lane (<= 8 * 3810), 5-bit quants chunks 0-3 and 4-7 apart (<= 4 * 7874),
// 6-bit quants each packed chunk's two (<= 2 * 16002) widened at once against its half scale.
// The u8 operands come from memory, so a pass holds no unpacked weights in registers and spends
// no vector instructions on unpacking.
template <int kBits, bool kMin, int H, int M>
inline void unpacked_block_sums(const uint8_t* ub, const int8_t* xb, const int32_t* xc,
                                __m256i (&isum)[H][M]) {
    __m256i s_lo[H][M], s_hi[H][M];
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
        __m256i u[H];
#pragma GCC unroll 2
        for (int h = 0; h < H; ++h) {
            u[h] = _mm256_load_si256(
                reinterpret_cast<const __m256i*>(ub + k * kChunkBytes + h * kHalfBytes));
        }
#pragma GCC unroll 8
        for (int r = 0; r < M; ++r) {
            const __m256i x = bcast4(xb + r * kBlock + 4 * k);
#pragma GCC unroll 2
            for (int h = 0; h < H; ++h) {
                const __m256i p = _mm256_maddubs_epi16(u[h], x);
                if (k == 0) {
                    s_lo[h][r] = p;
                } else if (kBits == 5 && k == 4) {
                    s_hi[h][r] = p;
                } else {
                    add_to(kBits == 5 && k >= 4 ? s_hi[h][r] : s_lo[h][r], p);
                }
            }
        }
    }
    finish_sums<kMin, kBits == 5, false>(s_lo, s_hi, xc, isum);
}

// One pass: H halves (8 output rows each, starting at half h0 of group g) x M activation rows
// (r0 .. r0 + M - 1), over all blocks.
// kUnpacked: the group's quants come unpacked from uq (unpacked_block_sums).
template <int kBits, Scales kS, int H, int M, bool kUnpacked = false>
void pass(const Weights& w, int64_t g, int h0, const Activations& a, int64_t r0, const float* bias,
          float* y, int64_t ldy, bool accumulate, bool prefetch, const uint8_t* uq = nullptr) {
    const int64_t nb = w.n_blocks;
    constexpr int64_t kUnpackedBlock = unpacked_block_bytes(Isa::kAvx2, kS);
    // Activations are block-major: block b, row r at (b * m + r) * 32 (q) and b * m + r.
    const int64_t m = a.m;
    const Activations x = a.from_row(r0);
    const uint8_t* group = w.group(g);
    const char* pf = reinterpret_cast<const char*>(group) + kPrefetchBytes;

    __m256 acc[H][M];
#pragma GCC unroll 2
    for (int h = 0; h < H; ++h) {
#pragma GCC unroll 4
        for (int r = 0; r < M; ++r) acc[h][r] = _mm256_setzero_ps();
    }
    for_each_block<kBits, kS>(nb, [&](int64_t b, const BlockOffsets& o) {
        if (prefetch) prefetch_block<kBits, kS>(pf, b);
        const uint8_t* qs = group + o.qs + h0 * kHalfBytes;
        __m256i isum[H][M];  // [H][M] int32 block sums, one lane per output row
        if constexpr (kUnpacked) {
            const uint8_t* ub = uq + b * kUnpackedBlock + h0 * kHalfBytes;
            if constexpr (half_scales(kBits)) {
                block_sums_halves<kBits, true, H, M>(
                    ub, reinterpret_cast<const int8_t*>(group + o.sub) + h0 * kHalfRows * 2,
                    x.q + b * m * kBlock, x.half_sums + b * m, isum);
            } else {
                unpacked_block_sums<kBits, has_min(kS), H, M>(ub, x.q + b * m * kBlock,
                                                              x.corr + b * m, isum);
            }
        } else if constexpr (half_scales(kBits)) {
            block_sums_halves<kBits, false, H, M>(
                qs, reinterpret_cast<const int8_t*>(group + o.sub) + h0 * kHalfRows * 2,
                x.q + b * m * kBlock, x.half_sums + b * m, isum);
        } else {
            block_sums<kBits, has_min(kS), grid_quants(kS), H, M>(qs, x.q + b * m * kBlock,
                                                                  x.corr + b * m, isum);
        }
#pragma GCC unroll 2
        for (int h = 0; h < H; ++h) {
            if constexpr (kUnpacked) {  // the block's fp32 scales after its quants
                const float* d =
                    reinterpret_cast<const float*>(uq + b * kUnpackedBlock + qs_bytes_for(8)) +
                    (h0 + h) * kHalfRows;
                accumulate_scaled<Isa::kAvx2, has_min(kS), M>(
                    _mm256_load_ps(d), has_min(kS) ? _mm256_load_ps(d + kGroupRows) : __m256{},
                    isum[h], x.d + b * m, x.s + b * m, acc[h]);
            } else {
                accumulate_block<Isa::kAvx2, kS, M>(RowScales::at(group, o, (h0 + h) * kHalfRows),
                                                    isum[h], x.d + b * m, x.s + b * m, acc[h]);
            }
        }
    });
#pragma GCC unroll 2
    for (int h = 0; h < H; ++h) {
        const int64_t n0 = g * kGroupRows + (h0 + h) * kHalfRows;
        store_rows<Isa::kAvx2, M>(acc[h], bias, n0, w.n_out - n0, y, r0, ldy, accumulate);
    }
}

// Halves per pass for M rows: both halves of a group share the activation broadcasts where
// the H x M int16 sums (one per pair for 4-bit quants, two otherwise) fit the 16 ymm
// registers; the fp32 accumulators, touched once per block, may live in L1. So 4-bit quants
// run 2 halves x 4 rows (faster than 1 x 4) and 8-bit quants 1 x 4 (faster than 2 x 2). Grid
// values keep two sums per row, as 8-bit quants.
constexpr int halves_per_pass(int bits, Scales s, int rows) {
    return rows == 1 || (bits == 4 && !grid_quants(s)) ? 2 : 1;
}

template <int kBits, Scales kS, int M>
void pass_rows(const Weights& w, int64_t g, const Activations& a, int64_t r0, const float* bias,
               float* y, int64_t ldy, bool accumulate) {
    // The first pass over a group streams it from memory (prefetched); later row passes find
    // it in cache (for_each_pass keeps a chunk of groups in L2).
    const bool prefetch = r0 == 0;
    if constexpr (halves_per_pass(kBits, kS, M) == 2) {
        pass<kBits, kS, 2, M>(w, g, 0, a, r0, bias, y, ldy, accumulate, prefetch);
    } else {
        pass<kBits, kS, 1, M>(w, g, 0, a, r0, bias, y, ldy, accumulate, prefetch);
        pass<kBits, kS, 1, M>(w, g, 1, a, r0, bias, y, ldy, accumulate, false);
    }
}

// Groups [g0, g1) of w unpacked into out (unpacked_group_bytes(w, kAvx2) per group): per block
// a byte per quant in the 8-bit layout, chunk 2c holding the low-nibble elements of packed chunk
// c and 2c + 1 the high ones (as the VNNI kernels' unpack_groups, qgemv_vnni.cpp), then the 16
// rows' fp32 scales d and, for formats with a min, m (block_scales): the row passes take them
// from there instead of converting them per pass.
template <int kBits, Scales kS>
void unpack_groups(const Weights& w, int64_t g0, int64_t g1, uint8_t* out) {
    for (int64_t g = g0; g < g1; ++g) {
        const uint8_t* group = w.group(g);
        const char* pf = reinterpret_cast<const char*>(group) + kPrefetchBytes;
        for_each_block<kBits, kS>(w.n_blocks, [&](int64_t b, const BlockOffsets& o) {
            prefetch_block<kBits, kS>(pf, b);
            const uint8_t* qb = group + o.qs;
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) {
#pragma GCC unroll 2
                for (int h = 0; h < 2; ++h) {
                    const int lo_chunk = half_scales(kBits) ? half_scale_low_chunk(kBits, c) : c;
                    const int hi_chunk = half_scales(kBits) ? half_scale_high_chunk(kBits, c) : 4;
                    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(
                        qb + lo_chunk * kChunkBytes + h * kHalfBytes));
                    const __m256i high = kBits == 4
                                             ? v
                                             : _mm256_load_si256(reinterpret_cast<const __m256i*>(
                                                   qb + hi_chunk * kChunkBytes + h * kHalfBytes));
                    __m256i lo, hi;
                    unpack_chunk<Bytes256, kBits>(v, high, c, lo, hi);
                    uint8_t* dst = out + 2 * c * kChunkBytes + h * kHalfBytes;
                    _mm256_store_si256(reinterpret_cast<__m256i*>(dst), lo);
                    _mm256_store_si256(reinterpret_cast<__m256i*>(dst + kChunkBytes), hi);
                }
            }
            auto* scales = reinterpret_cast<float*>(out + qs_bytes_for(8));
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h) {
                __m256 d, mn;
                block_scales<Isa::kAvx2, kS>(RowScales::at(group, o, h * kHalfRows), d, mn);
                _mm256_store_ps(scales + h * kHalfRows, d);
                if constexpr (has_min(kS)) _mm256_store_ps(scales + kGroupRows + h * kHalfRows, mn);
            }
            out += unpacked_block_bytes(Isa::kAvx2, kS);
        });
    }
}

// Rows per prompt pass over unpacked groups, both halves of a group together for the 4- and
// 5-bit sums (2 x 4 int16 sums and a chunk's two halves in the 16 ymm registers), one half at
// a time for the half-scale ones (their int32 sums, scales and two chunks per half). Six rows,
// or both halves of Q6_K, ran alike (docs/benchmarks/zen3.md, "AVX2 prompt passes on
// unpacked groups").
constexpr int kUnpackedRows = 4;
constexpr int unpacked_halves(int bits) { return half_scales(bits) ? 1 : 2; }

template <int kBits, Scales kS>
void gemv_passes(const Weights& w, const Activations& a, int64_t m, int64_t g0, int64_t g1,
                 const float* bias, float* y, int64_t ldy, bool accumulate, uint8_t* scratch) {
    if constexpr (unpacks_format(Isa::kAvx2, kBits, kS)) {
        // Prompts: each chunk of groups unpacked once (into scratch, sized
        // unpack_scratch_bytes(w, kAvx2)) for all its row passes.
        if (unpacks_prompt(Isa::kAvx2, kBits, kS, m) && scratch != nullptr) {
            constexpr int kH = unpacked_halves(kBits);
            int64_t c0 = g0;
            for_each_pass<kUnpackedRows>(
                m, g0, g1, unpacked_chunk_groups(w, Isa::kAvx2), 1,
                [&](int64_t first, int64_t last) {
                    unpack_groups<kBits, kS>(w, first, last, scratch);
                    c0 = first;
                },
                [&]<int M>(int64_t g, int64_t, int64_t r0) {
                    const uint8_t* uq = scratch + (g - c0) * unpacked_group_bytes(w, Isa::kAvx2);
                    for (int h0 = 0; h0 < 2; h0 += kH) {
                        pass<kBits, kS, kH, M, true>(w, g, h0, a, r0, bias, y, ldy, accumulate,
                                                     false, uq);
                    }
                });
            return;
        }
    }
    for_each_pass<kRowsPerPass>(w, m, g0, g1, 1, [&]<int M>(int64_t g, int64_t, int64_t r0) {
        pass_rows<kBits, kS, M>(w, g, a, r0, bias, y, ldy, accumulate);
    });
}

}  // namespace

LAZYLLM_QGEMV_FORMATS(Isa::kAvx2)

}  // namespace lazyllm::kernels::qgemv
