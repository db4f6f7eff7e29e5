// The row-wise operators (ops_inl.h) for AVX-512, with the bf16-writing variants.
#include "kernels/ops_inl.h"
#include "kernels/ops_simd_avx512.h"

namespace lazyllm::kernels {
LAZYLLM_OPS_INSTANTIATE(Isa::kAvx512);
template void detail::rms_norm_rows<Isa::kAvx512>(const float*, const float*, uint16_t*, int64_t,
                                                  int64_t, float);
template void detail::glu_rows<Isa::kAvx512>(GluAct, const float*, uint16_t*, int64_t, int64_t);
}  // namespace lazyllm::kernels
