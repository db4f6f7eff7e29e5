// RoPE tables and the run-time dispatch of the row-wise operators: rows are split over
// ctx.n_threads (OpenMP) when the block is big enough to pay for the fork, and each block goes
// through isa_dispatch (simd.h) to the instantiation for ctx.isa (kAmx runs the AVX-512 one:
// these operators have no AMX form) or to the reference.
#include "kernels/ops.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "kernels/ops_isa.h"

namespace lazyllm::kernels {

RopeTable::RopeTable(int64_t n_ctx, int n_rot, float theta, const std::vector<float>& freq_factors)
    : n_ctx_(n_ctx), n_rot_(n_rot) {
    LAZYLLM_CHECK(n_ctx > 0 && n_rot > 0 && n_rot % 2 == 0);
    const int half = n_rot / 2;
    LAZYLLM_CHECK(freq_factors.empty() || static_cast<int>(freq_factors.size()) == half);
    // Default-initialized: the pages of rows never made are never touched.
    cos_ = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(n_ctx) * half);
    sin_ = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(n_ctx) * half);
    filled_ = std::make_unique<std::once_flag[]>(
        static_cast<size_t>((n_ctx + kFillRows - 1) / kFillRows));
    freq_.resize(half);
    for (int i = 0; i < half; ++i) {
        freq_[i] = std::pow(static_cast<double>(theta), -2.0 * i / n_rot);
        if (!freq_factors.empty()) freq_[i] /= freq_factors[i];  // Llama 3 rope scaling
    }
}

void RopeTable::ensure(int64_t n) const {
    LAZYLLM_CHECK(n <= n_ctx_);
    const int half = n_rot_ / 2;
    for (int64_t chunk = 0; chunk * kFillRows < n; ++chunk) {
        std::call_once(filled_[chunk], [&] {
            // Angles in double, stored as float: pos * freq reaches ~8e3 rad at long context,
            // where a float angle would already be off by ~5e-4 rad.
            const int64_t end = std::min(n_ctx_, (chunk + 1) * kFillRows);
            for (int64_t p = chunk * kFillRows; p < end; ++p) {
                for (int i = 0; i < half; ++i) {
                    const double angle = static_cast<double>(p) * freq_[i];
                    cos_[p * half + i] = static_cast<float>(std::cos(angle));
                    sin_[p * half + i] = static_cast<float>(std::sin(angle));
                }
            }
        });
    }
}

namespace {

// Rows per OpenMP chunk so that a chunk carries at least ~16k elements of work.
int64_t rows_per_chunk(int64_t row_elems) {
    return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, row_elems));
}

// Calls fn(row_begin, row_count) over [0, n_rows), in parallel when worthwhile.
template <typename Fn>
void for_row_blocks(const KernelContext& ctx, int64_t n_rows, int64_t row_elems, Fn&& fn) {
    const int64_t chunk = rows_per_chunk(row_elems);
    const int64_t n_chunks = (n_rows + chunk - 1) / chunk;
    if (ctx.n_threads <= 1 || n_chunks <= 1) {
        fn(int64_t{0}, n_rows);
        return;
    }
#pragma omp parallel for num_threads(ctx.n_threads) schedule(static)
    for (int64_t c = 0; c < n_chunks; ++c) {
        const int64_t r0 = c * chunk;
        fn(r0, std::min(chunk, n_rows - r0));
    }
}

}  // namespace

void parallel_rows(const KernelContext& ctx, int64_t n_rows, int64_t row_elems,
                   const RowsDone& work) {
    for_row_blocks(ctx, n_rows, row_elems,
                   [&](int64_t r0, int64_t rows) { work.fn(work.ctx, r0, r0 + rows); });
}

void rms_norm(const KernelContext& ctx, const float* x, const float* w, float* y, int64_t n_rows,
              int64_t n, float eps) {
    for_row_blocks(ctx, n_rows, n, [&](int64_t r0, int64_t rows) {
        simd_or_ref(
            ctx.isa, [&] { ref::rms_norm(x + r0 * n, w, y + r0 * n, rows, n, eps); },
            [&]<Isa I>() { detail::rms_norm_rows<I>(x + r0 * n, w, y + r0 * n, rows, n, eps); });
    });
}

void glu(const KernelContext& ctx, GluAct act, const float* gate_up, float* out, int64_t n_rows,
         int64_t n_ff) {
    for_row_blocks(ctx, n_rows, 2 * n_ff, [&](int64_t r0, int64_t rows) {
        const float* g = gate_up + r0 * 2 * n_ff;
        simd_or_ref(
            ctx.isa, [&] { ref::glu(act, g, out + r0 * n_ff, rows, n_ff); },
            [&]<Isa I>() { detail::glu_rows<I>(act, g, out + r0 * n_ff, rows, n_ff); });
    });
}

