// Unpacking GGML blocks and writing them into QuantLinear's interleaved layout (qgemv_pack.h).
#include "kernels/qgemv_pack.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_isa.h"

namespace lazyllm::kernels::qgemv {

namespace {

// The 4- and 5-bit formats: qs[j] holds element j in its low nibble and element j + 16 in its
// high one; the 5-bit formats add bit j of qh as bit 4 of element j (the 4-bit ones have no qh,
// read as 0), and the affine ones (Q4_1, Q5_1) a min after d. Block: quant::BlockQ{4,5}_{0,1}.
template <typename Block>
void unpack_nibbles(const uint8_t* src, UnpackedBlock* out) {
    constexpr bool kHasMin = requires(const Block& b) { b.m; };
    constexpr bool kHasHigh = requires(const Block& b) { b.qh; };
    Block b;
    std::memcpy(&b, src, sizeof(b));
    out->d = b.d;
    if constexpr (kHasMin) out->m = b.m;
    uint32_t qh = 0;
    if constexpr (kHasHigh) std::memcpy(&qh, b.qh, sizeof(qh));
    for (int j = 0; j < kBlock / 2; ++j) {
        out->u[j] = static_cast<uint8_t>((b.qs[j] & 0x0F) | (((qh >> j) << 4) & 0x10));
        out->u[j + kBlock / 2] = static_cast<uint8_t>((b.qs[j] >> 4) | ((qh >> (j + 12)) & 0x10));
    }
}

// Sub-block `sub` (32 elements) of a Q4_K / Q5_K super-block: unsigned 4- or 5-bit quants,
// the super-block's d and -dmin, and the sub-block's 6-bit scale and min multipliers.
template <typename Block>
void unpack_k(const uint8_t* src, int sub, UnpackedBlock* out) {
    constexpr bool kHasHigh = requires(const Block& b) { b.qh; };
    Block b;
    std::memcpy(&b, src, sizeof(b));
    uint8_t sc = 0, mn = 0;
    quant::get_scale_min_k4(sub, b.scales, &sc, &mn);
    out->d = b.d;
    out->m = static_cast<uint16_t>(b.dmin ^ 0x8000u);  // -dmin: the fp16 sign bit flipped
    out->sc[0] = static_cast<int8_t>(sc);              // <= 63
    out->sc[1] = static_cast<int8_t>(mn);
    // Sub-block s: nibble s % 2 of qs[32 (s / 2) + l]; bit s of qh[l] is its fifth bit.
    const uint8_t* qs = b.qs + 32 * (sub / 2);
    for (int l = 0; l < kBlock; ++l) {
        int u = (sub % 2 == 0) ? (qs[l] & 0x0F) : (qs[l] >> 4);
        if constexpr (kHasHigh) u |= ((b.qh[l] >> sub) & 1) << 4;
        out->u[l] = static_cast<uint8_t>(u);
    }
}

// Sub-block `sub` (32 elements) of a Q6_K super-block: element e = 32 sub + l has its low 4
// bits in nibble (e % 128) / 64 of ql[64 (e / 128) + e % 64], its high 2 bits at bit
// 2 ((e % 128) / 32) of qh[32 (e / 128) + l], and scale e / 16 (ggml-quants.c,
// dequantize_row_q6_K).
void unpack_q6_k(const uint8_t* src, int sub, UnpackedBlock* out) {
    quant::BlockQ6K b;
    std::memcpy(&b, src, sizeof(b));
    out->d = b.d;
    out->m = 0;
    out->sc[0] = b.scales[2 * sub];
    out->sc[1] = b.scales[2 * sub + 1];
    const int half = sub / 4, quarter = sub % 4;
    const uint8_t* ql = b.ql + 64 * half + 32 * (quarter % 2);
    const uint8_t* qh = b.qh + 32 * half;
    for (int l = 0; l < kBlock; ++l) {
        const int lo = quarter < 2 ? (ql[l] & 0x0F) : (ql[l] >> 4);
        out->u[l] = static_cast<uint8_t>(lo | (((qh[l] >> (2 * quarter)) & 3) << 4));
    }
}

// Sub-block `sub` (32 elements) of a Q3_K super-block: element e = 32 sub + l has its low 2
// bits at bit 2 (sub % 4) of qs[32 (sub / 4) + l], its high bit at bit sub of hmask[l] (a clear
// one subtracts 4) and scale e / 16 (quant_blocks.h, BlockQ3K). Stored as u = q + 4 (0..7,
// offset 4) with each half's scale minus 32 as its int8 multiplier.
void unpack_q3_k(const uint8_t* src, int sub, UnpackedBlock* out) {
    quant::BlockQ3K b;
    std::memcpy(&b, src, sizeof(b));
    out->d = b.d;
    out->m = 0;
    out->sc[0] = static_cast<int8_t>(quant::q3_k_scale(2 * sub, b.scales) - 32);
    out->sc[1] = static_cast<int8_t>(quant::q3_k_scale(2 * sub + 1, b.scales) - 32);
    const uint8_t* qs = b.qs + 32 * (sub / 4);
    const int shift = 2 * (sub % 4);
    for (int l = 0; l < kBlock; ++l) {
        const int low = (qs[l] >> shift) & 3;
        const int high = (b.hmask[l] >> sub) & 1;
        out->u[l] = static_cast<uint8_t>(low | (high << 2));  // q + 4 = low - 4 * !high + 4
    }
}

// Sub-block `sub` (32 elements) of an IQ4_XS super-block: its 16 bytes of grid indexes (low
// nibbles elements 0..15, high 16..31) as the quants, the super-block's d, and the sub-block's
// 6-bit scale minus 32 as its multiplier (quant_blocks.h, BlockIQ4XS).
void unpack_iq4_xs(const uint8_t* src, int sub, UnpackedBlock* out) {
    quant::BlockIQ4XS b;
    std::memcpy(&b, src, sizeof(b));
    out->d = b.d;
    out->m = 0;
    out->sc[0] = static_cast<int8_t>(quant::iq4_xs_scale(sub, b.scales_h, b.scales_l) - 32);
    out->sc[1] = 0;
    const uint8_t* qs = b.qs + 16 * sub;
    for (int j = 0; j < kBlock / 2; ++j) {
        out->u[j] = static_cast<uint8_t>(qs[j] & 0x0F);
        out->u[j + kBlock / 2] = static_cast<uint8_t>(qs[j] >> 4);
    }
}

// nearbyint(x) in the default rounding mode (half to even) for |x| < 2^22, without a libm
// call (the generic build has no SSE4.1 roundss): adding 1.5 * 2^23 leaves no fraction bits
// (the build has no -ffast-math, so the sum is rounded and not folded away).
inline float round_half_even(float x) {
    constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
    return (x + kMagic) - kMagic;
}

}  // namespace

bool format_of(GgmlType type, FormatSpec* spec) {
    struct Entry {
        GgmlType type;
        FormatSpec spec;
    };
    static constexpr Entry kFormats[] = {
        {GgmlType::Q4_0, {4, Scales::kD, 8}},   {GgmlType::Q4_1, {4, Scales::kDMin, 0}},
        {GgmlType::Q5_0, {5, Scales::kD, 16}},  {GgmlType::Q5_1, {5, Scales::kDMin, 0}},
        {GgmlType::Q8_0, {8, Scales::kD, 128}}, {GgmlType::Q4_K, {4, Scales::kK, 0}},
        {GgmlType::Q5_K, {5, Scales::kK, 0}},   {GgmlType::Q6_K, {6, Scales::kD, 0}},
        {GgmlType::Q3_K, {3, Scales::kD, 0}},   {GgmlType::IQ4_XS, {4, Scales::kGrid, 128}},
    };
    for (const Entry& e : kFormats) {
        if (e.type == type) {
            *spec = e.spec;
            return true;
        }
    }
    return false;
}

void unpack_block(GgmlType type, const uint8_t* src, int sub, UnpackedBlock* out) {
    using namespace quant;  // NOLINT: block structs of this function's concern
    out->m = 0;
    if (type == GgmlType::Q8_0) {
        BlockQ8_0 b;
        std::memcpy(&b, src, sizeof(b));
        out->d = b.d;
        for (int j = 0; j < kBlock; ++j) out->u[j] = static_cast<uint8_t>(b.qs[j]) ^ 0x80u;
        return;
    }
    if (type == GgmlType::Q4_K) return unpack_k<BlockQ4K>(src, sub, out);
    if (type == GgmlType::Q5_K) return unpack_k<BlockQ5K>(src, sub, out);
    if (type == GgmlType::Q6_K) return unpack_q6_k(src, sub, out);
    if (type == GgmlType::Q3_K) return unpack_q3_k(src, sub, out);
    if (type == GgmlType::IQ4_XS) return unpack_iq4_xs(src, sub, out);
    const bool unpacked = with_blocks(type, src, kBlock, [&]<typename B>(const B*, int64_t) {
        if constexpr (NibbleBlock<B>) {
            unpack_nibbles<B>(src, out);
        } else {
            LAZYLLM_CHECK_MSG(false, "unpack_block: type without a QuantLinear format");
        }
    });
    LAZYLLM_CHECK_MSG(unpacked, "unpack_block: type without a QuantLinear format");
}

void quantize_block_q8_0(const float* x, UnpackedBlock* out) {
    float amax = 0.0f;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    out->d = quant::fp32_to_fp16_scalar(amax / 127.0f);
    out->m = 0;
    const float d = quant::fp16_to_fp32_scalar(out->d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kBlock; ++j) {
        const float q = std::clamp(round_half_even(x[j] * id), -127.0f, 127.0f);
        out->u[j] = static_cast<uint8_t>(static_cast<int>(q) + 128);
    }
}

void store_lane(const Weights& w, uint8_t* group, int64_t b, int lane, const UnpackedBlock& blk) {
    uint8_t* qs = group + b * w.qs_bytes();
    if (w.bits == 3) {
        // The low 2 bits of elements 16p + j, + 4, + 8, + 12 in chunk p; the third bits in
        // chunk 2 at bit c (element 8c + j) and 4 + c (8c + 4 + j).
        for (int j = 0; j < 4; ++j) {
            uint8_t third = 0;
            for (int p = 0; p < 2; ++p) {
                const uint8_t* u = blk.u + 16 * p + j;
                qs[p * kChunkBytes + lane * 4 + j] = static_cast<uint8_t>(
                    (u[0] & 3) | ((u[4] & 3) << 2) | ((u[8] & 3) << 4) | ((u[12] & 3) << 6));
            }
            for (int c = 0; c < 4; ++c) {
                third |= static_cast<uint8_t>(((blk.u[8 * c + j] >> 2) & 1) << c);
                third |= static_cast<uint8_t>(((blk.u[8 * c + 4 + j] >> 2) & 1) << (4 + c));
            }
            qs[2 * kChunkBytes + lane * 4 + j] = third;
        }
    } else if (w.bits != 8) {
        for (int c = 0; c < 4; ++c) {
            for (int j = 0; j < 4; ++j) {
                qs[c * kChunkBytes + lane * 4 + j] = static_cast<uint8_t>(
                    (blk.u[8 * c + j] & 0x0F) | ((blk.u[8 * c + 4 + j] & 0x0F) << 4));
            }
        }
        // 5 bits: the fifth bit of element 8c + j at bit c of chunk 4, of 8c + 4 + j at 4 + c.
        for (int j = 0; w.bits == 5 && j < 4; ++j) {
            uint8_t high = 0;
            for (int c = 0; c < 4; ++c) {
                high |= static_cast<uint8_t>(((blk.u[8 * c + j] >> 4) & 1) << c);
                high |= static_cast<uint8_t>(((blk.u[8 * c + 4 + j] >> 4) & 1) << (4 + c));
            }
            qs[4 * kChunkBytes + lane * 4 + j] = high;
        }
        // 6 bits: the high 2 bits of elements 16p + j, + 4, + 8, + 12 in chunk 4 + p.
        for (int p = 0; w.bits == 6 && p < 2; ++p) {
            for (int j = 0; j < 4; ++j) {
                const uint8_t* u = blk.u + 16 * p + j;
                qs[(4 + p) * kChunkBytes + lane * 4 + j] = static_cast<uint8_t>(
                    (u[0] >> 4) | ((u[4] >> 4) << 2) | ((u[8] >> 4) << 4) | ((u[12] >> 4) << 6));
            }
        }
    } else {
        for (int c = 0; c < 8; ++c) {
            for (int j = 0; j < 4; ++j) qs[c * kChunkBytes + lane * 4 + j] = blk.u[4 * c + j];
        }
    }
    // d and m per super-block (written by each of its blocks: the same values) or per block.
    const int64_t is = w.per_super() ? b / kSuperBlocks : b;
    reinterpret_cast<uint16_t*>(group + w.scales_offset())[is * kGroupRows + lane] = blk.d;
    if (w.has_min())
        reinterpret_cast<uint16_t*>(group + w.mins_offset())[is * kGroupRows + lane] = blk.m;
    if (w.per_super()) {
        auto* sc = reinterpret_cast<int8_t*>(group + w.sub_offset());
        sc[(b * kGroupRows + lane) * 2] = blk.sc[0];
        sc[(b * kGroupRows + lane) * 2 + 1] = blk.sc[1];
    }
}

}  // namespace lazyllm::kernels::qgemv
