// AVX-512 VNNI kernels of QuantLinear (layout and float operations: qgemv_isa.h). Entered
// only when the CPU has AVX-512 F/BW/VL/DQ and VNNI (QuantLinear::has_fast_path).
//
// Inner step: vpdpbusd(acc, w_u8, x_s8 broadcast) adds, in each of 16 int32 lanes (one output
// row each), the dot product of that row's 4 unsigned weights with the same 4 signed
// activations. A block of 32 inputs is 8 such steps per activation row. The stored quants are
// unsigned (Q4 nibbles 0..15, Q5 0..31, Q8 + 128), which is the operand order vpdpbusd wants;
// the offset comes back through the int32 accumulator's initial value, -offset * sum(qx).
// Products stay far from int32 overflow (|u| <= 255, |qx| <= 127: 32 * 255 * 127 < 2^20).
//
// Prompts (more than block_pass_rows rows: 16 for the 4- to 6-bit formats, 8 for Q3_K) of the
// formats under 8 bits first unpack a chunk of groups to a byte per quant (unpack_groups; Q3_K
// with its half scales applied) and run every pass over that copy as over Q8_0's quants: the
// unpacking is paid once per chunk instead of once per 8 rows.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/ops_simd_avx512.h"
#include "kernels/qgemv_bits_inl.h"
#include "kernels/qgemv_float_inl.h"
#include "kernels/qgemv_isa.h"

namespace lazyllm::kernels::qgemv {

namespace {

// 4 int8 activations broadcast to the 16 lanes (folds into vpdpbusd's m32bcst operand).
inline __m512i bcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof(v));
    return _mm512_set1_epi32(v);
}

// A value the compiler must keep in a register, as computed. Without this GCC folds the same
// 64-byte load into both the and and the shift of a 4-bit chunk, doubling the loads (with the
// broadcasts and prefetches, the load ports are nearly as busy as the vector ALUs here); and
// contracts a rounded product with the add after it into an FMA (dequant_groups).
template <typename V>
inline V in_register(V v) {
    __asm__("" : "+v"(v));
    return v;
}

// Byte vectors for unpack_chunk (qgemv_bits_inl.h).
struct Bytes512 {
    using V = __m512i;
    static V and_(V a, V b) { return _mm512_and_si512(a, b); }
    static V or_(V a, V b) { return _mm512_or_si512(a, b); }
    static V shl16(V a, int k) { return _mm512_slli_epi16(a, static_cast<unsigned>(k)); }
    static V shr16(V a, int k) { return _mm512_srli_epi16(a, static_cast<unsigned>(k)); }
    static V set1(char x) { return _mm512_set1_epi8(x); }
};

// The two chunks unpack_chunk (qgemv_bits_inl.h) takes for chunk c (< 4) of a block of kBits-bit
// quants qb: the nibbles (or, for 3 bits, the low-bit pairs) and the chunk of the remaining bits
// (v itself for 4 bits).
template <int kBits>
inline void load_chunk_pair(const uint8_t* qb, int c, __m512i& v, __m512i& high) {
    constexpr bool halves = half_scales(kBits);
    v = in_register(
        _mm512_load_si512(qb + (halves ? half_scale_low_chunk(kBits, c) : c) * kChunkBytes));
    if constexpr (kBits == 4) {
        high = v;
    } else {
        high = in_register(
            _mm512_load_si512(qb + (halves ? half_scale_high_chunk(kBits, c) : 4) * kChunkBytes));
    }
}

