// The 3-, 5- and 6-bit quants of QuantLinear's packed layout (qgemv_isa.h) unpacked to bytes,
// written once for both SIMD widths. B is the including kernel file's byte-vector type
// (qgemv_avx2.cpp, qgemv_vnni.cpp): V, and_, or_, shl16, shr16 (shifts of 16-bit lanes) and set1 (a
// byte). Include only from a file built for B's ISA.
#pragma once

namespace lazyllm::kernels::qgemv {

// The chunks unpack_chunk takes as v and high for chunk c of a half-scale format (3 or 6 bits).
constexpr int half_scale_low_chunk(int bits, int c) { return bits == 3 ? c / 2 : c; }
constexpr int half_scale_high_chunk(int bits, int c) { return bits == 3 ? 2 : 4 + c / 2; }

// The unsigned quants of chunk c (< 4) of a block: in lo the low-nibble elements 8c + j, in hi
// the high-nibble ones 8c + 4 + j (j < 4 per int32 lane), from the nibble chunk v and, for 5 and
// 6 bits, the chunk of their high bits; for 3 bits from v, the chunk of their low 2 bits
// (chunk c / 2), and the chunk of their third bits.
template <typename B, int kBits>
inline void unpack_chunk(typename B::V v, typename B::V high, int c, typename B::V& lo,
                         typename B::V& hi) {
    using V = typename B::V;
    if constexpr (kBits == 3) {
        // Low bits at 0-1 (low-nibble element) and 2-3 of each byte for even chunks, 4-5 and 6-7
        // for odd ones; the third bit at bit c (low-nibble element) and 4 + c, moved to bit 2.
        const V two = B::set1(0x03), bit2 = B::set1(0x04);
        lo = B::and_(c % 2 == 0 ? v : B::shr16(v, 4), two);
        hi = B::and_(B::shr16(v, c % 2 == 0 ? 2 : 6), two);
        const V lo3 = c < 2 ? B::shl16(high, 2 - c) : c == 2 ? high : B::shr16(high, 1);
        lo = B::or_(lo, B::and_(lo3, bit2));
        hi = B::or_(hi, B::and_(B::shr16(high, 2 + c), bit2));
        return;
    }
    const V nib = B::set1(0x0F);
    lo = B::and_(v, nib);
    hi = B::and_(B::shr16(v, 4), nib);
    if constexpr (kBits == 5) {
        // Fifth bits: bit c of a byte (low-nibble element), bit 4 + c (high), moved to bit 4.
        const V bit4 = B::set1(0x10);
        lo = B::or_(lo, B::and_(B::shl16(high, 4 - c), bit4));
        hi = B::or_(hi, B::and_(B::shr16(high, c), bit4));
    } else if constexpr (kBits == 6) {
        // The two high bits, moved to bits 4-5: from bits 0-1 (low-nibble element) and 2-3 of
        // each byte for even chunks, 4-5 and 6-7 for odd ones.
        const V bits45 = B::set1(0x30);
        lo = B::or_(lo, B::and_(c % 2 == 1 ? high : B::shl16(high, 4), bits45));
        hi = B::or_(hi, B::and_(c % 2 == 1 ? B::shr16(high, 2) : B::shl16(high, 2), bits45));
    }
}

}  // namespace lazyllm::kernels::qgemv
