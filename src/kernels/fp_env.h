// Scoped floating-point environment for kernels whose results may underflow.
//
// On Intel cores an SSE/AVX instruction that produces or reads a denormal takes a microcode
// assist (on the order of a hundred cycles) unless MXCSR has flush-to-zero (FTZ) and
// denormals-are-zero (DAZ) set. Softmax hits this on every masked score: exp2 of -inf or of
// a clamped -160 underflows, so without FTZ/DAZ the block that holds a tile's causal diagonal
// costs far more than any other block, which shows most on short prompts.
// Values below 2^-126 are far below what bf16/fp32 softmax weights can affect, so flushing
// them changes no result that matters; AMX tile products already treat denormals as zero.
//
// MXCSR is per thread: construct one inside each OpenMP region that runs such a kernel.
#pragma once

#include <xmmintrin.h>

namespace lazyllm::kernels {

class ScopedFlushDenormals {
public:
    ScopedFlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFtzDaz); }
    ~ScopedFlushDenormals() { _mm_setcsr(saved_); }
    ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
    ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

private:
    static constexpr unsigned kFtzDaz = 0x8040;  // MXCSR.FTZ (bit 15) | MXCSR.DAZ (bit 6)
    unsigned saved_;
};

}  // namespace lazyllm::kernels
