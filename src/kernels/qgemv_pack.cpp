// Unpacking GGML blocks and writing them into QuantLinear's interleaved layout (qgemv_pack.h).
#include "kernels/qgemv_pack.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "base/check.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_isa.h"

namespace lazyllm::kernels::qgemv {

namespace {

// The unpacking below works on 8 bytes at a time as one little-endian word (byte k of the
// word: element k), masking and shifting every byte at once.
constexpr uint64_t kEachByte = 0x0101010101010101u;
constexpr uint64_t kLowNibbles = 0x0F * kEachByte;

// sizeof(T) bytes at p as one little-endian word, and back.
template <typename T>
inline T load_word(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

template <typename T>
inline void store_word(uint8_t* p, T v) {
    std::memcpy(p, &v, sizeof(v));
}

inline uint64_t load8(const uint8_t* p) { return load_word<uint64_t>(p); }
inline void store8(uint8_t* p, uint64_t v) { store_word(p, v); }

// Byte k of kSpread[b] is bit k of b.
constexpr std::array<uint64_t, 256> kSpread = [] {
    std::array<uint64_t, 256> t{};
    for (int b = 0; b < 256; ++b) {
        for (int k = 0; k < 8; ++k) t[b] |= static_cast<uint64_t>((b >> k) & 1) << (8 * k);
    }
    return t;
}();

// The 4- and 5-bit formats: qs[j] holds element j in its low nibble and element j + 16 in its
// high one; the 5-bit formats add bit j of qh as bit 4 of element j (the 4-bit ones have no qh,
// read as 0), and the affine ones (Q4_1, Q5_1) a min after d. Block: quant::BlockQ{4,5}_{0,1}.
template <typename Block>
void unpack_nibbles(const Block& b, UnpackedBlock* out) {
    constexpr bool kHasMin = requires { b.m; };
    constexpr bool kHasHigh = requires { b.qh; };
    out->d = b.d;
    out->m = 0;
    if constexpr (kHasMin) out->m = b.m;
    uint32_t qh = 0;
    if constexpr (kHasHigh) std::memcpy(&qh, b.qh, sizeof(qh));
    for (int h = 0; h < 2; ++h) {
        const uint64_t q = load8(b.qs + 8 * h);
        uint64_t lo = q & kLowNibbles, hi = (q >> 4) & kLowNibbles;
        if constexpr (kHasHigh) {
            lo |= kSpread[(qh >> (8 * h)) & 0xFF] << 4;
            hi |= kSpread[(qh >> (16 + 8 * h)) & 0xFF] << 4;
        }
        store8(out->u + 8 * h, lo);
        store8(out->u + kBlock / 2 + 8 * h, hi);
    }
}

// Sub-block `sub` (32 elements) of a Q4_K / Q5_K super-block: unsigned 4- or 5-bit quants,
// the super-block's d and -dmin, and the sub-block's 6-bit scale and min multipliers.
template <typename Block>
void unpack_k(const Block& b, int sub, UnpackedBlock* out) {
    constexpr bool kHasHigh = requires { b.qh; };
    uint8_t sc = 0, mn = 0;
    quant::get_scale_min_k4(sub, b.scales, &sc, &mn);
    out->d = b.d;
    out->m = static_cast<uint16_t>(b.dmin ^ 0x8000u);  // -dmin: the fp16 sign bit flipped
    out->sc[0] = static_cast<int8_t>(sc);              // <= 63
    out->sc[1] = static_cast<int8_t>(mn);
    // Sub-block s: nibble s % 2 of qs[32 (s / 2) + l]; bit s of qh[l] is its fifth bit.
    const uint8_t* qs = b.qs + 32 * (sub / 2);
    for (int h = 0; h < kBlock / 8; ++h) {
        uint64_t u = (load8(qs + 8 * h) >> (4 * (sub % 2))) & kLowNibbles;
        if constexpr (kHasHigh) u |= ((load8(b.qh + 8 * h) >> sub) & kEachByte) << 4;
        store8(out->u + 8 * h, u);
    }
}

// Sub-block `sub` (32 elements) of a Q6_K super-block: element e = 32 sub + l has its low 4
// bits in nibble (e % 128) / 64 of ql[64 (e / 128) + e % 64], its high 2 bits at bit
// 2 ((e % 128) / 32) of qh[32 (e / 128) + l], and scale e / 16 (ggml-quants.c,
// dequantize_row_q6_K).
void unpack_q6_k(const quant::BlockQ6K& b, int sub, UnpackedBlock* out) {
    out->d = b.d;
    out->m = 0;
    out->sc[0] = b.scales[2 * sub];
    out->sc[1] = b.scales[2 * sub + 1];
    const int half = sub / 4, quarter = sub % 4;
    const uint8_t* ql = b.ql + 64 * half + 32 * (quarter % 2);
    const uint8_t* qh = b.qh + 32 * half;
    for (int h = 0; h < kBlock / 8; ++h) {
        const uint64_t lo = (load8(ql + 8 * h) >> (quarter < 2 ? 0 : 4)) & kLowNibbles;
        const uint64_t hi = (load8(qh + 8 * h) >> (2 * quarter)) & (3 * kEachByte);
        store8(out->u + 8 * h, lo | (hi << 4));
    }
}

// Sub-block `sub` (32 elements) of a Q3_K super-block: element e = 32 sub + l has its low 2
// bits at bit 2 (sub % 4) of qs[32 (sub / 4) + l], its high bit at bit sub of hmask[l] (a clear
// one subtracts 4) and scale e / 16 (quant_blocks.h, BlockQ3K). Stored as u = q + 4 (0..7,
// offset 4) with each half's scale minus 32 as its int8 multiplier.
void unpack_q3_k(const quant::BlockQ3K& b, int sub, UnpackedBlock* out) {
    out->d = b.d;
    out->m = 0;
    out->sc[0] = static_cast<int8_t>(quant::q3_k_scale(2 * sub, b.scales) - 32);
    out->sc[1] = static_cast<int8_t>(quant::q3_k_scale(2 * sub + 1, b.scales) - 32);
    const uint8_t* qs = b.qs + 32 * (sub / 4);
    for (int h = 0; h < kBlock / 8; ++h) {
        const uint64_t low = (load8(qs + 8 * h) >> (2 * (sub % 4))) & (3 * kEachByte);
        const uint64_t high = (load8(b.hmask + 8 * h) >> sub) & kEachByte;
        store8(out->u + 8 * h, low | (high << 2));  // q + 4 = low - 4 * !high + 4
    }
}

// Sub-block `sub` (32 elements) of an IQ4_XS super-block: its 16 bytes of grid indexes (low
// nibbles elements 0..15, high 16..31) as the quants, the super-block's d, and the sub-block's
// 6-bit scale minus 32 as its multiplier (quant_blocks.h, BlockIQ4XS).
void unpack_iq4_xs(const quant::BlockIQ4XS& b, int sub, UnpackedBlock* out) {
    out->d = b.d;
    out->m = 0;
    out->sc[0] = static_cast<int8_t>(quant::iq4_xs_scale(sub, b.scales_h, b.scales_l) - 32);
    out->sc[1] = 0;
    const uint8_t* qs = b.qs + 16 * sub;
    for (int h = 0; h < 2; ++h) {
        const uint64_t q = load8(qs + 8 * h);
        store8(out->u + 8 * h, q & kLowNibbles);
        store8(out->u + kBlock / 2 + 8 * h, (q >> 4) & kLowNibbles);
    }
}

// An IQ4_NL block: its 16 bytes of grid indexes (low nibbles elements 0..15, high 16..31) as
// the quants, and its d (quant_blocks.h, BlockIQ4NL).
void unpack_iq4_nl(const quant::BlockIQ4NL& b, UnpackedBlock* out) {
    out->d = b.d;
    out->m = 0;
    out->sc[0] = out->sc[1] = 0;
    for (int h = 0; h < 2; ++h) {
        const uint64_t q = load8(b.qs + 8 * h);
        store8(out->u + 8 * h, q & kLowNibbles);
        store8(out->u + kBlock / 2 + 8 * h, (q >> 4) & kLowNibbles);
    }
}

// Q8_0: u = q + 128, each byte's sign bit flipped.
void unpack_q8_0(const quant::BlockQ8_0& b, UnpackedBlock* out) {
    out->d = b.d;
    out->m = 0;
    const auto* qs = reinterpret_cast<const uint8_t*>(b.qs);
    for (int h = 0; h < kBlock / 8; ++h) {
        store8(out->u + 8 * h, load8(qs + 8 * h) ^ (0x80 * kEachByte));
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
        {GgmlType::Q4_0, {4, Scales::kD, 8}},
        {GgmlType::Q4_1, {4, Scales::kDMin, 0}},
        {GgmlType::Q5_0, {5, Scales::kD, 16}},
        {GgmlType::Q5_1, {5, Scales::kDMin, 0}},
        {GgmlType::Q8_0, {8, Scales::kD, 128}},
        {GgmlType::Q4_K, {4, Scales::kK, 0}},
        {GgmlType::Q5_K, {5, Scales::kK, 0}},
        {GgmlType::Q6_K, {6, Scales::kD, 0}},
        {GgmlType::Q3_K, {3, Scales::kD, 0}},
        {GgmlType::IQ4_XS, {4, Scales::kGrid, 128}},
        {GgmlType::IQ4_NL, {4, Scales::kGridBlock, 128}},
    };
    for (const Entry& e : kFormats) {
        if (e.type == type) {
            *spec = e.spec;
            return true;
        }
    }
    return false;
}

void unpack_row(GgmlType type, const uint8_t* src, int64_t n_blocks, UnpackedBlock* out) {
    using namespace quant;  // NOLINT: block structs of this function's concern
    const bool known = with_block_type(type, [&]<typename B, int kElems>() {
        constexpr int kSubs = kElems / kBlock;
        // Read in place (as quant_isa.h's with_blocks): a copy of each block on the stack cost
        // a failed store forward per block, half of the unpacking's time. A row not aligned for
        // B's fp16 fields is copied first (aligned_bytes).
        const int64_t n_ggml = n_blocks / kSubs;
        std::vector<uint64_t> copy;
        const auto* blocks = static_cast<const B*>(
            aligned_bytes(src, static_cast<size_t>(n_ggml) * sizeof(B), alignof(B), &copy));
        for (int64_t i = 0; i < n_ggml; ++i) {
            const B& b = blocks[i];
            for (int sub = 0; sub < kSubs; ++sub) {
                UnpackedBlock* o = out + i * kSubs + sub;
                if constexpr (std::is_same_v<B, BlockQ8_0>) {
                    unpack_q8_0(b, o);
                } else if constexpr (NibbleBlock<B>) {
                    unpack_nibbles(b, o);
                } else if constexpr (OneOf<B, BlockQ4K, BlockQ5K>) {
                    unpack_k(b, sub, o);
                } else if constexpr (std::is_same_v<B, BlockQ6K>) {
                    unpack_q6_k(b, sub, o);
                } else if constexpr (std::is_same_v<B, BlockQ3K>) {
                    unpack_q3_k(b, sub, o);
                } else if constexpr (std::is_same_v<B, BlockIQ4NL>) {
                    unpack_iq4_nl(b, o);
                } else {
                    static_assert(std::is_same_v<B, BlockIQ4XS>, "a block type without a format");
                    unpack_iq4_xs(b, sub, o);
                }
            }
        }
    });
    LAZYLLM_CHECK_MSG(known, "unpack_row: type without a QuantLinear format");
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

namespace {

// Four bytes of u from u[i] as one word: byte j of the words below is a lane's byte j of a chunk
// (qgemv_isa.h), so each chunk's 4 bytes are built at once.
inline uint32_t word_at(const uint8_t* u, int i) { return load_word<uint32_t>(u + i); }

// The bits [shift, shift + width) of each byte of v, moved to bit `to` of the same byte.
template <int kShift, int kWidth>
inline uint32_t field(uint32_t v, int to) {
    constexpr uint32_t kMask = 0x01010101u * ((1u << kWidth) - 1);
    return ((v >> kShift) & kMask) << to;
}

// The quants of lane `lane` of block b of a group (layout: qgemv_isa.h), kBits bits each.
template <int kBits>
void store_lane(uint8_t* block_qs, int lane, const UnpackedBlock& blk) {
    uint8_t* qs = block_qs + lane * 4;
    const auto put = [&](int chunk, uint32_t v) { store_word(qs + chunk * kChunkBytes, v); };
    const uint8_t* u = blk.u;
    if constexpr (kBits == 8) {
        for (int c = 0; c < 8; ++c) put(c, word_at(u, 4 * c));
    } else if constexpr (kBits == 3) {
        // The low 2 bits of elements 16p + j, + 4, + 8, + 12 in chunk p; the third bits in
        // chunk 2 at bit c (element 8c + j) and 4 + c (8c + 4 + j).
        for (int p = 0; p < 2; ++p) {
            uint32_t low = 0;
            for (int k = 0; k < 4; ++k) low |= field<0, 2>(word_at(u, 16 * p + 4 * k), 2 * k);
            put(p, low);
        }
        uint32_t third = 0;
        for (int c = 0; c < 4; ++c) {
            third |= field<2, 1>(word_at(u, 8 * c), c) | field<2, 1>(word_at(u, 8 * c + 4), 4 + c);
        }
        put(2, third);
    } else {
        // The low 4 bits of element 8c + j in the low nibble of byte j of chunk c, of 8c + 4 + j
        // in its high one.
        for (int c = 0; c < 4; ++c) {
            put(c, field<0, 4>(word_at(u, 8 * c), 0) | field<0, 4>(word_at(u, 8 * c + 4), 4));
        }
        if constexpr (kBits == 5) {
            // The fifth bit of element 8c + j at bit c of chunk 4, of 8c + 4 + j at 4 + c.
            uint32_t high = 0;
            for (int c = 0; c < 4; ++c) {
                high |=
                    field<4, 1>(word_at(u, 8 * c), c) | field<4, 1>(word_at(u, 8 * c + 4), 4 + c);
            }
            put(4, high);
        } else if constexpr (kBits == 6) {
            // The high 2 bits of elements 16p + j, + 4, + 8, + 12 in chunk 4 + p.
            for (int p = 0; p < 2; ++p) {
                uint32_t high = 0;
                for (int k = 0; k < 4; ++k) high |= field<4, 2>(word_at(u, 16 * p + 4 * k), 2 * k);
                put(4 + p, high);
            }
        }
    }
}

// Lane `lane` of every block of a group: the quants, d (and m) per block or per super-block
// (from its first block: all of them carry the same), and the K-quants' int8 multipliers per
// block.
template <int kBits>
void store_blocks(const Weights& w, uint8_t* group, int lane, const UnpackedBlock* blks) {
    for (int64_t b = 0; b < w.n_blocks; ++b) {
        const BlockOffsets o = w.offsets(b);
        store_lane<kBits>(group + o.qs, lane, blks[b]);
        // The stores below are of byte types (memcpy), which could alias w: o is a local.
        if (lane == 0 && b % kSegBlocks == 0) {  // the segment head's padding
            const int64_t blocks = std::min<int64_t>(kSegBlocks, w.n_blocks - b);
            const size_t used = seg_scale_bytes(w.bits, w.scales_kind, blocks);
            std::memset(group + o.d + used, 0,
                        seg_head_bytes(w.bits, w.scales_kind, blocks) - used);
        }
        if (!w.per_super() || b % kSuperBlocks == 0) {
            std::memcpy(group + o.d + lane * 2, &blks[b].d, 2);
            if (w.has_min()) std::memcpy(group + o.m + lane * 2, &blks[b].m, 2);
        }
        if (w.per_super()) std::memcpy(group + o.sub + lane * 2, blks[b].sc, 2);
    }
}

}  // namespace

void store_row(const Weights& w, uint8_t* group, int lane, const UnpackedBlock* blks) {
    switch (w.bits) {
        case 3:
            return store_blocks<3>(w, group, lane, blks);
        case 4:
            return store_blocks<4>(w, group, lane, blks);
        case 5:
            return store_blocks<5>(w, group, lane, blks);
        case 6:
            return store_blocks<6>(w, group, lane, blks);
        case 8:
            return store_blocks<8>(w, group, lane, blks);
        default:
            LAZYLLM_CHECK_MSG(false, "store_row: no layout for this many bits");
    }
}

}  // namespace lazyllm::kernels::qgemv
