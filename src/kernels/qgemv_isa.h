// Internal interface of QuantLinear (qgemv.h): the packed weight layout, the quantized
// activations, and the kernels that read them: the scalar reference (qgemv_ref.cpp) and the
// instantiations for Isa::kAvx512 (AVX-512 VNNI, qgemv_vnni.cpp) and Isa::kAvx2
// (qgemv_avx2.cpp), entered through isa_dispatch (simd.h) with the target QuantLinear picked
// at create() (qgemv_isa()).
//
// Packed weights. Output rows are taken 16 at a time ("group"); a group's data is contiguous:
// its n_blocks blocks of 32 inputs in segments of up to 8 blocks (kSegBlocks; the last one of a
// group may hold fewer), each segment a head of scales, then its blocks' quants:
//   d    [n_d][16]             fp16 scales: n_d = 1 for the K-quants and IQ4_XS (one per
//                              super-block of 256 inputs, which is the segment), else one per
//                              block
//   m    [n_d][16]             fp16 mins (affine formats only; K-quants: -dmin)
//   sub  [blocks][16][2]       K-quants and IQ4_XS only, int8 per block: Q3_K and Q6_K its two
//                              half-block scales, Q4_K / Q5_K the block's 6-bit scale and min
//                              multipliers, IQ4_XS its scale multiplier and 0
//   (zero padding to a multiple of 64 bytes)
//   qs   [blocks][qs_bytes]    unsigned quants, 4 per int32 lane, lane i = row g*16 + i
// so that a thread streaming a group reads one ascending stream: with the scales in arrays at
// the group's end a decode GEMV from memory took 1.14-1.32x the time
// (docs/benchmarks/zen5.md, "Scales beside their quants").
// 4-bit quants: 4 chunks of 64 bytes per block; byte 4*i + j of chunk c holds element
// 8c + j of row i in its low nibble and element 8c + 4 + j in its high nibble (j < 4).
// 5-bit quants: their low 4 bits as the 4-bit layout (chunks 0-3), then chunk 4: byte 4*i + j
// holds the fifth bit of element 8c + j of row i at bit c and of element 8c + 4 + j at bit
// 4 + c (c < 4).
// 8-bit quants: 8 chunks of 64 bytes; byte 4*i + j of chunk c is element 4c + j of row i.
// 6-bit quants (Q6_K): the low 4 bits as the 4-bit layout (chunks 0-3), then 2 chunks of the
// high 2 bits: byte 4*i + j of chunk 4 + p holds, from bit 0 up, the high bits of elements
// 8c + j and 8c + 4 + j for c = 2p, then for c = 2p + 1 (the two nibbles of byte 4*i + j of
// chunks 2p and 2p + 1).
// 3-bit quants (Q3_K): 2 chunks of the low 2 bits, laid out as the 6-bit quants' high bits
// (byte 4*i + j of chunk p: elements 8c + j and 8c + 4 + j for c = 2p, then c = 2p + 1, from bit
// 0 up), then chunk 2 of the third bits, laid out as the 5-bit quants' fifth bits.
// So every 64-byte chunk (after masking out one nibble) is the u8 operand of one vpdpbusd
// against 4 consecutive activations broadcast to all 16 lanes.
//
// Values, every format exactly as GGML dequantizes it. A weight is d * (u - offset) (+ m for
// affine formats), u the stored unsigned quant: Q4_0 offset 8, Q4_1 0 + min, Q5_0 16 (u = 5-bit
// q), Q5_1 0 + min, Q8_0 128 (u = q + 128); Q4_K and Q5_K offset 0, d = D * sc and
// m = M * mn with D, M = -dmin their super-block's fp16 values and sc, mn the block's 6-bit
// multipliers (both products exact in fp32); IQ4_XS stores its 4-bit grid indexes n, read as
// u = kGridU8[n] = kValuesIq4nl[n] + 128 (offset 128), with d = D * sc, sc its block's 6-bit
// scale minus 32 (GGML's dl * value, the same two roundings); IQ4_NL the same u with its
// block's own fp16 d. With activations a = d_x * qx,
// one block contributes
//   d * d_x * (sum u * qx - offset * sum qx)  +  m * (d_x * sum qx)
// where the int32 part is exact (|sum| < 2^24, so also exact in fp32).
// Q6_K and Q3_K ("half-scale" formats): d their super-block's fp16 scale and, per 16-element
// half h of the block, an int8 scale sc_h and an offset o (Q6_K: 32; Q3_K: 4, its stored
// 0..63 scale minus 32 as sc_h, u = q + 4), so the int32 part is
//   sc_0 * (sum_{k<16} u * qx - o * X_0) + sc_1 * (sum_{k>=16} u * qx - o * X_1)
// with X_h the activations' half sums (Activations::half_sums); |.| <= 2 * 16 * 32 * 127 * 128
// < 2^24.
//
// Float operations, identical in every kernel set so their results are bit-identical:
// per row and block, acc = fma(float(isum), d * d_x, acc), then for affine formats
// acc = fma(m, s_x, acc) with s_x = d_x * float(sum qx) (K-quants: d = D * float(sc) and
// m = M * float(mn) first; IQ4_XS d = D * float(sc)); at the end y = (acc + bias) + y_old (each
// term only when present).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "kernels/quant_blocks.h"
#include "kernels/simd.h"