// Int32 sums of one block of a half-scale format (Q6_K, Q3_K; layout and values: qgemv_isa.h)
// for G groups x M rows: the quants of chunk c (6 bits: its low nibbles and the two high bits
// from chunk 4 + c / 2; 3 bits: the low bits from chunk c / 2 and the third from chunk 2) go
// through two vpdpbusd per row into half h = c / 2's sum, and once per block
//   isum = sc_0 * s_0 + sc_1 * s_1 - o * (sc_0 X_0 + sc_1 X_1)
// (6 bits: vpmulld for the first two terms, s_h reaching 16 * 63 * 127, beyond int16, and
// vpmaddwd for the offset term, as the AVX2 kernels; 3 bits: one vpmaddwd). qs: each group's quants
// of this block (kUnpacked: unpacked to the 8-bit layout, unpack_groups, G = 1); sc: each group's
// int8 (sc_0, sc_1) pairs of this block; xb: row 0's 32 quants (rows kBlock apart); hs: the
// rows' half sums.
template <int kBits, bool kUnpacked, int G, int M>
inline void block_sums_halves(const uint8_t* const (&qs)[G], const int8_t* const (&sc)[G],
                              const int8_t* xb, const int32_t* hs, __m512i (&isum)[G][M]) {
    constexpr int kOffsetShift = half_offset_shift(kBits);
    __m512i s[G][M][2];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
#pragma GCC unroll 8
        for (int r = 0; r < M; ++r) s[g][r][0] = s[g][r][1] = _mm512_setzero_si512();
    }
    if constexpr (kUnpacked) {
        static_assert(G == 1);
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {  // elements 4k .. 4k + 3: half k / 4
            const __m512i u = _mm512_load_si512(qs[0] + k * kChunkBytes);
#pragma GCC unroll 8
            for (int r = 0; r < M; ++r) {
                __m512i& acc = s[0][r][k / 4];
                acc = _mm512_dpbusd_epi32(acc, u, bcast4(xb + r * kBlock + 4 * k));
            }
        }
    } else {
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) {
                __m512i v, high, u_lo, u_hi;
                load_chunk_pair<kBits>(qs[g], c, v, high);
                unpack_chunk<Bytes512, kBits>(v, high, c, u_lo, u_hi);
#pragma GCC unroll 8
                for (int r = 0; r < M; ++r) {
                    const int8_t* xr = xb + r * kBlock + 8 * c;
                    __m512i& acc = s[g][r][c / 2];
                    acc = _mm512_dpbusd_epi32(acc, u_lo, bcast4(xr));
                    acc = _mm512_dpbusd_epi32(acc, u_hi, bcast4(xr + 4));
                }
            }
        }
    }
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
        // int16 (sc_0, sc_1) per int32 lane.
        const __m512i pairs =
            _mm512_cvtepi8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(sc[g])));
        if constexpr (kBits == 3) {
            // u <= 7: |s_h| <= 16 * 7 * 127 and |s_h - 4 X_h| <= 16 * 11 * 127 fit int16, so
            // (s_0 - 4 X_0, s_1 - 4 X_1) go as an int16 pair through one vpmaddwd.
#pragma GCC unroll 8
            for (int r = 0; r < M; ++r) {
                const __m512i s01 = _mm512_mask_blend_epi16(0xAAAAAAAA, s[g][r][0],
                                                            _mm512_slli_epi32(s[g][r][1], 16));
                const __m512i ox = _mm512_slli_epi16(_mm512_set1_epi32(hs[r]), kOffsetShift);
                isum[g][r] = _mm512_madd_epi16(_mm512_sub_epi16(s01, ox), pairs);
            }
            continue;
        }
        // 6 bits: each scale alone as int32.
        const __m512i sc0 = _mm512_srai_epi32(_mm512_slli_epi32(pairs, 16), 16);
        const __m512i sc1 = _mm512_srai_epi32(pairs, 16);
#pragma GCC unroll 8
        for (int r = 0; r < M; ++r) {
            const __m512i corr = _mm512_madd_epi16(pairs, _mm512_set1_epi32(hs[r]));
            const __m512i t = _mm512_add_epi32(_mm512_mullo_epi32(s[g][r][0], sc0),
                                               _mm512_mullo_epi32(s[g][r][1], sc1));
            isum[g][r] = _mm512_sub_epi32(t, _mm512_slli_epi32(corr, kOffsetShift));
        }
    }
}

