#include "kernels/amx_tiles.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "kernels/cpu.h"

namespace lazyllm::kernels::detail {

bool amx_permission() {
    static const bool granted = [] {
        const CpuFeatures f = detect_cpu_features();
        if (!f.amx_tile || !f.amx_bf16 || !f.avx512bf16) return false;
        constexpr long kArchReqXcompPerm = 0x1023;
        constexpr long kXfeatureXtiledata = 18;
        return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
    }();
    return granted;
}

}  // namespace lazyllm::kernels::detail