void rms_norm_heads(const KernelContext& ctx, float* x, int64_t row_stride, int64_t n_rows,
                    int n_heads, int head_dim, const float* w, float eps) {
    LAZYLLM_CHECK(row_stride >= static_cast<int64_t>(n_heads) * head_dim);
    for_row_blocks(
        ctx, n_rows, static_cast<int64_t>(n_heads) * head_dim, [&](int64_t r0, int64_t rows) {
            for (int64_t r = r0; r < r0 + rows; ++r) {  // each row's heads as rows of head_dim
                float* row = x + r * row_stride;
                simd_or_ref(
                    ctx.isa, [&] { ref::rms_norm(row, w, row, n_heads, head_dim, eps); },
                    [&]<Isa I>() {
                        detail::rms_norm_rows<I>(row, w, row, n_heads, head_dim, eps);
                    });
            }
        });
}

// The bf16-writing variants are vectorized for AVX-512 only (the bf16 GEMMs that read their
// output need AVX-512-BF16 or AMX); other targets use the reference.
void rms_norm_bf16(const KernelContext& ctx, const float* x, const float* w, uint16_t* y,
                   int64_t n_rows, int64_t n, float eps) {
    for_row_blocks(ctx, n_rows, n, [&](int64_t r0, int64_t rows) {
        isa_dispatch(ctx.isa, [&]<Isa I>() {
            if constexpr (I == Isa::kAvx512) {
                detail::rms_norm_rows<I>(x + r0 * n, w, y + r0 * n, rows, n, eps);
            } else {
                ref::rms_norm_bf16(x + r0 * n, w, y + r0 * n, rows, n, eps);
            }
        });
    });
}

void glu_bf16(const KernelContext& ctx, GluAct act, const float* gate_up, uint16_t* out,
              int64_t n_rows, int64_t n_ff) {
    for_row_blocks(ctx, n_rows, 2 * n_ff, [&](int64_t r0, int64_t rows) {
        isa_dispatch(ctx.isa, [&]<Isa I>() {
            if constexpr (I == Isa::kAvx512) {
                detail::glu_rows<I>(act, gate_up + r0 * 2 * n_ff, out + r0 * n_ff, rows, n_ff);
            } else {
                ref::glu_bf16(act, gate_up + r0 * 2 * n_ff, out + r0 * n_ff, rows, n_ff);
            }
        });
    });
}

void add_inplace(const KernelContext& ctx, float* x, const float* y, int64_t n) {
    // One "row" of n elements split into pieces of 16k: the work is one pass over memory.
    constexpr int64_t kPiece = int64_t{1} << 14;
    for_row_blocks(ctx, (n + kPiece - 1) / kPiece, kPiece, [&](int64_t p0, int64_t pieces) {
        const int64_t begin = p0 * kPiece;
        const int64_t count = std::min(pieces * kPiece, n - begin);
        simd_or_ref(
            ctx.isa, [&] { ref::add_inplace(x + begin, y + begin, count); },
            [&]<Isa I>() { detail::add_inplace_span<I>(x + begin, y + begin, count); });
    });
}

void rope(const KernelContext& ctx, const RopeTable& table, RopeMode mode, float* x,
          const int32_t* pos, int64_t n_rows, int64_t row_stride, int n_heads, int head_dim) {
    LAZYLLM_CHECK(table.n_rot() <= head_dim);
    int32_t last = -1;
    for (int64_t r = 0; r < n_rows; ++r) {
        LAZYLLM_CHECK(pos[r] >= 0 && pos[r] < table.n_ctx());
        last = std::max(last, pos[r]);
    }
    table.ensure(int64_t{last} + 1);
    const int64_t row_elems = static_cast<int64_t>(n_heads) * table.n_rot();
    for_row_blocks(ctx, n_rows, row_elems, [&](int64_t r0, int64_t rows) {
        float* xb = x + r0 * row_stride;
        const int32_t* pb = pos + r0;
        simd_or_ref(
            ctx.isa, [&] { ref::rope(table, mode, xb, pb, rows, row_stride, n_heads, head_dim); },
            [&]<Isa I>() {
                detail::rope_rows<I>(table, mode, xb, pb, rows, row_stride, n_heads, head_dim);
            });
    });
}

namespace ref {

void add_inplace(float* x, const float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace ref

}  // namespace lazyllm::kernels