// Int32 sums of one block of the 4-, 5- and 8-bit formats for G groups x M rows, added to
// isum (which holds the rows' offset terms). qb: each group's quants of this block; xb: row
// 0's 32 quants (rows kBlock apart). kGrid: 4-bit indexes, looked up in kGridU8 (vpshufb).
// For M = 1 with 4 bits and no grid (pass), ihi gets 16 x the high-nibble products.
template <int kBits, bool kGrid, int G, int M>
inline void block_sums(const uint8_t* const (&qb)[G], const int8_t* xb, __m512i (&isum)[G][M],
                       __m512i (&ihi)[G][M]) {
    constexpr bool kSplitHi = kBits == 4 && M == 1 && !kGrid;
    if constexpr (kBits == 4 || kBits == 5) {
        const __m512i nib = _mm512_set1_epi8(0x0F);
        const __m512i nib_hi = _mm512_set1_epi8(static_cast<char>(0xF0));
        const __m512i grid = _mm512_broadcast_i32x4(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(kGridU8.data())));
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) {
                if constexpr (kSplitHi) {
                    const __m512i v = in_register(_mm512_load_si512(qb[g] + c * kChunkBytes));
                    const __m512i lo = _mm512_and_si512(v, nib);
                    const __m512i hi = _mm512_and_si512(v, nib_hi);
                    isum[g][0] = _mm512_dpbusd_epi32(isum[g][0], lo, bcast4(xb + 8 * c));
                    ihi[g][0] = _mm512_dpbusd_epi32(ihi[g][0], hi, bcast4(xb + 8 * c + 4));
                } else {
                    __m512i v, high, lo, hi;
                    load_chunk_pair<kBits>(qb[g], c, v, high);
                    unpack_chunk<Bytes512, kBits>(v, high, c, lo, hi);
                    if constexpr (kGrid) {
                        lo = _mm512_shuffle_epi8(grid, lo);
                        hi = _mm512_shuffle_epi8(grid, hi);
                    }
#pragma GCC unroll 8
                    for (int r = 0; r < M; ++r) {
                        const int8_t* xr = xb + r * kBlock + 8 * c;
                        isum[g][r] = _mm512_dpbusd_epi32(isum[g][r], lo, bcast4(xr));
                        isum[g][r] = _mm512_dpbusd_epi32(isum[g][r], hi, bcast4(xr + 4));
                    }
                }
            }
        }
    } else {  // 8 bits
#pragma GCC unroll 8
        for (int c = 0; c < 8; ++c) {
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) {
                const __m512i v = _mm512_load_si512(qb[g] + c * kChunkBytes);
#pragma GCC unroll 8
                for (int r = 0; r < M; ++r) {
                    isum[g][r] =
                        _mm512_dpbusd_epi32(isum[g][r], v, bcast4(xb + r * kBlock + 4 * c));
                }
            }
        }
    }
}

