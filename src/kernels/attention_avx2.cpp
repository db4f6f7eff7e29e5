// The fp32 attention kernels (attention_inl.h) for AVX2 + FMA + F16C: a tile's 16 lanes are two
// 8-wide halves, keys in lanes takes 8 keys per vector.
#include "kernels/attention_inl.h"
#include "kernels/ops_simd_avx2.h"

namespace lazyllm::kernels {
LAZYLLM_ATTENTION_INSTANTIATE(Isa::kAvx2);
}  // namespace lazyllm::kernels
