// Scalar reference of QuantLinear's kernels (layout and values: qgemv_isa.h): the definition
// the AVX-512 VNNI (qgemv_vnni.cpp) and AVX2 (qgemv_avx2.cpp) kernels are tested against, and
// the path of CPUs with neither.
#include <algorithm>
#include <cmath>

#include "kernels/qgemv_isa.h"
#include "kernels/quant_blocks.h"

namespace lazyllm::kernels {

using qgemv::kBlock;
using qgemv::kChunkBytes;
using qgemv::kGroupRows;

namespace qgemv::ref {

void quantize_rows(const float* x, int64_t m, int64_t r0, int64_t r1, int64_t ldx, int64_t n_in,
                   int32_t offset, const ActivationBuffers& out, const RowOutliers* outliers) {
    const int64_t nb = n_in / kBlock;
    for (int64_t r = r0; r < r1; ++r) {
        const float* xr = x + r * ldx;
        RowChannels oc;
        if (outliers != nullptr) {
            float lanes[16] = {};
            for (int64_t c = 0; c < n_in; ++c) lanes[c % 16] += std::fabs(xr[c]);
            const float bound = RowOutlierPick::bound(lanes, n_in, outliers->ratio);
            RowOutlierPick pick;
            for (int64_t c = 0; c < n_in; ++c) {
                if (std::fabs(xr[c]) > bound) pick.add(static_cast<int32_t>(c), xr[c]);
            }
            oc = {outliers->channel + r * kRowOutliers, pick.finish(*outliers, r)};
        }
        int next = 0;
        for (int64_t b = 0; b < nb; ++b) {
            const uint32_t zero = block_outliers(oc.ch, oc.n, next, b);
            float xb[kBlock];
            for (int j = 0; j < kBlock; ++j) {
                xb[j] = (zero >> j & 1) != 0 ? 0.0f : xr[b * kBlock + j];
            }
            int8_t* qb = out.q + (b * m + r) * kBlock;
            float amax = 0.0f;
            for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(xb[j]));
            const auto [d, id] = block_scale(amax);
            int32_t sum = 0;
            for (int j = 0; j < kBlock; ++j) {
                const int q = static_cast<int>(std::nearbyint(xb[j] * id));
                qb[j] = static_cast<int8_t>(q);
                sum += q;
            }
            set_block_stats(out, b * m + r, d, sum, offset);
        }
    }
}

void half_sums(const int8_t* q, int64_t m, int64_t n_blocks, int32_t* out) {
    for (int64_t i = 0; i < m * n_blocks; ++i) {
        const int8_t* qb = q + i * kBlock;
        int32_t lo = 0, hi = 0;
        for (int k = 0; k < kBlock / 2; ++k) {
            lo += qb[k];
            hi += qb[k + kBlock / 2];
        }
        // |sum| <= 16 * 127: each fits the int16 half of the pair.
        out[i] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) |
                                      (static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16));
    }
}

void add_columns(const float* xv, int64_t ldxv, int64_t m, int k, const float* const* cols,
                 int64_t n, float* y, int64_t ldy) {
    for (int64_t r = 0; r < m; ++r) {
        for (int64_t j = 0; j < n; ++j) {
            float acc = y[r * ldy + j];
            for (int i = 0; i < k; ++i) acc = std::fma(xv[r * ldxv + i], cols[i][j], acc);
            y[r * ldy + j] = acc;
        }
    }
}