// One pass: G consecutive groups (16 output rows each) x M activation rows (r0 .. r0 + M - 1),
// over all blocks. The G groups share each activation broadcast and the M rows share each
// weight load and unpack. At m = 1 a 4-bit group-block costs ~26 vector uops (8 and, 8
// vpdpbusd, the fp16 scale conversions and 3 fp32 ops) for 512 multiply-adds.
//
// For M = 1 the 4-bit high nibbles (but IQ4_XS's grid indexes) are masked in place (v & 0xF0 = 16
// q) into a second int32 accumulator that is divided by 16 (an exact arithmetic shift: every
// product is a multiple of 16) at the end of the block: 2 ALU ops per chunk instead of 3, and two
// independent chains. For M > 1 a shift per chunk is cheaper than a shift and an add per row.
//
// kUnpacked: the groups' quants come unpacked to the 8-bit layout (unpack_groups) from uq, each
// group unpacked_group_bytes(w, Isa::kAvx512) after the last, already in cache.
template <int kBits, Scales kS, int G, int M, bool kUnpacked = false>
void pass(const Weights& w, int64_t g0, const Activations& a, int64_t r0, const float* bias,
          float* y, int64_t ldy, bool accumulate, const uint8_t* uq = nullptr) {
    constexpr bool kGrid = grid_quants(kS) && !kUnpacked;
    constexpr bool kSplitHi = kBits == 4 && M == 1 && !kGrid && !kUnpacked;
    constexpr int kSumBits = kUnpacked ? 8 : kBits;  // the layout block_sums reads
    constexpr auto kQs = static_cast<int64_t>(qs_bytes_for(kSumBits));
    // block_sums_halves sets isum itself; Q3_K's unpacked quants carry their half scales.
    constexpr bool kHalves = half_scales(kBits) && !(kUnpacked && prescaled_unpack(kBits));
    const int64_t nb = w.n_blocks;
    // Activations are block-major: block b, row r at (b * m + r) * 32 (q) and b * m + r.
    const int64_t m = a.m;
    const Activations x = a.from_row(r0);
    const uint8_t* group[G];  // each group's start (kUnpacked: its unpacked quants)
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) group[g] = w.group(g0 + g);
    __m512 acc[G][M];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
#pragma GCC unroll 8
        for (int r = 0; r < M; ++r) acc[g][r] = _mm512_setzero_ps();
    }
    // The first pass of rows streams the groups from memory; later ones find them in cache
    // (for_each_pass), where a prefetch only takes a load slot.
    const bool prefetch = !kUnpacked && r0 == 0;
    for_each_block<kBits, kS>(nb, [&](int64_t b, const BlockOffsets& o) {
        if (prefetch) {
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) {
                prefetch_block<kBits, kS>(reinterpret_cast<const char*>(group[g]) + kPrefetchBytes,
                                          b);
            }
        }
        __m512i isum[G][M];
        __m512i ihi[G][M];  // kSplitHi only: 16 x the high-nibble dot products
#pragma GCC unroll 8
        for (int r = 0; !kHalves && r < M; ++r) {
            const __m512i c = _mm512_set1_epi32(x.corr[b * m + r]);
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) {
                isum[g][r] = c;
                if constexpr (kSplitHi) ihi[g][r] = _mm512_setzero_si512();
            }
        }
        const int8_t* xb = x.q + b * m * kBlock;
        const uint8_t* qb[G];
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
            qb[g] = kUnpacked ? uq + g * unpacked_group_bytes(w, Isa::kAvx512) + b * kQs
                              : group[g] + o.qs;
        }
        if constexpr (kHalves) {
            const int8_t* sb[G];
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) sb[g] = reinterpret_cast<const int8_t*>(group[g] + o.sub);
            block_sums_halves<kBits, kUnpacked, G, M>(qb, sb, xb, x.half_sums + b * m, isum);
        } else {
            block_sums<kSumBits, kGrid, G, M>(qb, xb, isum, ihi);
        }
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
            if constexpr (kSplitHi) {
                isum[g][0] = _mm512_add_epi32(isum[g][0], _mm512_srai_epi32(ihi[g][0], 4));
            }
            accumulate_block<Isa::kAvx512, kS, M>(RowScales::at(group[g], o, 0), isum[g],
                                                  x.d + b * m, x.s + b * m, acc[g]);
        }
    });

#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
        const int64_t n0 = (g0 + g) * kGroupRows;
        store_rows<Isa::kAvx512, M>(acc[g], bias, n0, w.n_out - n0, y, r0, ldy, accumulate);
    }
}

