// The dequantizers (quant_inl.h) for AVX2 + FMA + F16C.
#include "kernels/ops_simd_avx2.h"
#include "kernels/quant_inl.h"

namespace lazyllm::kernels {
LAZYLLM_QUANT_INSTANTIATE(Isa::kAvx2);
}  // namespace lazyllm::kernels