namespace lazyllm::kernels::qgemv {

constexpr int kGroupRows = 16;      // output rows per group: one zmm of int32 lanes
constexpr int kBlock = 32;          // inputs per block, for weights and activations
constexpr int kMaxRowsPerPass = 8;  // activation rows sharing one pass over a group
constexpr int kChunkBytes = 64;

// Bytes of one block's quants for one group (qs above): one 64-byte chunk per bit.
constexpr size_t qs_bytes_for(int bits) { return static_cast<size_t>(bits) * kChunkBytes; }
// The half-scale formats (Values above): 6 bits (Q6_K) and 3 bits (Q3_K), and their offset.
constexpr bool half_scales(int bits) { return bits == 6 || bits == 3; }
constexpr int half_offset_shift(int bits) { return bits == 6 ? 5 : 2; }
constexpr int32_t half_offset(int bits) { return int32_t{1} << half_offset_shift(bits); }

// How a format's scales are stored (layout above).
enum class Scales {
    kD,     // a d per block: Q4_0, Q5_0, Q8_0; Q3_K, Q6_K (per super-block, with half scales)
    kDMin,  // a d and a min per block: Q4_1, Q5_1
    kK,     // a d and a min per super-block, 6-bit multipliers per block: Q4_K, Q5_K
    kGrid,  // a d per super-block, an int8 multiplier per block, 4-bit indexes into a grid: IQ4_XS
    kGridBlock,  // a d per block, 4-bit indexes into the grid: IQ4_NL
};

// IQ4_XS's and IQ4_NL's grid (quant::kValuesIq4nl) plus 128: the unsigned quant of each index.
inline constexpr std::array<uint8_t, 16> kGridU8 = [] {
    std::array<uint8_t, 16> g{};
    for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<uint8_t>(quant::kValuesIq4nl[i] + 128);
    return g;
}();

constexpr int kSuperBlocks = 8;  // blocks per K-quant super-block (256 inputs)
constexpr int kSegBlocks = kSuperBlocks;  // blocks per segment of a group (layout above)

// The scale layout of a format: does it have mins, and are d (and m) per super-block with
// per-block int8 multipliers (the K-quants, IQ4_XS)?
constexpr bool has_min(Scales s) { return s == Scales::kDMin || s == Scales::kK; }
constexpr bool per_super(int bits, Scales s) {
    return half_scales(bits) || s == Scales::kK || s == Scales::kGrid;
}
// Is the block's d its super-block's times the block's int8 multiplier?
constexpr bool block_multiplier(Scales s) { return s == Scales::kK || s == Scales::kGrid; }
// Are the quants 4-bit indexes into kGridU8 (IQ4_XS, IQ4_NL)?
constexpr bool grid_quants(Scales s) { return s == Scales::kGrid || s == Scales::kGridBlock; }

// A segment of `blocks` blocks (layout above): its scales' bytes, its head (the scales padded
// to 64 bytes), and the whole segment.
constexpr size_t seg_scale_bytes(int bits, Scales kind, int64_t blocks) {
    const int64_t n_d = per_super(bits, kind) ? 1 : blocks;
    return static_cast<size_t>(n_d * kGroupRows * 2 * (has_min(kind) ? 2 : 1) +
                               (per_super(bits, kind) ? blocks * kGroupRows * 2 : 0));
}
constexpr size_t seg_head_bytes(int bits, Scales kind, int64_t blocks) {
    return (seg_scale_bytes(bits, kind, blocks) + kChunkBytes - 1) / kChunkBytes * kChunkBytes;
}
constexpr size_t seg_bytes(int bits, Scales kind, int64_t blocks) {
    return seg_head_bytes(bits, kind, blocks) + static_cast<size_t>(blocks) * qs_bytes_for(bits);
}

// Where block b of a group keeps its data: byte offsets from the group's start.
struct BlockOffsets {
    size_t qs, d, m, sub;
};

// Block b's offsets in a group of n_blocks blocks of a format (layout above).
constexpr BlockOffsets block_offsets(int bits, Scales kind, int64_t n_blocks, int64_t b) {
    const int64_t s = b / kSegBlocks, j = b % kSegBlocks;
    const int64_t blocks = std::min<int64_t>(kSegBlocks, n_blocks - s * kSegBlocks);
    const bool sup = per_super(bits, kind);
    const size_t base = static_cast<size_t>(s) * seg_bytes(bits, kind, kSegBlocks);
    const size_t head = seg_head_bytes(bits, kind, blocks);
    const size_t row_bytes = kGroupRows * 2;  // 16 fp16 scales, or 16 int8 pairs
    const size_t mins = (sup ? 1 : static_cast<size_t>(blocks)) * row_bytes;
    const size_t d = base + (sup ? 0 : static_cast<size_t>(j) * row_bytes);
    return {base + head + static_cast<size_t>(j) * qs_bytes_for(bits), d, d + mins,
            base + mins * (has_min(kind) ? 2 : 1) + static_cast<size_t>(j) * row_bytes};
}

// f(b, offsets of block b) for every block of a group, in order: a segment's blocks step
// from its first one's offsets (the kernels' loop; the same values as block_offsets).
template <int kBits, Scales kS, typename F>
inline void for_each_block(int64_t n_blocks, F&& f) {
    constexpr size_t kRow = kGroupRows * 2, kQs = qs_bytes_for(kBits);
    constexpr size_t kD = per_super(kBits, kS) ? 0 : kRow;  // d and m: per block, or shared
    for (int64_t s0 = 0; s0 < n_blocks; s0 += kSegBlocks) {
        const BlockOffsets o = block_offsets(kBits, kS, n_blocks, s0);
        const int64_t n = std::min<int64_t>(kSegBlocks, n_blocks - s0);
        for (int64_t j = 0; j < n; ++j) {
            const auto u = static_cast<size_t>(j);
            f(s0 + j, BlockOffsets{o.qs + u * kQs, o.d + u * kD, o.m + u * kD, o.sub + u * kRow});
        }
    }
}

struct Weights {
    const uint8_t* data = nullptr;  // [n_groups][group_bytes], 64-byte aligned
    int64_t n_in = 0;
    int64_t n_out = 0;
    int64_t n_groups = 0;
    int64_t n_blocks = 0;  // n_in / 32
    int bits = 4;          // 3, 4, 5, 6 or 8 bits per stored quant
    Scales scales_kind = Scales::kD;  // kD with 3 and 6 bits
    size_t group_bytes = 0;           // multiple of 64

