// The outlier channels of QuantLinear::forward (when asked: prompt rows): in each row, the few
// channels far above the row's mean magnitude leave its int8 blocks and enter as exact fp32
// terms, x[r, c] times the dequantized weight column c. A model's residual stream carries a
// handful of channels with values many times the rest (docs/evaluation.md, "int8 prefill"); in
// a block of 32 they set the scale the other 31 are rounded to. Each row's channels are chosen
// from that row alone (RowOutliers, qgemv_isa.h), so a row's output does not depend on the
// other rows of its call: a prompt gives the same logits however it is split into steps.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "kernels/qgemv_isa.h"
#include "kernels/simd.h"

namespace lazyllm::kernels::qgemv {

// A channel is an outlier of its row where |x| > kOutlierRatio * the row's mean |x| (at most
// kRowOutliers per row, the largest).
inline constexpr float kOutlierRatio = 12.0f;
// Columns a layer keeps dequantized (its outlier channels recur from call to call); those of
// channels beyond that are dequantized per call.
inline constexpr size_t kMaxCachedColumns = 64;

// One forward()'s outlier state (part of QuantLinear's workspace scratch; grows only).
struct OutlierScratch {
    std::vector<int32_t> count, channel;  // RowOutliers' [m], [m, kRowOutliers]
    std::vector<float> value;             // [m, kRowOutliers]
    std::vector<uint8_t> used;            // [n_in]: 1 where some row chose the channel
    std::vector<int32_t> channels;        // the rows' channels together, ascending
    std::vector<const float*> col_of;     // [n_in]: the weight column of each of them
    std::vector<float> cols;              // [uncached channels, n_out]
    std::vector<int32_t> missing;         // the uncached ones

    // RowOutliers for m rows, backed by this scratch.
    RowOutliers rows(int64_t m);
    // After quantize_rows: every channel some row of [0, m) chose, into `channels`.
    void collect(int64_t m, int64_t n_in);
};

// A layer's dequantized columns of its outlier channels, up to kMaxCachedColumns; thread-safe.
class OutlierColumns {
public:
    // Points s.col_of at the columns of s.channels of the weights `w` (format offset `offset`):
    // kept ones, new ones kept while there is room, the rest dequantized into s.cols.
    void gather(const Weights& w, int32_t offset, OutlierScratch& s) const;

private:
    mutable std::mutex mu_;
    mutable std::vector<std::pair<int32_t, std::unique_ptr<float[]>>> columns_;
};

// y[r, :n] += the outlier terms of rows r0 <= r < r1, each row's channels in ascending order
// (ref::add_columns on each run of rows that chose the same channels); kernel `isa`.
void add_outlier_terms(Isa isa, int64_t n, const OutlierScratch& s, int64_t r0, int64_t r1,
                       float* y, int64_t ldy);

}  // namespace lazyllm::kernels::qgemv
