// GGML block layouts (ggml-common.h) and the scalar bit helpers shared by the reference and the
// vectorized dequantizers. Internal to src/kernels (quant*.cpp) and the tests.
//
// Every block is a plain byte layout; fp16 fields are raw IEEE half bits. Sizes are checked
// against ggml's static_asserts (and gguf-py's GGML_QUANT_SIZES).
//
// Exactness. An fp16 scale has at most 11 significant bits, and every product the formats form
// stays within fp32's 24: d * q (Q4_0, Q4_1, Q5_0, Q5_1: 11 + 5 bits; Q8_0: 11 + 7), the K-quant
// sub-block scales d * sc and dmin * m (11 + 6, and 11 + 7 for Q6_K's int8 scale) and their
// products with q (17 + 5, 18 + 5 bits; Q3_K 16 + 3), IQ4_XS's d * (ls - 32) times a table
// value of at most 7 bits (16 + 7), all far from overflow and underflow. So products are
// exact, only the final add or subtract of the affine formats rounds, and any evaluation order
// or a fused multiply-add gives the same bits: the vector variants, ggml and gguf-py's numpy
// code all agree exactly (tested), whatever the compiler's FP contraction setting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "lazyllm/ggml_type.h"

namespace lazyllm::kernels::quant {

constexpr int kQk4_0 = 32;
constexpr int kQk4_1 = 32;
constexpr int kQk5_0 = 32;
constexpr int kQk5_1 = 32;
constexpr int kQk8_0 = 32;
constexpr int kQkIq4Nl = 32;
constexpr int kQkK = 256;        // QK_K: super-block size of the K-quants
constexpr int kKScaleSize = 12;  // K_SCALE_SIZE: packed 6-bit scales + mins of Q4_K / Q5_K

// x = (q - 8) * d
struct BlockQ4_0 {
    uint16_t d;              // fp16 delta
    uint8_t qs[kQk4_0 / 2];  // element j in the low nibble of qs[j], j + 16 in the high one
};
static_assert(sizeof(BlockQ4_0) == 18);

// x = q * d + m
struct BlockQ4_1 {
    uint16_t d;  // fp16 delta
    uint16_t m;  // fp16 min
    uint8_t qs[kQk4_1 / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// x = ((q | h << 4) - 16) * d; bit j of qh is the fifth bit of element j
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[kQk5_0 / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

// x = (q | h << 4) * d + m
struct BlockQ5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[kQk5_1 / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

// x = q * d
struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[kQk8_0];
};
static_assert(sizeof(BlockQ8_0) == 34);

// 8 sub-blocks of 32: x = (d * sc) * q - (dmin * m), sc and m 6-bit (get_scale_min_k4).
// qs is 4 chunks of 32 bytes; chunk c holds sub-block 2c in the low and 2c+1 in the high nibbles.
struct BlockQ4K {
    uint16_t d;     // super-block scale of the sub-block scales
    uint16_t dmin;  // super-block scale of the sub-block mins
    uint8_t scales[kKScaleSize];
    uint8_t qs[kQkK / 2];
};
static_assert(sizeof(BlockQ4K) == 144);

// As Q4_K plus a fifth bit: bit s of qh[l] belongs to element l of sub-block s.
struct BlockQ5K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[kKScaleSize];
    uint8_t qh[kQkK / 8];
    uint8_t qs[kQkK / 2];
};
static_assert(sizeof(BlockQ5K) == 176);

// 16 sub-blocks of 16: x = (d * scales[is]) * (q - 32), q 6-bit (4 low bits in ql, 2 in qh).
struct BlockQ6K {
    uint8_t ql[kQkK / 2];
    uint8_t qh[kQkK / 4];
    int8_t scales[kQkK / 16];
    uint16_t d;
};
static_assert(sizeof(BlockQ6K) == 210);

// 16 sub-blocks of 16: x = (d * (sc - 32)) * (q - 4 * !h), q the 2 low bits in qs and h the
// high bit in hmask, sc 6-bit (4 low bits in scales[0..7], 2 high in scales[8..11]).
// Element e of a super-block: its low bits are bits 2 * (e % 128 / 32) of qs[32 * (e / 128) +
// e % 32], its high bit is bit e / 32 of hmask[e % 32]; it has scale e / 16 (ggml-quants.c,
// dequantize_row_q3_K and quantize_row_q3_K_ref).
struct BlockQ3K {
    uint8_t hmask[kQkK / 8];
    uint8_t qs[kQkK / 4];
    uint8_t scales[kKScaleSize];
    uint16_t d;
};
static_assert(sizeof(BlockQ3K) == 110);

// 8 sub-blocks of 32: x = (d * (ls - 32)) * kValuesIq4nl[q], q 4-bit (the low nibbles of 16
// bytes of qs are elements 0..15 of the sub-block, the high ones 16..31); ls 6-bit, its low 4
// bits in scales_l[ib / 2] (nibble ib % 2), its high 2 bits at bit 2 * ib of scales_h
// (ggml-quants.c, dequantize_row_iq4_xs).
struct BlockIQ4XS {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[kQkK / 64];
    uint8_t qs[kQkK / 2];
};
static_assert(sizeof(BlockIQ4XS) == 136);

// The non-linear 4-bit grid of IQ4_NL and IQ4_XS (ggml-common.h, kvalues_iq4nl).
inline constexpr int8_t kValuesIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// x = d * kValuesIq4nl[q], q 4-bit (the low nibbles of qs are elements 0..15, the high ones
// 16..31; ggml-quants.c, dequantize_row_iq4_nl). llama.cpp writes it for the rows of an IQ4_XS
// (or IQ1 / IQ2 / IQ3) file whose length is not a multiple of 256.
struct BlockIQ4NL {
    uint16_t d;
    uint8_t qs[kQkIq4Nl / 2];
};
static_assert(sizeof(BlockIQ4NL) == 18);

// Elements and bytes per block of the types quant.h dequantizes ({0, 0} for any other type).
// Must agree with ggml_type_traits (tested); kept here so the kernels need no lookup.
struct BlockShape {
    int64_t elems;
    size_t bytes;
};

// A block format: its type, block struct and elements per block.
template <GgmlType kType, typename Block, int kElems>
struct Format {
    using B = Block;
    static constexpr GgmlType type = kType;
    static constexpr int elems = kElems;
};

// For the block format `type` (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q3_K, Q4_K, Q5_K, Q6_K,
// IQ4_XS, IQ4_NL): calls f.template operator()<Block, elems>() and returns true; false for any
// other type.
template <typename F>
constexpr bool with_block_type(GgmlType type, F&& f) {
    return [&]<typename... Fs>() {
        return ((type == Fs::type && (f.template operator()<typename Fs::B, Fs::elems>(), true)) ||
                ...);
    }.template
           operator()<
               Format<GgmlType::Q8_0, BlockQ8_0, kQk8_0>, Format<GgmlType::Q4_0, BlockQ4_0, kQk4_0>,
               Format<GgmlType::Q4_1, BlockQ4_1, kQk4_1>, Format<GgmlType::Q5_0, BlockQ5_0, kQk5_0>,
               Format<GgmlType::Q5_1, BlockQ5_1, kQk5_1>, Format<GgmlType::Q4_K, BlockQ4K, kQkK>,
               Format<GgmlType::Q5_K, BlockQ5K, kQkK>, Format<GgmlType::Q6_K, BlockQ6K, kQkK>,
               Format<GgmlType::Q3_K, BlockQ3K, kQkK>, Format<GgmlType::IQ4_XS, BlockIQ4XS, kQkK>,
               Format<GgmlType::IQ4_NL, BlockIQ4NL, kQkIq4Nl>>();
}

constexpr BlockShape block_shape(GgmlType type) {
    if (type == GgmlType::F32) return {1, 4};
    if (type == GgmlType::F16 || type == GgmlType::BF16) return {1, 2};
    BlockShape shape{0, 0};
    with_block_type(type, [&]<typename B, int kElems>() { shape = {kElems, sizeof(B)}; });
    return shape;
}

// src itself where it is `align`-aligned, else a copy of its `bytes` in *copy. Blocks are read
// through typed pointers (their fp16 fields), and a GGUF whose general.alignment is 1 can put a
// tensor at any address.
inline const void* aligned_bytes(const void* src, size_t bytes, size_t align,
                                 std::vector<uint64_t>* copy) {
    if (reinterpret_cast<uintptr_t>(src) % align == 0) return src;
    copy->resize((bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t));
    std::memcpy(copy->data(), src, bytes);
    return copy->data();
}

inline uint32_t f32_bits(float x) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof(u));
    return u;
}

inline float bits_f32(uint32_t u) {
    float x;
    std::memcpy(&x, &u, sizeof(x));
    return x;
}

// IEEE half -> single, exact. A NaN comes out quiet (quiet bit set, payload kept), which is
// what F16C's vcvtph2ps does, so the scalar and vector paths agree on every input.
inline float fp16_to_fp32_scalar(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) {
        return bits_f32(sign | 0x7f800000u | (mant << 13) | (mant != 0 ? 0x00400000u : 0u));
    }
    if (exp != 0) return bits_f32(sign | ((exp + (127 - 15)) << 23) | (mant << 13));
    // Zero or subnormal: mant * 2^-24 is exact in fp32.
    return bits_f32(sign | f32_bits(static_cast<float>(mant) * 0x1p-24f));
}