    bool has_min() const { return qgemv::has_min(scales_kind); }
    bool per_super() const { return qgemv::per_super(bits, scales_kind); }
    BlockOffsets offsets(int64_t b) const { return block_offsets(bits, scales_kind, n_blocks, b); }
    const uint8_t* group(int64_t g) const { return data + static_cast<size_t>(g) * group_bytes; }
    // Block b of group g: its quants, its 16 rows' d (and m; per super-block for the
    // K-quants), and the K-quants' [16][2] int8 multipliers.
    const uint8_t* block_qs(int64_t g, int64_t b) const { return group(g) + offsets(b).qs; }
    const uint16_t* block_d(int64_t g, int64_t b) const {
        return reinterpret_cast<const uint16_t*>(group(g) + offsets(b).d);
    }
    const uint16_t* block_m(int64_t g, int64_t b) const {
        return reinterpret_cast<const uint16_t*>(group(g) + offsets(b).m);
    }
    const int8_t* block_sub(int64_t g, int64_t b) const {
        return reinterpret_cast<const int8_t*>(group(g) + offsets(b).sub);
    }
};

// A group's bytes per block, scales included (what a kernel streams per block, on average).
constexpr int64_t block_stream_bytes(int bits, Scales kind) {
    return static_cast<int64_t>(seg_bytes(bits, kind, kSegBlocks)) / kSegBlocks;
}

// Bytes of one group in the layout above (a multiple of 64: every segment is).
inline size_t group_bytes_for(int bits, Scales kind, int64_t n_blocks) {
    const int64_t full = n_blocks / kSegBlocks, rest = n_blocks % kSegBlocks;
    return static_cast<size_t>(full) * seg_bytes(bits, kind, kSegBlocks) +
           (rest > 0 ? seg_bytes(bits, kind, rest) : 0);
}

// Bytes of weights a gemv keeps in L2 while row passes go over them (for_each_pass): half
// the core's L2, within [128 KiB, 1 MiB]. Without chunks, every group's passes read a long
// prompt's activations from memory again; chunks of a quarter to half of L2 run alike, smaller
// ones slower (docs/benchmarks/xeon_no_amx.md,
// "Prompt-sized quantized GEMMs in L2-sized chunks").
inline int64_t pass_chunk_bytes() {
    return std::clamp<int64_t>(l2_cache_bytes() / 2, int64_t{128} << 10, int64_t{1} << 20);
}

// Prompt passes over formats of fewer than 8 bits unpack a chunk of groups once, to a byte per
// quant in the 8-bit layout (grid indexes looked up), and run every row pass over that copy.
// A block's unpacked bytes: its quants, and on AVX2 its 16 rows' fp32 weight scales after them
// (d, then m for formats with a min: block_scales, qgemv_float_inl.h); a group's; and the groups
// of one chunk (about pass_chunk_bytes() of them, at least one).
constexpr int64_t unpacked_block_bytes(Isa isa, Scales s) {
    const int64_t scales = isa == Isa::kAvx2 ? kGroupRows * 4 * (has_min(s) ? 2 : 1) : 0;
    return static_cast<int64_t>(qs_bytes_for(8)) + scales;
}
inline int64_t unpacked_group_bytes(const Weights& w, Isa isa) {
    return w.n_blocks * unpacked_block_bytes(isa, w.scales_kind);
}
inline int64_t unpacked_chunk_groups(const Weights& w, Isa isa) {
    return std::max<int64_t>(1, pass_chunk_bytes() / unpacked_group_bytes(w, isa));
}
// Does target isa unpack a format for its prompt passes? VNNI every format under 8 bits; AVX2
// the 4-, 5- and 6-bit ones but IQ4_XS and IQ4_NL (grid values, up to 241, take two vpmaddubsw per
// byte either way; Q3_K's packed 3 bits cost little to unpack).
constexpr bool unpacks_format(Isa isa, int bits, Scales s) {
    if (isa == Isa::kAvx512) return bits != 8;
    return isa == Isa::kAvx2 && (bits == 4 || bits == 5 || bits == 6) && !grid_quants(s);
}
// Rows up to which a call runs passes of kMaxRowsPerPass rows over the stored blocks (decode
// steps, and the rows a lazy decode step revives) before it takes the prompt passes: with
// VNNI 16 for the 4- to 6-bit formats, where reading the blocks twice beats unpacking them once
// (16 rows, two threads, AMX Xeon: Q4_1 3072 x 576 25% faster, Q4_K, Q5_K, Q6_K and IQ4_XS
// 2048 x 8192 10-17%; Q3_K and Q8_0 8-11% slower, so 8), else 8.
constexpr int64_t block_pass_rows(Isa isa, int bits) {
    return isa == Isa::kAvx512 && bits >= 4 && bits <= 6 ? 2 * kMaxRowsPerPass : kMaxRowsPerPass;
}
// Does a call of m rows take those passes, and so need a thread's unpack_scratch_bytes?
constexpr bool unpacks_prompt(Isa isa, int bits, Scales s, int64_t m) {
    return unpacks_format(isa, bits, s) && m > block_pass_rows(isa, bits);
}
// A thread's scratch for those passes (64-byte aligned by the caller).
inline size_t unpack_scratch_bytes(const Weights& w, Isa isa) {
    return static_cast<size_t>(unpacked_chunk_groups(w, isa) * unpacked_group_bytes(w, isa));
}
// Q3_K's quants are unpacked with their half scales applied: u = sc_h * (q - 4) + 127, in
// [3, 255] (|sc_h| <= 32, q - 4 in [-4, 3]), so that u * qx summed over the block, minus 127 *
// sum qx, is the block's int32 sum of the Values above, and the pass runs as Q8_0's. Its
// Activations::corr therefore holds -127 * sum qx (corr_offset); the half-scale kernels
// themselves take no correction from corr.
constexpr bool prescaled_unpack(int bits) { return bits == 3; }
constexpr int32_t kPrescaledOffset = 127;
// The offset o of Activations::corr = -o * sum qx for a format of `bits` and offset `offset`.
constexpr int32_t corr_offset(int bits, int32_t offset) {
    return prescaled_unpack(bits) ? kPrescaledOffset : offset;
}

// Quantized activation rows (one forward()), block-major so that the rows a kernel pass
// reads for one block are adjacent.
struct Activations {
    int64_t m = 0;
    const int8_t* q = nullptr;      // [n_blocks, m, 32] int8
    const float* d = nullptr;       // [n_blocks, m] scale amax / 127 (0 for an all-zero block)
    const float* s = nullptr;       // [n_blocks, m] d * float(sum q)
    const int32_t* corr = nullptr;  // [n_blocks, m] -corr_offset * sum q
    // Half-scale weights only: [n_blocks, m] the two 16-element halves' sums of q, as int16 in
    // the low and high half of each int32 (ref::half_sums).
    const int32_t* half_sums = nullptr;

