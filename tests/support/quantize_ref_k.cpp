// Reference quantizers for the super-block formats (quantize_ref.h): Q4_K, Q5_K and Q6_K after
// ggml-quants.c's quantize_row_q4_K_ref / q5_K_ref / q6_K_ref, Q3_K after quantize_row_q3_K_ref
// (make_qx_quants standing in for make_q3_quants), IQ4_XS and IQ4_NL after
// quantize_row_iq4_nl_impl without an importance matrix. Compiled, like quantize_ref.cpp, without
// FMA flags.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "support/quantize_ref_detail.h"

namespace lazyllm::testing::detail {

using namespace kernels::quant;  // NOLINT: block layouts

namespace {

// make_qkx2_quants: affine quantization of n values to [0, nmax] minimizing the weighted
// squared error; tries nstep + 1 scales around nmax / (max - min). Returns the scale and puts
// the (positive) min offset in *the_min, so x ~= scale * L - the_min.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* laux, float rmin, float rdelta, int nstep) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        min = std::min(min, x[i]);
        max = std::max(max, x[i]);
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        std::fill(L, L + n, 0);
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * (x[i] - min));
        L[i] = static_cast<uint8_t>(std::clamp(l, 0, nmax));
        const float diff = scale * L[i] + min - x[i];
        best_error += weights[i] * (diff * diff);
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
            laux[i] = static_cast<uint8_t>(l);
            const float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (det > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                const float diff = this_scale * laux[i] + this_min - x[i];
                cur_error += weights[i] * (diff * diff);
            }
            if (cur_error < best_error) {
                std::copy(laux, laux + n, L);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

// Packs 6-bit scale ls and min lm of sub-block j into the 12-byte K_SCALE_SIZE field (the
// inverse of get_scale_min_k4).
void pack_scale_min_k4(int j, uint8_t ls, uint8_t lm, uint8_t* scales) {
    if (j < 4) {
        scales[j] = ls;
        scales[j + 4] = lm;
    } else {
        scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
        scales[j - 4] = static_cast<uint8_t>(scales[j - 4] | ((ls >> 4) << 6));
        scales[j - 0] = static_cast<uint8_t>(scales[j - 0] | ((lm >> 4) << 6));
    }
}

// The shared part of quantize_row_q4_K_ref and q5_K_ref: sub-block scales and mins for values
// in [0, nmax], stored in d / dmin / scales; L gets the final quants.
void quantize_k_scales(const float* x, int nmax, float rmin, float rdelta, int nstep,
                       uint16_t* d_out, uint16_t* dmin_out, uint8_t* scales_out, uint8_t* L) {
    float mins[kQkK / 32], scales[kQkK / 32], weights[32];
    uint8_t laux[32];
    float max_scale = 0, max_min = 0;  // scales are positive once the min is taken out
    for (int j = 0; j < kQkK / 32; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
        scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], laux,
                                     rmin, rdelta, nstep);
        max_scale = std::max(max_scale, scales[j]);
        max_min = std::max(max_min, mins[j]);
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    std::memset(scales_out, 0, kKScaleSize);
    for (int j = 0; j < kQkK / 32; ++j) {
        const auto ls = static_cast<uint8_t>(std::min(63, nearest_int(inv_scale * scales[j])));
        const auto lm = static_cast<uint8_t>(std::min(63, nearest_int(inv_min * mins[j])));
        pack_scale_min_k4(j, ls, lm, scales_out);
    }
    *d_out = to_half(max_scale / 63.f);
    *dmin_out = to_half(max_min / 63.f);
    for (int j = 0; j < kQkK / 32; ++j) {
        uint8_t sc, m;
        get_scale_min_k4(j, scales_out, &sc, &m);
        const float d = from_half(*d_out) * sc;
        if (d == 0.0f) continue;
        const float dm = from_half(*dmin_out) * m;
        for (int ii = 0; ii < 32; ++ii) {
            const int l = nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = static_cast<uint8_t>(std::clamp(l, 0, nmax));
        }
    }
}

constexpr float kGroupMaxEps = 1e-15f;  // GROUP_MAX_EPS

// make_qx_quants with rmse_type 1 and no importance weights (weights x^2): symmetric
// quantization to [-nmax, nmax - 1] stored as L + nmax, refining the scale over 19 candidates.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        std::fill(L, L + n, 0);
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = static_cast<int8_t>(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
                L[i] = static_cast<int8_t>(nmax + l);
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// The symmetric scale of each 16-element sub-block of a super-block (make_qx_quants with
// nmax, quants into L), and the one of largest magnitude, signed (the first of equals).
float sub_block_scales(const float* x, int nmax, int8_t* L, float* scales) {
    float max_scale = 0, max_abs = 0;
    for (int j = 0; j < kQkK / 16; ++j) {
        scales[j] = make_qx_quants(16, nmax, x + 16 * j, L + 16 * j);
        if (std::fabs(scales[j]) > max_abs) {
            max_abs = std::fabs(scales[j]);
            max_scale = scales[j];
        }
    }
    return max_scale;
}

// Index of the grid value nearest to x (ggml's best_index_int8: a tie goes to the upper one).
int best_index_iq4nl(float x) {
    int best = 0;
    for (int k = 1; k < 16; ++k) {
        if (std::fabs(x - kValuesIq4nl[k]) <= std::fabs(x - kValuesIq4nl[best])) best = k;
    }
    return best;
}

}  // namespace

void quantize_q4_k(const float* x, BlockQ4K* y, int64_t nb) {
    uint8_t L[kQkK];
    for (int64_t i = 0; i < nb; ++i, x += kQkK) {
        quantize_k_scales(x, 15, -1.f, 0.1f, 20, &y[i].d, &y[i].dmin, y[i].scales, L);
        uint8_t* q = y[i].qs;
        for (int j = 0; j < kQkK; j += 64, q += 32) {
            for (int l = 0; l < 32; ++l)
                q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
        }
    }
}

void quantize_q5_k(const float* x, BlockQ5K* y, int64_t nb) {
    uint8_t L[kQkK];
    for (int64_t i = 0; i < nb; ++i, x += kQkK) {
        quantize_k_scales(x, 31, -0.5f, 0.1f, 15, &y[i].d, &y[i].dmin, y[i].scales, L);
        uint8_t* qh = y[i].qh;
        uint8_t* ql = y[i].qs;
        std::memset(qh, 0, kQkK / 8);
        uint8_t m1 = 1, m2 = 2;
        for (int n = 0; n < kQkK; n += 64, ql += 32) {
            for (int j = 0; j < 32; ++j) {
                int l1 = L[n + j];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[j] |= m1;
                }
                int l2 = L[n + j + 32];
                if (l2 > 15) {
                    l2 -= 16;
                    qh[j] |= m2;
                }
                ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
            }
            m1 = static_cast<uint8_t>(m1 << 2);
            m2 = static_cast<uint8_t>(m2 << 2);
        }
    }
}

