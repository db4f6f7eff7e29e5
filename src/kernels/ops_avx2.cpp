// The row-wise operators (ops_inl.h) for AVX2 + FMA + F16C.
#include "kernels/ops_simd_avx2.h"
#include "kernels/ops_inl.h"

namespace lazyllm::kernels {
LAZYLLM_OPS_INSTANTIATE(Isa::kAvx2);
}  // namespace lazyllm::kernels
