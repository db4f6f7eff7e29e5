// The SIMD layer every per-ISA kernel is written against, and the one way kernels are entered.
//
// Vec<I>: the vector operations of target I (load/store, masked tails, arithmetic, reductions,
// exp2/silu/gelu_tanh, f16/bf16 conversions), one specialization per target in ops_simd_avx2.h (8 fp32
// lanes) and ops_simd_avx512.h (16 lanes). An op is written once as a template on Isa in a
// *_inl.h file against Vec<I>; the per-ISA files (*_avx2.cpp, *_avx512.cpp, *_vnni.cpp, built
// with their ISA flags, src/CMakeLists.txt) include that source and instantiate it for their
// target, as CTranslate2's src/cpu/kernels.cc does per ISA.
//
// isa_dispatch(isa, f): calls f.template operator()<I>() with I the instantiated target that
// serves `isa`: kAvx512 for kAvx512 and kAmx (the AMX code is separate and entered by its own
// layout decisions), kAvx2, or kRef (the scalar reference, namespace ref). The ISA comes from
// the KernelContext, picked once at start-up (cpu.h); callers never test CPU features.
#pragma once

#include <cstdint>
#include <utility>

#include "kernels/cpu.h"

namespace lazyllm::kernels {

template <Isa I>
struct Vec;

// Vec<I>::kWidth, where the intrinsics of I are not compiled in (0 for the reference).
template <Isa I>
inline constexpr int kVecWidth = I == Isa::kAvx512 ? 16
                                 : I == Isa::kAvx2 ? 8
                                                   : 0;

// body.template operator()<kFull>(i, mask) for the vectors of [0, n): whole ones with kFull
// and no lane mask, then the ragged last one (if any) through its mask. AVX2's masked loads and
// stores (vmaskmovps) are microcoded on AMD's cores, several times the cost of a plain one, so
// only a row's last vector takes them.
template <Isa I, typename Body>
inline void for_vectors(int64_t n, Body&& body) {
    using V = Vec<I>;
    const auto all = V::tail(V::kWidth);
    int64_t i = 0;
    for (; i + V::kWidth <= n; i += V::kWidth) body.template operator()<true>(i, all);
    if (i < n) body.template operator()<false>(i, V::tail(n - i));
}

// A whole vector (kFull) or the lanes of mask m, for for_vectors' bodies.
template <Isa I, bool kFull>
inline typename Vec<I>::F load_part(const float* p, typename Vec<I>::Mask m) {
    if constexpr (kFull) {
        return Vec<I>::load(p);
    } else {
        return Vec<I>::load(p, m);
    }
}
template <Isa I, bool kFull>
inline void store_out(float* p, typename Vec<I>::Mask m, typename Vec<I>::F v) {
    if constexpr (kFull) {
        Vec<I>::store(p, v);
    } else {
        Vec<I>::store(p, m, v);
    }
}
template <Isa I, bool kFull>
inline void store_out(uint16_t* p, typename Vec<I>::Mask m, typename Vec<I>::F v) {
    Vec<I>::store_bf16(p, m, v);  // AVX-512 only: its masks are cheap
}

// GELU's tanh approximation as a logistic: 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)) with
// u = sqrt(2/pi) (x + 0.044715 x^3), so 2u = x (kGeluK0 + kGeluK1 x^2).
inline constexpr float kGeluK0 = 1.5957691216057308f;          // 2 sqrt(2/pi)
inline constexpr float kGeluK1 = 1.5957691216057308f * 0.044715f;

// A run-time value as a template argument: f.template operator()<V>() for the V of Vs equal to
// v; false when none is (the instantiated shapes of a kernel: head_dim, lane or row counts).
template <int... Vs, typename F>
inline bool with_value(int64_t v, std::integer_sequence<int, Vs...>, F&& f) {
    return ((v == Vs && (f.template operator()<Vs>(), true)) || ...);
}
template <typename Seq>
struct PlusOne;
template <int... k>
struct PlusOne<std::integer_sequence<int, k...>> {
    using type = std::integer_sequence<int, (k + 1)...>;
};
// 1, 2, ..., N.
template <int N>
using OneTo = typename PlusOne<std::make_integer_sequence<int, N>>::type;

// The target whose instantiation runs for a context ISA.
constexpr Isa simd_target(Isa isa) { return isa == Isa::kAmx ? Isa::kAvx512 : isa; }

template <typename F>
inline decltype(auto) isa_dispatch(Isa isa, F&& f) {
    switch (simd_target(isa)) {
        case Isa::kAvx512:
            return f.template operator()<Isa::kAvx512>();
        case Isa::kAvx2:
            return f.template operator()<Isa::kAvx2>();
        default:
            return f.template operator()<Isa::kRef>();
    }
}

// isa_dispatch for an op whose reference is a separate function: ref() for kRef, else
// simd.template operator()<I>() (never instantiated for kRef).
template <typename Ref, typename Simd>
inline decltype(auto) simd_or_ref(Isa isa, Ref&& ref, Simd&& simd) {
    return isa_dispatch(isa, [&]<Isa I>() -> decltype(auto) {
        if constexpr (I == Isa::kRef) {
            return ref();
        } else {
            return simd.template operator()<I>();
        }
    });
}

}  // namespace lazyllm::kernels