void quantize_q6_k(const float* x, BlockQ6K* y, int64_t nb) {
    int8_t L[kQkK];
    float scales[kQkK / 16];
    for (int64_t i = 0; i < nb; ++i, x += kQkK) {
        const float max_scale = sub_block_scales(x, 32, L, scales);
        if (std::fabs(max_scale) < kGroupMaxEps) {
            std::memset(&y[i], 0, sizeof(BlockQ6K));
            continue;
        }
        const float iscale = -128.f / max_scale;
        y[i].d = to_half(1 / iscale);
        for (int ib = 0; ib < kQkK / 16; ++ib) {
            y[i].scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
        }
        for (int j = 0; j < kQkK / 16; ++j) {
            const float d = from_half(y[i].d) * y[i].scales[j];
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ++ii) {
                const int l = std::clamp(nearest_int(x[16 * j + ii] / d), -32, 31);
                L[16 * j + ii] = static_cast<int8_t>(l + 32);
            }
        }
        uint8_t* ql = y[i].ql;
        uint8_t* qh = y[i].qh;
        for (int j = 0; j < kQkK; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; ++l) {
                const uint8_t q1 = L[j + l + 0] & 0xF;
                const uint8_t q2 = L[j + l + 32] & 0xF;
                const uint8_t q3 = L[j + l + 64] & 0xF;
                const uint8_t q4 = L[j + l + 96] & 0xF;
                ql[l + 0] = static_cast<uint8_t>(q1 | (q3 << 4));
                ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
                qh[l] =
                    static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                         ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
            }
        }
    }
}

// quantize_row_q3_K_ref with make_qx_quants (rmse_type 1, as Q6_K) standing in for
// make_q3_quants: per sub-block of 16 a symmetric scale for q in -4..3, then 6-bit scales
// relative to the largest (stored + 32), and the quants again with the decoded scales.
void quantize_q3_k(const float* x, BlockQ3K* y, int64_t nb) {
    int8_t L[kQkK];
    float scales[kQkK / 16];
    for (int64_t i = 0; i < nb; ++i, x += kQkK) {
        const float max_scale = sub_block_scales(x, 4, L, scales);
        std::memset(y[i].scales, 0, kKScaleSize);
        y[i].d = to_half(0.0f);
        if (max_scale != 0.0f) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < kQkK / 16; ++j) {
                const int l = std::clamp(nearest_int(iscale * scales[j]), -32, 31) + 32;
                if (j < 8) {
                    y[i].scales[j] = static_cast<uint8_t>(l & 0xF);
                } else {
                    y[i].scales[j - 8] = static_cast<uint8_t>(y[i].scales[j - 8] | (l & 0xF) << 4);
                }
                y[i].scales[8 + j % 4] =
                    static_cast<uint8_t>(y[i].scales[8 + j % 4] | (l >> 4) << (2 * (j / 4)));
            }
            y[i].d = to_half(1 / iscale);
        }
        for (int j = 0; j < kQkK / 16; ++j) {
            const float d = from_half(y[i].d) * static_cast<float>(q3_k_scale(j, y[i].scales) - 32);
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ++ii) {
                L[16 * j + ii] =
                    static_cast<int8_t>(std::clamp(nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
            }
        }
        // Element e: high bit at bit e / 32 of hmask[e % 32], 2 low bits in qs.
        std::memset(y[i].hmask, 0, kQkK / 8);
        std::memset(y[i].qs, 0, kQkK / 4);
        for (int e = 0; e < kQkK; ++e) {
            const int q = L[e];
            if (q > 3)
                y[i].hmask[e % 32] = static_cast<uint8_t>(y[i].hmask[e % 32] | 1 << (e / 32));
            uint8_t& b = y[i].qs[32 * (e / 128) + e % 32];
            b = static_cast<uint8_t>(b | (q & 3) << (2 * (e % 128 / 32)));
        }
    }
}