// u * sc + 127 for the bytes u (q + 4, q in [-4, 3]) of v, sc: each int32 lane's int16 scale in
// both halves (prescaled_unpack, qgemv_isa.h): the even and odd bytes as int16, the result in
// [3, 255].
inline __m512i prescale(__m512i v, __m512i sc) {
    const __m512i low_byte = _mm512_set1_epi16(0x00FF);
    const __m512i four = _mm512_set1_epi16(4), offset = _mm512_set1_epi16(kPrescaledOffset);
    const __m512i even = _mm512_sub_epi16(_mm512_and_si512(v, low_byte), four);
    const __m512i odd = _mm512_sub_epi16(_mm512_srli_epi16(v, 8), four);
    const __m512i e = _mm512_add_epi16(_mm512_mullo_epi16(even, sc), offset);
    const __m512i o = _mm512_add_epi16(_mm512_mullo_epi16(odd, sc), offset);
    return _mm512_or_si512(e, _mm512_slli_epi16(o, 8));
}

// Groups [g0, g1) of w unpacked to a byte per quant into out (unpacked_group_bytes(w, Isa::kAvx512)
// per group): per block the 8-bit layout (qgemv_isa.h), chunk 2c holding the low-nibble elements of
// chunk c and 2c + 1 the high ones; grid indexes as their unsigned grid values; Q3_K's with
// their half scales (prescaled_unpack).
template <int kBits, Scales kS>
void unpack_groups(const Weights& w, int64_t g0, int64_t g1, uint8_t* out) {
    const __m512i grid =
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kGridU8.data())));
    // vpshufb patterns: the int16 scale of half 0 (bytes 0-1 of each int32 lane of the scale
    // pairs) or half 1 (bytes 2-3) into both halves of the lane.
    const __m512i half_scale[2] = {
        _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13)),
        _mm512_broadcast_i32x4(
            _mm_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15))};
    for (int64_t g = g0; g < g1; ++g) {
        const uint8_t* group = w.group(g);
        const char* pf = reinterpret_cast<const char*>(group) + kPrefetchBytes;
        for_each_block<kBits, kS>(w.n_blocks, [&](int64_t b, const BlockOffsets& o) {
            prefetch_block<kBits, kS>(pf, b);
            __m512i sc[2];
            if constexpr (prescaled_unpack(kBits)) {
                const __m512i pairs = _mm512_cvtepi8_epi16(
                    _mm256_load_si256(reinterpret_cast<const __m256i*>(group + o.sub)));
                sc[0] = _mm512_shuffle_epi8(pairs, half_scale[0]);
                sc[1] = _mm512_shuffle_epi8(pairs, half_scale[1]);
            }
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) {
                __m512i v, high, lo, hi;
                load_chunk_pair<kBits>(group + o.qs, c, v, high);
                unpack_chunk<Bytes512, kBits>(v, high, c, lo, hi);
                if constexpr (grid_quants(kS)) {
                    lo = _mm512_shuffle_epi8(grid, lo);
                    hi = _mm512_shuffle_epi8(grid, hi);
                }
                if constexpr (prescaled_unpack(kBits)) {
                    lo = prescale(lo, sc[c / 2]);
                    hi = prescale(hi, sc[c / 2]);
                }
                _mm512_store_si512(out + 2 * c * kChunkBytes, lo);
                _mm512_store_si512(out + (2 * c + 1) * kChunkBytes, hi);
            }
            out += qs_bytes_for(8);
        });
    }
}

// Lane i: bf16(lo[i]) in its low half, bf16(hi[i]) in its high half: one row of an AMX B tile
// (16 columns x a pair of k).
inline __m512i bf16_pairs(__m512 lo, __m512 hi) {
    return _mm512_or_si512(_mm512_cvtepu16_epi32(simd512::to_bf16(lo)),
                           _mm512_slli_epi32(_mm512_cvtepu16_epi32(simd512::to_bf16(hi)), 16));
}

