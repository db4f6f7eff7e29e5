// The dequantizers (quant_inl.h) for AVX-512.
#include "kernels/ops_simd_avx512.h"
#include "kernels/quant_inl.h"

namespace lazyllm::kernels {
LAZYLLM_QUANT_INSTANTIATE(Isa::kAvx512);
}  // namespace lazyllm::kernels
