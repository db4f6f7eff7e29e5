// QuantLinear's outlier channels (qgemv_outliers.h): their scratch, their weight columns, and
// their fp32 terms. The channels themselves are chosen by quantize_rows (RowOutliers).
#include "kernels/qgemv_outliers.h"

#include <algorithm>
#include <cstring>

#include "base/scratch.h"

namespace lazyllm::kernels::qgemv {

RowOutliers OutlierScratch::rows(int64_t m) {
    return {kOutlierRatio, grow(count, m), grow(channel, m * kRowOutliers),
            grow(value, m * kRowOutliers)};
}

void OutlierScratch::collect(int64_t m, int64_t n_in) {
    if (used.size() < static_cast<size_t>(n_in)) used.resize(static_cast<size_t>(n_in));
    channels.clear();
    for (int64_t r = 0; r < m; ++r) {
        const int32_t* ch = channel.data() + r * kRowOutliers;
        for (int i = 0; i < count[r]; ++i) {
            if (used[ch[i]] == 0) {
                used[ch[i]] = 1;
                channels.push_back(ch[i]);
            }
        }
    }
    for (int32_t c : channels) used[c] = 0;
    std::sort(channels.begin(), channels.end());
}

namespace {
void dequantize_column(const Weights& w, int32_t offset, int64_t c, float* out) {
    for (int64_t n = 0; n < w.n_out; ++n) out[n] = ref::weight_value(w, offset, n, c);
}
}  // namespace

void OutlierColumns::gather(const Weights& w, int32_t offset, OutlierScratch& s) const {
    if (s.col_of.size() < static_cast<size_t>(w.n_in)) s.col_of.resize(static_cast<size_t>(w.n_in));
    std::vector<int32_t>& missing = s.missing;
    missing.clear();
    {
        std::lock_guard<std::mutex> lock(mu_);
        for (int32_t c : s.channels) {
            const float* col = nullptr;
            for (const auto& [cc, kept] : columns_) {
                if (cc == c) col = kept.get();
            }
            if (col == nullptr && columns_.size() < kMaxCachedColumns) {
                auto fresh = std::make_unique<float[]>(static_cast<size_t>(w.n_out));
                dequantize_column(w, offset, c, fresh.get());
                col = fresh.get();
                columns_.emplace_back(c, std::move(fresh));
            }
            if (col == nullptr) missing.push_back(c);
            s.col_of[c] = col;
        }
    }
    s.cols.resize(missing.size() * static_cast<size_t>(w.n_out));
    for (size_t j = 0; j < missing.size(); ++j) {
        float* col = s.cols.data() + j * static_cast<size_t>(w.n_out);
        dequantize_column(w, offset, missing[j], col);
        s.col_of[missing[j]] = col;
    }
}

void add_outlier_terms(Isa isa, int64_t n, const OutlierScratch& s, int64_t r0, int64_t r1,
                       float* y, int64_t ldy) {
    const int32_t* count = s.count.data();
    const auto same = [&](int64_t a, int64_t b) {
        return count[a] == count[b] &&
               std::memcmp(s.channel.data() + a * kRowOutliers, s.channel.data() + b * kRowOutliers,
                           sizeof(int32_t) * static_cast<size_t>(count[a])) == 0;
    };
    for (int64_t r = r0; r < r1;) {
        int64_t end = r + 1;
        while (end < r1 && same(r, end)) ++end;
        const int k = count[r];
        if (k > 0) {
            const float* cols[kRowOutliers];
            for (int i = 0; i < k; ++i) cols[i] = s.col_of[s.channel[r * kRowOutliers + i]];
            const float* xv = s.value.data() + r * kRowOutliers;
            float* yr = y + r * ldy;
            simd_or_ref(
                isa, [&] { ref::add_columns(xv, kRowOutliers, end - r, k, cols, n, yr, ldy); },
                [&]<Isa I>() { add_columns<I>(xv, kRowOutliers, end - r, k, cols, n, yr, ldy); });
        }
        r = end;
    }
}

}  // namespace lazyllm::kernels::qgemv