namespace {
// Stored unsigned quant of element k of block b, lane `lane` (layout: qgemv_isa.h).
int stored_quant(const Weights& w, int64_t g, int64_t b, int lane, int k) {
    const uint8_t* qs = w.block_qs(g, b);
    if (w.bits == 8) return qs[(k / 4) * kChunkBytes + lane * 4 + k % 4];
    const int c = k / 8, j = k % 8;
    if (w.bits == 3) {
        const uint8_t two = qs[(c / 2) * kChunkBytes + lane * 4 + (j % 4)];
        const uint8_t third = qs[2 * kChunkBytes + lane * 4 + (j % 4)];
        return ((two >> (4 * (c % 2) + 2 * (j / 4))) & 3) |
               (((third >> (c + 4 * (j / 4))) & 1) << 2);
    }
    const uint8_t byte = qs[c * kChunkBytes + lane * 4 + (j % 4)];
    const int lo = j < 4 ? (byte & 0x0F) : (byte >> 4);
    if (w.bits == 4) return lo;
    if (w.bits == 5) {
        const uint8_t high = qs[4 * kChunkBytes + lane * 4 + (j % 4)];
        return lo | (((high >> (c + 4 * (j / 4))) & 1) << 4);
    }
    const uint8_t high = qs[(4 + c / 2) * kChunkBytes + lane * 4 + (j % 4)];
    return lo | (((high >> (4 * (c % 2) + 2 * (j / 4))) & 3) << 4);
}

// The unsigned quant u of element k (IQ4_XS, IQ4_NL: its grid value + 128).
int quant_value(const Weights& w, int64_t g, int64_t b, int lane, int k) {
    const int u = stored_quant(w, g, b, lane, k);
    return grid_quants(w.scales_kind) ? kGridU8[u] : u;
}

// The exact int32 dot product of block b of row `lane` with activation row r (qgemv_isa.h,
// Values), offset included.
int32_t block_dot(const Weights& w, const Activations& a, int64_t m, int64_t g, int64_t b, int lane,
                  int64_t r) {
    const int8_t* xq = a.q + (b * m + r) * kBlock;
    if (!half_scales(w.bits)) {
        int32_t isum = a.corr[b * m + r];
        for (int k = 0; k < kBlock; ++k) isum += quant_value(w, g, b, lane, k) * xq[k];
        return isum;
    }
    const int8_t* sc = w.block_sub(g, b) + lane * 2;
    int32_t isum = 0;
    for (int h = 0; h < 2; ++h) {
        int32_t part = 0;
        for (int k = 16 * h; k < 16 * h + 16; ++k) {
            part += (stored_quant(w, g, b, lane, k) - half_offset(w.bits)) * xq[k];
        }
        isum += sc[h] * part;
    }
    return isum;
}
}  // namespace

float weight_value(const Weights& w, int32_t offset, int64_t n, int64_t c) {
    const int64_t g = n / kGroupRows, b = c / kBlock;
    const int lane = static_cast<int>(n % kGroupRows), k = static_cast<int>(c % kBlock);
    const int u = quant_value(w, g, b, lane, k);
    const float d = quant::fp16_to_fp32_scalar(w.block_d(g, b)[lane]);
    const int8_t* sub = w.block_sub(g, b) + lane * 2;
    if (half_scales(w.bits)) {
        return d * static_cast<float>(sub[k / 16]) * static_cast<float>(u - half_offset(w.bits));
    }
    if (w.scales_kind == Scales::kK) {
        const float mn =
            quant::fp16_to_fp32_scalar(w.block_m(g, b)[lane]) * static_cast<float>(sub[1]);
        return d * static_cast<float>(sub[0]) * static_cast<float>(u) + mn;
    }
    if (w.scales_kind == Scales::kGrid) {
        return d * static_cast<float>(sub[0]) * static_cast<float>(u - offset);
    }
    if (w.has_min()) {
        return static_cast<float>(u) * d + quant::fp16_to_fp32_scalar(w.block_m(g, b)[lane]);
    }
    return static_cast<float>(u - offset) * d;
}

void gemv(const Weights& w, const Activations& a, int64_t m, int64_t g0, int64_t g1,
          const float* bias, float* y, int64_t ldy, bool accumulate) {
    const int64_t nb = w.n_blocks;
    const bool multiplier = block_multiplier(w.scales_kind);
    for (int64_t g = g0; g < g1; ++g) {
        for (int lane = 0; lane < kGroupRows; ++lane) {
            const int64_t n = g * kGroupRows + lane;
            if (n >= w.n_out) break;
            for (int64_t r = 0; r < m; ++r) {
                float acc = 0.0f;
                for (int64_t b = 0; b < nb; ++b) {
                    const int32_t isum = block_dot(w, a, m, g, b, lane, r);
                    float d = quant::fp16_to_fp32_scalar(w.block_d(g, b)[lane]);
                    float mn =
                        w.has_min() ? quant::fp16_to_fp32_scalar(w.block_m(g, b)[lane]) : 0.0f;
                    if (multiplier) {  // the block's multipliers (exact products)
                        const int8_t* sub = w.block_sub(g, b) + lane * 2;
                        d *= static_cast<float>(sub[0]);
                        if (w.has_min()) mn *= static_cast<float>(sub[1]);
                    }
                    acc = std::fma(static_cast<float>(isum), d * a.d[b * m + r], acc);
                    if (w.has_min()) acc = std::fma(mn, a.s[b * m + r], acc);
                }
                float out = acc;
                if (bias != nullptr) out = out + bias[n];
                float* yp = y + r * ldy + n;
                *yp = accumulate ? out + *yp : out;
            }
        }
    }
}

}  // namespace qgemv::ref

}  // namespace lazyllm::kernels
