// The outlier channels of QuantLinear::forward (from 16 rows on): the few channels of x far
// above the median channel leave the int8 blocks and enter as exact fp32 terms, x[r, c] times
// the dequantized weight column c. A model's residual stream carries a handful of channels with
// values many times the rest (docs/evaluation.md, "int8 prefill"); in a block of 32 they set
// the scale the other 31 are rounded to. The channels are chosen per call, from its rows, so a
// row's output depends on the other rows of the call (the int8 rounding alone does not).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "kernels/qgemv_isa.h"
#include "kernels/simd.h"

namespace lazyllm::kernels::qgemv {

// Rows from which outlier channels are looked for; rows sampled (evenly spaced); how far above
// the median channel's largest |x| a channel's must be; how many are taken at most (the
// largest).
inline constexpr int64_t kOutlierMinRows = 16;
inline constexpr int64_t kOutlierSampleRows = 64;
inline constexpr float kOutlierRatio = 6.0f;
inline constexpr int kMaxOutliers = 16;
// Columns a layer keeps dequantized (its outlier channels recur from call to call); those of
// channels beyond that are dequantized per call.
inline constexpr size_t kMaxCachedColumns = 64;

// One forward()'s outlier state (part of QuantLinear's workspace scratch; grows only).
struct OutlierScratch {
    std::vector<float> amax, sorted, keep;  // [n_in]
    std::vector<int32_t> channels;          // ascending
    std::vector<float> xv;                  // [m, channels]: their values per row
    std::vector<float> cols;                // [uncached channels, n_out]
    std::vector<int32_t> missing;           // indices into channels of the uncached ones
    std::vector<const float*> col_ptrs;     // [channels]: their weight columns
};

// Finds the outlier channels of x's m rows ([m, n_in], leading dimension ldx) into s.channels
// and, if there are any, their values into s.xv; returns the keep mask for quantize_rows
// (1.0f, and 0.0f at the channels), or nullptr where there are none (m < kOutlierMinRows,
// or no channel above the bound).
const float* find_outliers(const float* x, int64_t m, int64_t ldx, int64_t n_in, OutlierScratch& s);

// A layer's dequantized columns of its outlier channels, up to kMaxCachedColumns; thread-safe.
class OutlierColumns {
public:
    // Points s.col_ptrs at the columns of s.channels of the weights `w` (format offset
    // `offset`): kept ones, new ones kept while there is room, the rest dequantized into s.cols.
    void gather(const Weights& w, int32_t offset, OutlierScratch& s) const;

private:
    mutable std::mutex mu_;
    mutable std::vector<std::pair<int32_t, std::unique_ptr<float[]>>> columns_;
};

// y[r, :n] += the outlier terms of rows r0 <= r < r1 (s.xv times the columns at s.col_ptrs);
// kernel `isa` (the reference's fmas in the same order).
void add_outlier_terms(Isa isa, int64_t n, const OutlierScratch& s, int64_t r0, int64_t r1,
                       float* y, int64_t ldy);

}  // namespace lazyllm::kernels::qgemv
