// QuantLinear's outlier channels (qgemv_outliers.h): finding them, their weight columns, and
// their fp32 terms.
#include "kernels/qgemv_outliers.h"

#include <algorithm>
#include <cmath>

#include "base/scratch.h"

namespace lazyllm::kernels::qgemv {

const float* find_outliers(const float* x, int64_t m, int64_t ldx, int64_t n_in,
                           OutlierScratch& s) {
    s.channels.clear();
    if (m < kOutlierMinRows) return nullptr;
    s.amax.assign(static_cast<size_t>(n_in), 0.0f);
    const int64_t n_sample = std::min(m, kOutlierSampleRows);
    for (int64_t i = 0; i < n_sample; ++i) {
        const float* row = x + (i * m / n_sample) * ldx;
        for (int64_t c = 0; c < n_in; ++c) s.amax[c] = std::max(s.amax[c], std::fabs(row[c]));
    }
    s.sorted = s.amax;
    const auto mid = s.sorted.begin() + n_in / 2;
    std::nth_element(s.sorted.begin(), mid, s.sorted.end());
    const float bound = kOutlierRatio * *mid;
    for (int64_t c = 0; c < n_in; ++c) {
        if (s.amax[c] > bound) s.channels.push_back(static_cast<int32_t>(c));
    }
    if (s.channels.empty()) return nullptr;
    if (s.channels.size() > static_cast<size_t>(kMaxOutliers)) {
        // The largest, ties to the lower channel (in place: no allocation).
        std::partial_sort(s.channels.begin(), s.channels.begin() + kMaxOutliers, s.channels.end(),
                          [&](int32_t a, int32_t b) {
                              return s.amax[a] > s.amax[b] || (s.amax[a] == s.amax[b] && a < b);
                          });
        s.channels.resize(kMaxOutliers);
        std::sort(s.channels.begin(), s.channels.end());
    }
    const int k = static_cast<int>(s.channels.size());
    s.keep.assign(static_cast<size_t>(n_in), 1.0f);
    for (int i = 0; i < k; ++i) s.keep[s.channels[i]] = 0.0f;
    float* xv = grow(s.xv, m * k);
    for (int64_t r = 0; r < m; ++r) {
        for (int i = 0; i < k; ++i) xv[r * k + i] = x[r * ldx + s.channels[i]];
    }
    return s.keep.data();
}

namespace {
void dequantize_column(const Weights& w, int32_t offset, int64_t c, float* out) {
    for (int64_t n = 0; n < w.n_out; ++n) out[n] = ref::weight_value(w, offset, n, c);
}
}  // namespace

void OutlierColumns::gather(const Weights& w, int32_t offset, OutlierScratch& s) const {
    s.col_ptrs.assign(s.channels.size(), nullptr);
    std::vector<int32_t>& missing = s.missing;
    missing.clear();
    {
        std::lock_guard<std::mutex> lock(mu_);
        for (size_t i = 0; i < s.channels.size(); ++i) {
            for (const auto& [c, col] : columns_) {
                if (c == s.channels[i]) s.col_ptrs[i] = col.get();
            }
            if (s.col_ptrs[i] != nullptr) continue;
            if (columns_.size() < kMaxCachedColumns) {
                auto col = std::make_unique<float[]>(static_cast<size_t>(w.n_out));
                dequantize_column(w, offset, s.channels[i], col.get());
                s.col_ptrs[i] = col.get();
                columns_.emplace_back(s.channels[i], std::move(col));
            } else {
                missing.push_back(static_cast<int32_t>(i));
            }
        }
    }
    s.cols.resize(missing.size() * static_cast<size_t>(w.n_out));
    for (size_t j = 0; j < missing.size(); ++j) {
        float* col = s.cols.data() + j * static_cast<size_t>(w.n_out);
        dequantize_column(w, offset, s.channels[missing[j]], col);
        s.col_ptrs[missing[j]] = col;
    }
}

void add_outlier_terms(Isa isa, int64_t n, const OutlierScratch& s, int64_t r0, int64_t r1,
                       float* y, int64_t ldy) {
    if (r0 >= r1) return;
    const int k = static_cast<int>(s.channels.size());
    const float* xv = s.xv.data() + r0 * k;
    float* yr = y + r0 * ldy;
    isa_dispatch(isa, [&]<Isa I>() {
        if constexpr (I == Isa::kRef) {
            ref::add_columns(xv, r1 - r0, k, s.col_ptrs.data(), n, yr, ldy);
        } else {
            add_columns<I>(xv, r1 - r0, k, s.col_ptrs.data(), n, yr, ldy);
        }
    });
}

}  // namespace lazyllm::kernels::qgemv
