// The portable half of the AMX GEMM (gemm_amx.h): shape checks and weight packing. Compiled
// without ISA flags, so it is safe to call before the CPU is known to have AMX.
#include <vector>

#include "kernels/amx_tiles.h"
#include "kernels/gemm_amx.h"
#include "kernels/gemm_convert.h"

namespace lazyllm::kernels::detail {

bool amx_gemm_usable(int64_t n_in, int64_t n_out) {
    if (n_in <= 0 || n_out <= 0) return false;
    if (n_in % kAmxGemmChunk != 0 || n_out % kAmxGemmPanel != 0) return false;
    return amx_permission();
}

size_t amx_gemm_packed_elems(int64_t n_in, int64_t n_out) {
    return static_cast<size_t>(n_in) * static_cast<size_t>(n_out);
}

void amx_gemm_pack(const float* w, int64_t n_in, int64_t n_out, const int64_t* row_of_col,
                   uint16_t* w_packed) {
    const int64_t n_chunks = n_in / kAmxGemmChunk;
    std::vector<uint16_t> row(n_in);
    for (int64_t j = 0; j < n_out; ++j) {
        const float* src = w + (row_of_col != nullptr ? row_of_col[j] : j) * n_in;
        convert_rows_to_bf16_ref(src, 1, n_in, n_in, row.data(), n_in);
        const int64_t p = j / kAmxGemmPanel;
        const int64_t h = (j % kAmxGemmPanel) / 16;
        const int64_t i = j % 16;
        for (int64_t k = 0; k < n_in; ++k) {
            const int64_t c = k / kAmxGemmChunk;
            const int64_t kk = (k % kAmxGemmChunk) / 2;
            const int64_t e = k % 2;
            w_packed[((p * n_chunks + c) * 2 + h) * 512 + kk * 32 + i * 2 + e] = row[k];
        }
    }
}

void amx_gemm_swiglu_order(int64_t n_ff, int64_t* row_of_col) {
    for (int64_t j = 0; j < 2 * n_ff; ++j) {
        const int64_t p = j / kAmxGemmPanel;
        const int64_t h = (j % kAmxGemmPanel) / 16;
        const int64_t i = j % 16;
        row_of_col[j] = (h == 0 ? 0 : n_ff) + 16 * p + i;
    }
}

}  // namespace lazyllm::kernels::detail