namespace {

// quantize_row_iq4_nl_impl's scale of one block of 32 without an importance matrix (weights
// x^2, ntry 7): the weighted least-squares scale of the indices id * x picks, ggml starting
// from id = -values[0] / max, then trying the flipped grid, id = (values[0] + itry) / max.
// 0 for a block of zeros.
float iq4_block_scale(const float* xb) {
    constexpr int kTry = 7;
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j) {
        if (std::fabs(xb[j]) > amax) {
            amax = std::fabs(xb[j]);
            max = xb[j];
        }
    }
    if (amax < kGroupMaxEps) return 0.0f;
    const auto fit = [&](float id, float* sumqx, float* sumq2) {
        *sumqx = *sumq2 = 0;
        for (int j = 0; j < 32; ++j) {
            const float q = kValuesIq4nl[best_index_iq4nl(id * xb[j])];
            const float w = xb[j] * xb[j];
            *sumqx += w * q * xb[j];
            *sumq2 += w * q * q;
        }
    };
    float sumqx, sumq2;
    fit(1 / (-max / kValuesIq4nl[0]), &sumqx, &sumq2);
    float d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int itry = -kTry; itry <= kTry; ++itry) {
        fit((itry + kValuesIq4nl[0]) / max, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

// The 16 bytes of indices of a block of 32 at scale 1 / id (low nibbles elements 0..15).
void iq4_indices(const float* xb, float id, uint8_t* qs) {
    for (int j = 0; j < 16; ++j) {
        qs[j] = static_cast<uint8_t>(best_index_iq4nl(id * xb[j]) |
                                     best_index_iq4nl(id * xb[j + 16]) << 4);
    }
}

}  // namespace

// IQ4_XS: the blocks' scales (iq4_block_scale), then 6-bit scales relative to the largest
// (d = -max / 32) and the indices again with the decoded scales.
void quantize_iq4_xs(const float* x, BlockIQ4XS* y, int64_t nb) {
    float scales[kQkK / 32];
    for (int64_t i = 0; i < nb; ++i, x += kQkK) {
        float max_scale = 0, amax_scale = 0;
        for (int ib = 0; ib < kQkK / 32; ++ib) {
            scales[ib] = iq4_block_scale(x + 32 * ib);
            if (std::fabs(scales[ib]) > amax_scale) {
                amax_scale = std::fabs(scales[ib]);
                max_scale = scales[ib];
            }
        }
        const float d = -max_scale / 32;
        const float id = d != 0.0f ? 1 / d : 0.0f;
        y[i].d = to_half(d);
        y[i].scales_h = 0;
        std::memset(y[i].scales_l, 0, sizeof(y[i].scales_l));
        for (int ib = 0; ib < kQkK / 32; ++ib) {
            const int l = std::clamp(nearest_int(id * scales[ib]), -32, 31);
            const float dl = from_half(y[i].d) * static_cast<float>(l);
            iq4_indices(x + 32 * ib, dl != 0.0f ? 1 / dl : 0.0f, y[i].qs + 16 * ib);
            const int ls = l + 32;
            y[i].scales_l[ib / 2] =
                static_cast<uint8_t>(y[i].scales_l[ib / 2] | (ls & 0xF) << (4 * (ib % 2)));
            y[i].scales_h = static_cast<uint16_t>(y[i].scales_h | (ls >> 4) << (2 * ib));
        }
    }
}

// IQ4_NL (quantize_iq4_nl: quantize_row_iq4_nl_impl with one block of 32 per super-block): d
// the block's scale, the indices with that scale unrounded, as ggml.
void quantize_iq4_nl(const float* x, BlockIQ4NL* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += kQkIq4Nl) {
        const float d = iq4_block_scale(x);
        y[i].d = to_half(d);
        iq4_indices(x, d != 0.0f ? 1 / d : 0.0f, y[i].qs);
    }
}

}  // namespace lazyllm::testing::detail
