// Packing GGML blocks into QuantLinear's interleaved layout (qgemv_isa.h): a block of 32
// weights unpacked from any supported GGML type (or rounded from fp32 to Q8_0) and written as
// one lane of a group. Load-time code; QuantLinear::create (qgemv.cpp) drives it.
#pragma once

#include <cstdint>

#include "kernels/qgemv_isa.h"
#include "lazyllm/ggml_type.h"

namespace lazyllm::kernels::qgemv {

// How a GGML type is stored (qgemv_isa.h, "Values").
struct FormatSpec {
    int bits;
    Scales scales;
    int32_t offset;
};

// The format of `type`; false for a type QuantLinear does not take.
bool format_of(GgmlType type, FormatSpec* spec);

// One block of 32 weights as stored: unsigned quants u, fp16 scale and min (raw bits; the
// K-quants' super-block D and M), and the K-quants' two int8 multipliers (Q3_K, Q6_K: the halves'
// scales; Q4_K, Q5_K: the block's scale and min; IQ4_XS: the block's scale and 0).
struct UnpackedBlock {
    uint8_t u[kBlock];
    uint16_t d;
    uint16_t m;
    int8_t sc[2];
};

// The n_blocks blocks of 32 weights of one row, its GGML blocks at `src` (a K-quant's
// 256-element super-block gives 8) -> out[0, n_blocks) (layouts: quant_blocks.h, after
// ggml-common.h). n_blocks is a multiple of the GGML block's 32-weight blocks.
void unpack_row(GgmlType type, const uint8_t* src, int64_t n_blocks, UnpackedBlock* out);

// fp32 -> Q8_0-as-stored (u = q + 128). As ggml's quantize_row_q8_0_ref, except that q is
// rounded against the fp16-rounded scale actually stored, which removes the scale's rounding
// from the error (the clamp covers a scale that rounded down).
void quantize_block_q8_0(const float* x, UnpackedBlock* out);

// Writes lane `lane` of a group (one row: layout qgemv_isa.h) from blks[0, w.n_blocks).
void store_row(const Weights& w, uint8_t* group, int lane, const UnpackedBlock* blks);

}  // namespace lazyllm::kernels::qgemv