    // The rows from r0 on, with the same stride m: block b, row r of the result is row r0 + r.
    Activations from_row(int64_t r0) const {
        return {m,      q + r0 * kBlock, d + r0,
                s + r0, corr + r0,       half_sums != nullptr ? half_sums + r0 : nullptr};
    }
};

struct ActivationBuffers {
    int8_t* q;
    float* d;
    float* s;
    int32_t* corr;
};

// The outlier channels of each row (QuantLinear::forward, qgemv_outliers.h), chosen from the
// row alone: with `lanes` its 16 sums of |x| (lane j: x[j], x[j + 16], ... added in order),
// mean = (lanes[0] + ... + lanes[15], added in order) / n_in, the channels with |x| > ratio *
// mean, at most kRowOutliers: the largest, ties to the lower channel. They leave the row's
// int8 blocks (rounded as 0) and come back as fp32 terms (add_columns). Every kernel set
// chooses the same ones: the sums are the same additions in the same order.
inline constexpr int kRowOutliers = 8;
struct RowOutliers {
    float ratio = 0.0f;
    int32_t* count = nullptr;    // [m]
    int32_t* channel = nullptr;  // [m, kRowOutliers]: row r's, ascending, from r * kRowOutliers
    float* value = nullptr;      // [m, kRowOutliers]: x[r, channel]
};

// One row's chosen channels: n of them from ch (RowOutliers::channel of the row); none where
// the call takes no outlier channels.
struct RowChannels {
    const int32_t* ch = nullptr;
    int n = 0;
};

// The lanes of block b that hold one of a row's outlier channels ch[next ..] (ascending, n in
// all), as bits; `next` moves past them.
inline uint32_t block_outliers(const int32_t* ch, int n, int& next, int64_t b) {
    uint32_t bits = 0;
    for (; next < n && ch[next] < (b + 1) * kBlock; ++next) bits |= 1u << (ch[next] - b * kBlock);
    return bits;
}

// One row's choice while its channels are scanned in ascending order (shared by every kernel
// set): add() each channel over the bound, then finish().
class RowOutlierPick {
public:
    static float bound(const float (&lanes)[16], int64_t n_in, float ratio) {
        float sum = 0.0f;
        for (float s : lanes) sum += s;
        return ratio * (sum / static_cast<float>(n_in));
    }
    // Channels c0 + j of x for the set bits j of `over` (their |x| over the bound), after every
    // channel added before.
    void add_bits(int64_t c0, uint32_t over, const float* x) {
        for (; over != 0; over &= over - 1) {
            const int64_t c = c0 + __builtin_ctz(over);
            add(static_cast<int32_t>(c), x[c]);
        }
    }
    // Channel c (above every channel added before) with value v, |v| over the bound.
    void add(int32_t c, float v) {
        const float a = v < 0.0f ? -v : v;
        int i = n_;
        if (n_ == kRowOutliers) {
            if (!(a > abs_[n_ - 1])) return;  // the earlier channel wins a tie
            --i;
        } else {
            ++n_;
        }
        for (; i > 0 && a > abs_[i - 1]; --i) {  // by |v| descending, stable
            abs_[i] = abs_[i - 1];
            ch_[i] = ch_[i - 1];
            val_[i] = val_[i - 1];
        }
        abs_[i] = a;
        ch_[i] = c;
        val_[i] = v;
    }
    // Row r's entry of `o`, channels ascending; returns their count.
    int finish(const RowOutliers& o, int64_t r) {
        int32_t* ch = o.channel + r * kRowOutliers;
        float* val = o.value + r * kRowOutliers;
        int order[kRowOutliers];
        for (int i = 0; i < n_; ++i) order[i] = i;
        for (int i = 1; i < n_; ++i) {  // insertion sort by channel (n_ <= 8)
            const int t = order[i];
            int j = i;
            for (; j > 0 && ch_[order[j - 1]] > ch_[t]; --j) order[j] = order[j - 1];
            order[j] = t;
        }
        for (int i = 0; i < n_; ++i) {
            ch[i] = ch_[order[i]];
            val[i] = val_[order[i]];
        }
        o.count[r] = n_;
        return n_;
    }

private:
    int n_ = 0;
    int32_t ch_[kRowOutliers];
    float abs_[kRowOutliers], val_[kRowOutliers];
};

// Calls f.template operator()<kBits, kS>() for the weights' format: the kernel sets'
// per-format instantiations.
template <typename F>
inline void with_format(const Weights& w, F&& f) {
    const auto by_scales = [&]<int kBits>() {
        switch (w.scales_kind) {
            case Scales::kD:
                return f.template operator()<kBits, Scales::kD>();
            case Scales::kDMin:
                return f.template operator()<kBits, Scales::kDMin>();
            case Scales::kK:
                return f.template operator()<kBits, Scales::kK>();
            case Scales::kGrid:  // 4 bits only: taken before by_scales
            case Scales::kGridBlock:
                return;
        }
    };
    if (w.scales_kind == Scales::kGrid) {
        f.template operator()<4, Scales::kGrid>();
    } else if (w.scales_kind == Scales::kGridBlock) {
        f.template operator()<4, Scales::kGridBlock>();
    } else if (w.bits == 4) {
        by_scales.template operator()<4>();
    } else if (w.bits == 6) {
        f.template operator()<6, Scales::kD>();
    } else if (w.bits == 3) {
        f.template operator()<3, Scales::kD>();
    } else if (w.bits == 5) {
        by_scales.template operator()<5>();
    } else {
        f.template operator()<8, Scales::kD>();
    }
}

namespace ref {
// Rows [r0, r1) of x ([m, n_in], leading dimension ldx; n_in a multiple of 32) into the
// layout of Activations for m rows; q rounds x / d to nearest even (the default rounding mode,
// as vcvtps2dq). outliers: nullptr, or each row's outlier channels are chosen into it
// (RowOutliers) and rounded as 0.
void quantize_rows(const float* x, int64_t m, int64_t r0, int64_t r1, int64_t ldx, int64_t n_in,
                   int32_t offset, const ActivationBuffers& out,
                   const RowOutliers* outliers = nullptr);
// y[r, j] = fma(xv[r * ldxv + i], cols[i][j], y[r, j]) for i = 0 .. k - 1 in turn, rows r < m,
// j < n (y: leading dimension ldy): outlier channels' fp32 terms, for rows that share them.
void add_columns(const float* xv, int64_t ldxv, int64_t m, int k, const float* const* cols,
                 int64_t n, float* y, int64_t ldy);
// The weight of output row n, input c as GGML dequantizes it (Values above); `offset` is the
// format's.
float weight_value(const Weights& w, int32_t offset, int64_t n, int64_t c);
// half_sums of Activations from its q ([n_blocks, m] of 32), for half-scale weights.
void half_sums(const int8_t* q, int64_t m, int64_t n_blocks, int32_t* out);
// y[r, n] for rows r < m and the output rows of groups [g0, g1). bias: [n_groups * 16] or
// nullptr. y: leading dimension ldy.
void gemv(const Weights& w, const Activations& a, int64_t m, int64_t g0, int64_t g1,
          const float* bias, float* y, int64_t ldy, bool accumulate);
}  // namespace ref

// Prompt rows on AMX (QuantLinear::forward): groups [g0, g1) of w dequantized to bf16 in the AMX
// GEMM's packed panels (amx_gemm_pack's layout, gemm_amx.h: group g0 + 2 p + h is half h of
// panel p; a missing last half is zero), each weight weight_value's fp32 value rounded to
// nearest even. tmp: unpacked_group_bytes(w, kAvx512), 64-byte aligned. Needs AVX-512 BF16 and VNNI
// (qgemv_vnni.cpp).
void dequant_bf16_panels(const Weights& w, int32_t offset, int64_t g0, int64_t g1, uint16_t* panels,
                         uint8_t* tmp);

// The SIMD target QuantLinear runs for a context: kAvx512 where the CPU has AVX-512 VNNI and
// ctx.isa allows AVX-512, else kAvx2 where the CPU has AVX2 + FMA + F16C and ctx.isa allows
// it, else kRef.
Isa qgemv_isa(const KernelContext& ctx);

// The SIMD kernels of target I, same contracts as ref::quantize_rows and ref::gemv: I =
// kAvx512 (vpdpbusd, qgemv_vnni.cpp) or kAvx2 (vpmaddubsw with exact int16 partial sums,
// qgemv_avx2.cpp). gemv runs gemv_format for the weights' format.
template <Isa I>
void quantize_rows(const float* x, int64_t m, int64_t r0, int64_t r1, int64_t ldx, int64_t n_in,
                   int32_t offset, const ActivationBuffers& out, const RowOutliers* outliers);
template <Isa I>
void add_columns(const float* xv, int64_t ldxv, int64_t m, int k, const float* const* cols,
                 int64_t n, float* y, int64_t ldy);
// scratch: the calling thread's unpack_scratch_bytes(w, I) (64-byte aligned), or nullptr.
template <Isa I, int kBits, Scales kS>
void gemv_format(const Weights& w, const Activations& a, int64_t m, int64_t g0, int64_t g1,
                 const float* bias, float* y, int64_t ldy, bool accumulate, uint8_t* scratch);
template <Isa I>
inline void gemv(const Weights& w, const Activations& a, int64_t m, int64_t g0, int64_t g1,
                 const float* bias, float* y, int64_t ldy, bool accumulate, uint8_t* scratch) {
    with_format(w, [&]<int kBits, Scales kS>() {
        gemv_format<I, kBits, kS>(w, a, m, g0, g1, bias, y, ldy, accumulate, scratch);
    });
}

// A block's activation scale: d = amax / 127 and its inverse (0 for an all-zero block).
struct BlockScale {
    float d, id;
};
inline BlockScale block_scale(float amax) {
    const float d = amax / 127.0f;
    return {d, d != 0.0f ? 1.0f / d : 0.0f};
}
// Stores the statistics of activation block i (= b * m + r) with integer quant sum `sum`.
inline void set_block_stats(const ActivationBuffers& out, int64_t i, float d, int32_t sum,
                            int32_t offset) {
    out.d[i] = d;
    out.s[i] = d * static_cast<float>(sum);
    out.corr[i] = -offset * sum;
}

// In the ISA file of target I, after its gemv_passes<kBits, kS> (same parameters as
// gemv_format): gemv_format<I, ...> for every format, quantize_rows<I> and add_columns<I>
// (qgemv_float_inl.h).
#define LAZYLLM_QGEMV_FORMAT(I, kBits, kS)                                                        \
    template <>                                                                                   \
    void gemv_format<I, kBits, kS>(const Weights& w, const Activations& a, int64_t m, int64_t g0, \
                                   int64_t g1, const float* bias, float* y, int64_t ldy,          \
                                   bool accumulate, uint8_t* scratch) {                           \
        gemv_passes<kBits, kS>(w, a, m, g0, g1, bias, y, ldy, accumulate, scratch);               \
    }
#define LAZYLLM_QGEMV_FORMATS(I)                                                                   \
    template <>                                                                                    \
    void quantize_rows<I>(const float* x, int64_t m, int64_t r0, int64_t r1, int64_t ldx,          \
                          int64_t n_in, int32_t offset, const ActivationBuffers& out,              \
                          const RowOutliers* outliers) {                                           \
        quantize_rows_impl<I>(x, m, r0, r1, ldx, n_in, offset, out, outliers);                     \
    }                                                                                              \
    template <>                                                                                    \
    void add_columns<I>(const float* xv, int64_t ldxv, int64_t m, int k, const float* const* cols, \
                        int64_t n, float* y, int64_t ldy) {                                        \
        add_columns_impl<I>(xv, ldxv, m, k, cols, n, y, ldy);                                      \
    }                                                                                              \
    LAZYLLM_QGEMV_FORMAT(I, 4, Scales::kD)                                                         \
    LAZYLLM_QGEMV_FORMAT(I, 4, Scales::kDMin)                                                      \
    LAZYLLM_QGEMV_FORMAT(I, 4, Scales::kK)                                                         \
    LAZYLLM_QGEMV_FORMAT(I, 4, Scales::kGrid)                                                      \
    LAZYLLM_QGEMV_FORMAT(I, 4, Scales::kGridBlock)                                                 \
    LAZYLLM_QGEMV_FORMAT(I, 5, Scales::kD)                                                         \
    LAZYLLM_QGEMV_FORMAT(I, 5, Scales::kDMin)                                                      \
    LAZYLLM_QGEMV_FORMAT(I, 5, Scales::kK)                                                         \
    LAZYLLM_QGEMV_FORMAT(I, 3, Scales::kD)                                                         \
    LAZYLLM_QGEMV_FORMAT(I, 6, Scales::kD)                                                         \
    LAZYLLM_QGEMV_FORMAT(I, 8, Scales::kD)

}  // namespace lazyllm::kernels::qgemv