// Groups [g0, g1) as bf16 AMX B tiles (dequant_bf16_panels, qgemv_isa.h): each block's bytes in
// the 8-bit layout (Q8_0's own quants, else unpack_groups into tmp), then per chunk c (inputs
// 4c .. 4c + 3 of the 16 rows) the four byte planes as fp32 weights, paired into tile rows 2c
// and 2c + 1.
template <int kBits, Scales kS>
void dequant_groups(const Weights& w, int32_t offset, int64_t g0, int64_t g1, uint16_t* panels,
                    uint8_t* tmp) {
    constexpr int64_t kTile = 512, kBlockStride = 2 * kTile;  // a panel's two tiles per block
    const __m512i byte = _mm512_set1_epi32(0xFF);
    for (int64_t g = g0; g < g1; ++g) {
        const uint8_t* group = w.group(g);
        if constexpr (kBits != 8) unpack_groups<kBits, kS>(w, g, g + 1, tmp);  // prefetches
        const char* pf = reinterpret_cast<const char*>(group) + kPrefetchBytes;
        uint16_t* dst = panels + ((g - g0) / 2 * w.n_blocks * 2 + (g - g0) % 2) * kTile;
        for_each_block<kBits, kS>(w.n_blocks, [&](int64_t b, const BlockOffsets& o) {
            const RowScales rs = RowScales::at(group, o, 0);
            // The block's bytes in the 8-bit layout: Q8_0's own, else unpacked into tmp.
            const uint8_t* u8 = kBits == 8 ? group + o.qs : tmp + b * qs_bytes_for(8);
            const __m512 big_d =
                _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rs.d)));
            // The block's two int8 multipliers per row (K-quants: the layout's sub bytes,
            // qgemv_isa.h), as fp32.
            __m512 sub0 = _mm512_setzero_ps(), sub1 = _mm512_setzero_ps();
            if constexpr (per_super(kBits, kS)) {
                const __m512i pairs = _mm512_cvtepi8_epi16(
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rs.sub)));
                sub0 = _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(pairs, 16), 16));
                sub1 = _mm512_cvtepi32_ps(_mm512_srai_epi32(pairs, 16));
            }
            __m512 d[2] = {big_d, big_d}, mn = _mm512_setzero_ps();
            int32_t off = offset;
            if constexpr (prescaled_unpack(kBits)) {
                off = kPrescaledOffset;
            } else if constexpr (half_scales(kBits)) {
                d[0] = _mm512_mul_ps(big_d, sub0);
                d[1] = _mm512_mul_ps(big_d, sub1);
                off = half_offset(kBits);
            } else if constexpr (block_multiplier(kS)) {
                d[0] = d[1] = _mm512_mul_ps(big_d, sub0);
            }
            if constexpr (kS == Scales::kK) {
                mn = _mm512_mul_ps(
                    _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rs.m))),
                    sub1);
                off = 0;
            } else if constexpr (kS == Scales::kDMin) {
                mn = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rs.m)));
                off = 0;
            }
            const __m512i voff = _mm512_set1_epi32(off);
            if constexpr (kBits == 8) prefetch_block<kBits, kS>(pf, b);
            for (int c = 0; c < 8; ++c) {
                const __m512i v = _mm512_load_si512(u8 + c * kChunkBytes);
                __m512 f[4];
                for (int j = 0; j < 4; ++j) {
                    const __m512i u = _mm512_and_si512(_mm512_srli_epi32(v, 8 * j), byte);
                    f[j] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(u, voff)), d[c / 4]);
                    // The product rounded before the min is added, as weight_value (no FMA).
                    if constexpr (has_min(kS)) f[j] = _mm512_add_ps(in_register(f[j]), mn);
                }
                _mm512_store_si512(dst + (2 * c) * 32, bf16_pairs(f[0], f[1]));
                _mm512_store_si512(dst + (2 * c + 1) * 32, bf16_pairs(f[2], f[3]));
            }
            dst += kBlockStride;
        });
    }
    if ((g1 - g0) % 2 != 0) {  // the last panel's second half: zero columns
        uint16_t* dst = panels + ((g1 - g0) / 2 * w.n_blocks * 2 + 1) * kTile;
        for (int64_t b = 0; b < w.n_blocks; ++b) std::memset(dst + b * kBlockStride, 0, kTile * 2);
    }
}