// IEEE single -> half, round to nearest even; overflow goes to inf, NaN stays (quiet) NaN.
// Same results as F16C's vcvtps2ph with imm8 = 0 (tested).
inline uint16_t fp32_to_fp16_scalar(float f) {
    const uint32_t x = f32_bits(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) {
        return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    }
    // 65520 = 0x477ff000 is halfway between the largest half (65504, odd mantissa) and 2^16:
    // ties to even round it up to inf.
    if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
    if (ax < 0x38800000u) {
        // Below the smallest normal half (2^-14): adding 0.5 puts the value in a binade whose
        // ulp is 2^-24, the half subnormal step, so the fp32 add rounds it to nearest even.
        const float r = bits_f32(ax) + 0.5f;
        return static_cast<uint16_t>(sign | (f32_bits(r) - 0x3f000000u));
    }
    // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even;
    // a mantissa carry runs into the exponent, which is the right result.
    const uint32_t odd = (ax >> 13) & 1u;
    const uint32_t r = ax + 0xc8000000u + 0xfffu + odd;
    return static_cast<uint16_t>(sign | (r >> 13));
}

// fp32 -> bf16, round to nearest even, NaN forced quiet: ggml_compute_fp32_to_bf16
// (ggml-impl.h) and gguf-py's BF16.quantize_blocks. Subnormals are rounded, not flushed, which
// is why the vector paths do this in integer arithmetic rather than with vcvtneps2bf16 (that
// instruction treats subnormal inputs as zero).
inline uint16_t fp32_to_bf16_scalar(float f) {
    const uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 64u);
    return static_cast<uint16_t>((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

inline float bf16_to_fp32_scalar(uint16_t h) { return bits_f32(static_cast<uint32_t>(h) << 16); }

// The 6-bit scale of sub-block j (0..15) of a Q3_K super-block, 0..63 (the stored sc; the
// dequantizer subtracts 32).
inline int q3_k_scale(int j, const uint8_t* scales) {
    const int low = j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4;
    const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    return low | (high << 4);
}

// The 6-bit scale of sub-block ib (0..7) of an IQ4_XS super-block, 0..63 (the stored ls).
inline int iq4_xs_scale(int ib, uint16_t scales_h, const uint8_t* scales_l) {
    const int low = (scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF;
    const int high = (scales_h >> (2 * ib)) & 3;
    return low | (high << 4);
}

// Unpacks the 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K super-block
// (ggml-quants.c, get_scale_min_k4).
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

}  // namespace lazyllm::kernels::quant
