// GGML block layouts (ggml-common.h) and the scalar bit helpers shared by the reference and the
// vectorized dequantizers. Internal to src/kernels (quant*.cpp) and the tests.
//
// Every block is a plain byte layout; fp16 fields are raw IEEE half bits. Sizes are checked
// against ggml's static_asserts (and gguf-py's GGML_QUANT_SIZES).
//
// Exactness. An fp16 scale has at most 11 significant bits, and every product the formats form
// stays within fp32's 24: d * q (Q4_0, Q4_1, Q5_0, Q5_1: 11 + 5 bits; Q8_0: 11 + 7), the K-quant
// sub-block scales d * sc and dmin * m (11 + 6, and 11 + 7 for Q6_K's int8 scale) and their
// products with q (17 + 5, 18 + 5 bits), all far from overflow and underflow. So products are
// exact, only the final add or subtract of the affine formats rounds, and any evaluation order
// or a fused multiply-add gives the same bits: the vector variants, ggml and gguf-py's numpy
// code all agree exactly (tested), whatever the compiler's FP contraction setting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lazyllm/ggml_type.h"

namespace lazyllm::kernels::quant {

constexpr int kQk4_0 = 32;
constexpr int kQk4_1 = 32;
constexpr int kQk5_0 = 32;
constexpr int kQk5_1 = 32;
constexpr int kQk8_0 = 32;
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

// For the block format `type` (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K): calls
// f.template operator()<Block, elems>() and returns true; false for any other type.
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
               Format<GgmlType::Q5_K, BlockQ5K, kQkK>, Format<GgmlType::Q6_K, BlockQ6K, kQkK>>();
}

constexpr BlockShape block_shape(GgmlType type) {
    if (type == GgmlType::F32) return {1, 4};
    if (type == GgmlType::F16 || type == GgmlType::BF16) return {1, 2};
    BlockShape shape{0, 0};
    with_block_type(type, [&]<typename B, int kElems>() { shape = {kElems, sizeof(B)}; });
    return shape;
}

// Elements converted per step when a variant stages fp32 before rounding to bf16: a whole
// number of blocks of every type (1, 32, 256), 4 KiB of stack.
constexpr int64_t kBf16Chunk = 1024;

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
