// The row-wise operators written once against Vec<I> (simd.h): same formulas and operation
// order as ops_ref.cpp, up to fused multiply-adds and the order of the RMSNorm sum (two
// accumulators of kWidth lanes, then Vec::reduce_add). Included only by the per-ISA files
// (ops_avx2.cpp, ops_avx512.cpp), which instantiate it with LAZYLLM_OPS_INSTANTIATE.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/ops_isa.h"

namespace lazyllm::kernels::detail {

namespace {

// 1 / sqrt(mean(x^2) + eps) of one row.
template <Isa I>
float rms_inv(const float* xr, int64_t n, float eps) {
    using V = Vec<I>;
    constexpr int W = V::kWidth;
    typename V::F acc0 = V::zero(), acc1 = V::zero();
    int64_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        const auto a = V::load(xr + i), b = V::load(xr + i + W);
        acc0 = V::fmadd(a, a, acc0);
        acc1 = V::fmadd(b, b, acc1);
    }
    for_vectors<I>(n - i, [&]<bool kFull>(int64_t j, typename V::Mask m) {
        const auto a = load_part<I, kFull>(xr + i + j, m);
        acc0 = V::fmadd(a, a, acc0);
    });
    const float sum_sq = V::reduce_add(V::add(acc0, acc1));
    return 1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps);
}

// y[i] = (x[i] * inv) * w[i] for one row, through store.template operator()<kFull>(i, mask,
// value) (fp32 or bf16).
template <Isa I, typename Store>
void scale_row(const float* xr, const float* w, int64_t n, float inv_s, Store&& store) {
    using V = Vec<I>;
    const auto inv = V::set1(inv_s);
    for_vectors<I>(n, [&]<bool kFull>(int64_t i, typename V::Mask m) {
        const auto y =
            V::mul(V::mul(load_part<I, kFull>(xr + i, m), inv), load_part<I, kFull>(w + i, m));
        store.template operator()<kFull>(i, m, y);
    });
}

// out[i] = act(g[i]) * u[i] for one row, through store.template operator()<kFull>(i, mask,
// value).
template <Isa I, GluAct kAct, typename Store>
void glu_row(const float* g, const float* u, int64_t n_ff, Store&& store) {
    using V = Vec<I>;
    for_vectors<I>(n_ff, [&]<bool kFull>(int64_t i, typename V::Mask m) {
        const auto gv = load_part<I, kFull>(g + i, m);
        const auto a = kAct == GluAct::kSilu ? V::silu(gv) : V::gelu_tanh(gv);
        store.template operator()<kFull>(i, m, V::mul(a, load_part<I, kFull>(u + i, m)));
    });
}

inline void rope_pair_scalar(float* a, float* b, float c, float s) {
    const float x0 = *a, x1 = *b;
    *a = x0 * c - x1 * s;
    *b = x0 * s + x1 * c;
}

}  // namespace

// y: fp32, or bf16 bits (rounded by Vec<I>::store_bf16).
template <Isa I, typename Out>
void rms_norm_rows(const float* x, const float* w, Out* y, int64_t n_rows, int64_t n, float eps) {
    for (int64_t r = 0; r < n_rows; ++r) {
        Out* yr = y + r * n;
        scale_row<I>(
            x + r * n, w, n, rms_inv<I>(x + r * n, n, eps),
            [&]<bool kFull>(int64_t i, auto m, auto v) { store_out<I, kFull>(yr + i, m, v); });
    }
}

template <Isa I, typename Out>
void glu_rows(GluAct act, const float* gate_up, Out* out, int64_t n_rows, int64_t n_ff) {
    const auto rows = [&]<GluAct kAct>() {
        for (int64_t r = 0; r < n_rows; ++r) {
            const float* g = gate_up + r * 2 * n_ff;
            Out* o = out + r * n_ff;
            glu_row<I, kAct>(g, g + n_ff, n_ff, [&]<bool kFull>(int64_t i, auto m, auto v) {
                store_out<I, kFull>(o + i, m, v);
            });
        }
    };
    if (act == GluAct::kSilu) {
        rows.template operator()<GluAct::kSilu>();
    } else {
        rows.template operator()<GluAct::kGeluTanh>();
    }
}

template <Isa I>
void add_inplace_span(float* x, const float* y, int64_t n) {
    using V = Vec<I>;
    for_vectors<I>(n, [&]<bool kFull>(int64_t i, typename V::Mask m) {
        store_out<I, kFull>(x + i, m,
                            V::add(load_part<I, kFull>(x + i, m), load_part<I, kFull>(y + i, m)));
    });
}

// kNorm: W/2 adjacent pairs per vector, cos duplicated per pair, sin negated on even lanes;
// kNeox: W first-half and W second-half elements per step. Leftover pairs go scalar.
template <Isa I>
void rope_rows(const RopeTable& table, RopeMode mode, float* x, const int32_t* pos, int64_t n_rows,
               int64_t row_stride, int n_heads, int head_dim) {
    using V = Vec<I>;
    constexpr int W = V::kWidth;
    const int half = table.n_rot() / 2;
    const bool norm = mode == RopeMode::kNorm;
    const int step = norm ? W / 2 : W;  // pairs per vector
    const int stride = norm ? 2 : 1;    // x offset of pair i is stride * i
    const int partner = norm ? 1 : half;
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* c = table.cos_row(pos[r]);
        const float* s = table.sin_row(pos[r]);
        float* xr = x + r * row_stride;
        int i = 0;
        for (; i + step <= half; i += step) {
            const auto cv = norm ? V::dup_pairs(c + i) : V::load(c + i);
            const auto sv = norm ? V::neg_even(V::dup_pairs(s + i)) : V::load(s + i);
            for (int h = 0; h < n_heads; ++h) {
                float* p = xr + static_cast<int64_t>(h) * head_dim + stride * i;
                if (norm) {
                    const auto v = V::load(p);
                    V::store(p, V::fmadd(V::swap_pairs(v), sv, V::mul(v, cv)));
                } else {
                    const auto x0 = V::load(p), x1 = V::load(p + half);
                    V::store(p, V::fnmadd(x1, sv, V::mul(x0, cv)));
                    V::store(p + half, V::fmadd(x0, sv, V::mul(x1, cv)));
                }
            }
        }
        for (; i < half; ++i) {
            for (int h = 0; h < n_heads; ++h) {
                float* p = xr + static_cast<int64_t>(h) * head_dim + stride * i;
                rope_pair_scalar(p, p + partner, c[i], s[i]);
            }
        }
    }
}

}  // namespace lazyllm::kernels::detail

// Explicit instantiations of the fp32 operators for target I (the bf16 ones need
// Vec<I>::store_bf16 and are instantiated where it exists).
#define LAZYLLM_OPS_INSTANTIATE(I)                                                               \
    template void lazyllm::kernels::detail::rms_norm_rows<I>(const float*, const float*, float*, \
                                                             int64_t, int64_t, float);           \
    template void lazyllm::kernels::detail::glu_rows<I>(GluAct, const float*, float*, int64_t,   \
                                                        int64_t);                                \
    template void lazyllm::kernels::detail::add_inplace_span<I>(float*, const float*, int64_t);  \
    template void lazyllm::kernels::detail::rope_rows<I>(                                        \
        const RopeTable&, RopeMode, float*, const int32_t*, int64_t, int64_t, int, int)
