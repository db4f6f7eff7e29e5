// Runs the AMX kernels on the tile emulator (tile_emulator.h) where the CPU has what the
// rest of their code needs (AVX-512 F/BW/VL/DQ and BF16); exit code 77 (CTest: skipped)
// elsewhere. Built without ISA flags: nothing here runs an instruction the CPU may lack
// before the check.
#include <cstdio>

namespace lazyllm::kernels::detail {
int run_attention_amx_emulated();
int run_gemm_amx_emulated();
}  // namespace lazyllm::kernels::detail

int main() {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq") ||
        !__builtin_cpu_supports("avx512bf16")) {
        std::printf("skipped: the AMX kernels' vector code needs AVX-512 with BF16\n");
        return 77;
    }
    const int failures = lazyllm::kernels::detail::run_attention_amx_emulated() +
                         lazyllm::kernels::detail::run_gemm_amx_emulated();
    return failures == 0 ? 0 : 1;
}