// Rows per prompt pass (more than kMaxRowsPerPass rows), over two groups at a time: the 2 x 6
// int32 sums and fp32 accumulators fit the 32 zmm registers, and each activation broadcast
// feeds two vpdpbusd (with one group and 8 rows the loads, a broadcast per vpdpbusd, bound the
// pass). The half-scale sums, two per row, keep 8 rows over one group.
constexpr int kPromptRows = 6;

template <int kBits, Scales kS>
void gemv_passes(const Weights& w, const Activations& a, int64_t m, int64_t g0, int64_t g1,
                 const float* bias, float* y, int64_t ldy, bool accumulate, uint8_t* scratch) {
    // Prompts: formats under 8 bits unpack each chunk of groups once (into scratch, sized
    // unpack_scratch_bytes(w, Isa::kAvx512)) for all its row passes.
    constexpr bool kUnpack = kBits != 8;
    if (m > block_pass_rows(Isa::kAvx512, kBits) &&
        (!unpacks_prompt(Isa::kAvx512, kBits, kS, m) || scratch != nullptr)) {
        constexpr bool kHalves = half_scales(kBits) && !prescaled_unpack(kBits);
        constexpr int kRows = kHalves ? kMaxRowsPerPass : kPromptRows;
        constexpr int kTile = kHalves ? 1 : 2;
        const int64_t fit = kUnpack ? unpacked_chunk_groups(w, Isa::kAvx512)
                                    : pass_chunk_bytes() / static_cast<int64_t>(w.group_bytes);
        const int64_t chunk = std::max<int64_t>(1, fit / kTile * kTile);
        int64_t c0 = g0;
        for_each_pass<kRows>(
            m, g0, g1, chunk, kTile,
            [&](int64_t first, int64_t last) {
                if constexpr (kUnpack) unpack_groups<kBits, kS>(w, first, last, scratch);
                c0 = first;
            },
            [&]<int M>(int64_t g, int64_t n, int64_t r0) {
                const uint8_t* uq =
                    kUnpack ? scratch + (g - c0) * unpacked_group_bytes(w, Isa::kAvx512) : nullptr;
                if constexpr (kTile == 2) {
                    if (n == 2) {
                        pass<kBits, kS, 2, M, kUnpack>(w, g, a, r0, bias, y, ldy, accumulate, uq);
                        return;
                    }
                }
                pass<kBits, kS, 1, M, kUnpack>(w, g, a, r0, bias, y, ldy, accumulate, uq);
            });
        return;
    }
    // Rows in passes of up to 8 (decode steps, revivals), a group at a time: each thread
    // reads its groups from memory as one sequential stream. Several groups per pass would share
    // each activation broadcast but read several streams a group apart in turn, which the memory
    // system serves more slowly (docs/benchmarks/zen5.md, "One group per pass"); with the weights
    // in cache the two run alike.
    for_each_pass<kMaxRowsPerPass>(w, m, g0, g1, 1, [&]<int M>(int64_t g, int64_t, int64_t r0) {
        pass<kBits, kS, 1, M>(w, g, a, r0, bias, y, ldy, accumulate);
    });
}

}  // namespace

LAZYLLM_QGEMV_FORMATS(Isa::kAvx512)

void dequant_bf16_panels(const Weights& w, int32_t offset, int64_t g0, int64_t g1, uint16_t* panels,
                         uint8_t* tmp) {
    with_format(w, [&]<int kBits, Scales kS>() {
        dequant_groups<kBits, kS>(w, offset, g0, g1, panels, tmp);
    });
}

}  // namespace lazyllm::kernels::qgemv
