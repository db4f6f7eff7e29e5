#include "kernels/cpu.h"

#include <cpuid.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace lazyllm::kernels {

namespace {
uint64_t xgetbv0() {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (static_cast<uint64_t>(edx) << 32) | eax;
}
}  // namespace

CpuFeatures detect_cpu_features() {
    CpuFeatures f;
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
    f.intel = b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e;  // "Genu" "ineI" "ntel"
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool osxsave = (c >> 27) & 1;
    f.fma = (c >> 12) & 1;
    f.f16c = (c >> 29) & 1;
    if (!osxsave) return f;
    const uint64_t xcr0 = xgetbv0();
    const bool ymm_os = (xcr0 & 0x6) == 0x6;
    const bool zmm_os = (xcr0 & 0xe6) == 0xe6;
    const bool amx_os = (xcr0 & 0x60000) == 0x60000;
    if (__get_cpuid_max(0, nullptr) < 7) return f;
    __cpuid_count(7, 0, a, b, c, d);
    f.avx2 = ymm_os && ((b >> 5) & 1);
    f.avx512f = zmm_os && ((b >> 16) & 1);
    f.avx512dq = zmm_os && ((b >> 17) & 1);
    f.avx512bw = zmm_os && ((b >> 30) & 1);
    f.avx512vl = zmm_os && ((b >> 31) & 1);
    f.amx_bf16 = amx_os && ((d >> 22) & 1);
    f.avx512vnni = zmm_os && ((c >> 11) & 1);  // CPUID.(7,0):ECX[11]
    f.amx_tile = amx_os && ((d >> 24) & 1);
    __cpuid_count(7, 1, a, b, c, d);
    f.avx512bf16 = zmm_os && ((a >> 5) & 1);
    if (!ymm_os) f.fma = f.f16c = false;
    return f;
}

int64_t l2_cache_bytes() {
    static const int64_t bytes = [] {
        const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
        return v > 0 ? static_cast<int64_t>(v) : int64_t{1} << 20;
    }();
    return bytes;
}

bool isa_supported(Isa isa, const CpuFeatures& f) {
    switch (isa) {
        case Isa::kRef: return true;
        case Isa::kAvx2: return f.avx2 && f.fma && f.f16c;
        case Isa::kAvx512:
            return isa_supported(Isa::kAvx2, f) && f.avx512f && f.avx512bw && f.avx512vl &&
                   f.avx512dq;
        case Isa::kAmx:
            return isa_supported(Isa::kAvx512, f) && f.avx512bf16 && f.amx_tile && f.amx_bf16;
    }
    return false;
}

bool cpu_has_avx512_bf16() {
    static const bool has = [] {
        const CpuFeatures f = detect_cpu_features();
        return isa_supported(Isa::kAvx512, f) && f.avx512bf16;
    }();
    return has;
}

bool cpu_bf16_gemm_pays() {
    static const bool pays = [] {
        const CpuFeatures f = detect_cpu_features();
        return isa_supported(Isa::kAmx, f) || (cpu_has_avx512_bf16() && !f.intel);
    }();
    return pays;
}

Isa best_isa(const CpuFeatures& f) {
    for (Isa isa : {Isa::kAmx, Isa::kAvx512, Isa::kAvx2}) {
        if (isa_supported(isa, f)) return isa;
    }
    return Isa::kRef;
}

std::string_view isa_name(Isa isa) {
    switch (isa) {
        case Isa::kRef: return "ref";
        case Isa::kAvx2: return "avx2";
        case Isa::kAvx512: return "avx512";
        case Isa::kAmx: return "amx";
    }
    return "?";
}

Result<Isa> parse_isa(std::string_view name) {
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512, Isa::kAmx}) {
        if (name == isa_name(isa)) return isa;
    }
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown ISA '{}' (expected ref, avx2, avx512 or amx)", name);
}

Result<GemmKernels> gemm_kernels_from_env() {
    const char* v = std::getenv("LAZYLLM_GEMM");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0 || std::strcmp(v, "amx") == 0) {
        return GemmKernels::kOwn;
    }
    if (std::strcmp(v, "onednn") == 0) return GemmKernels::kOneDnn;
    return make_error(ErrorCode::kInvalidArgument, "LAZYLLM_GEMM={}: expected auto, amx or onednn",
                      v);
}

Result<Isa> isa_from_env() {
    const CpuFeatures f = detect_cpu_features();
    const char* env = std::getenv("LAZYLLM_ISA");
    if (env == nullptr || *env == '\0') return best_isa(f);
    Result<Isa> parsed = parse_isa(env);
    if (!parsed.ok()) return parsed.error().with_context("LAZYLLM_ISA");
    const Isa isa = *parsed;
    if (!isa_supported(isa, f)) {
        return make_error(ErrorCode::kUnsupported,
                          "LAZYLLM_ISA={} but this CPU does not support it (best: {})", env,
                          isa_name(best_isa(f)));
    }
    return isa;
}

}  // namespace lazyllm::kernels
