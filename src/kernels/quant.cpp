// Checked entry points of quant.h: validate the type and length once, then hand the row through
// isa_dispatch (simd.h) to the reference or the instantiation for the Isa (kAmx runs the AVX-512
// one: AMX has nothing to offer an elementwise conversion).
#include "kernels/quant.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/quant_blocks.h"
#include "kernels/quant_isa.h"
#include "kernels/workspace.h"

namespace lazyllm::kernels {

namespace {

Status check_row(GgmlType type, const void* src, const void* dst, int64_t n) {
    const auto type_num = static_cast<uint32_t>(type);
    if (!quant_type_supported(type)) {
        if (!ggml_type_traits(type_num).has_value()) {
            return make_error(ErrorCode::kUnsupported, "dequantize: unknown tensor type {}",
                              type_num);
        }
        return make_error(
            ErrorCode::kUnsupported,
            "dequantize: tensor type {} ({}) has no dequantizer (supported: F32, "
            "F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, IQ4_NL)",
            ggml_type_name(type), type_num);
    }
    const int64_t block_size = quant::block_shape(type).elems;
    if (n < 0 || n % block_size != 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          "dequantize {}: n = {} is not a multiple of the block size {}",
                          ggml_type_name(type), n, block_size);
    }
    if (n > 0 && (src == nullptr || dst == nullptr)) {
        return make_error(ErrorCode::kInvalidArgument, "dequantize {}: null buffer for n = {}",
                          ggml_type_name(type), n);
    }
    return {};
}

// Guards against a caller passing an Isa the CPU lacks (that would be SIGILL, not an error).
// Features are read once; they cannot change while the process runs.
Status check_isa(Isa isa) {
    static const CpuFeatures kFeatures = detect_cpu_features();
    if (!isa_supported(isa, kFeatures)) {
        return make_error(ErrorCode::kUnsupported,
                          "dequantize: ISA {} is not supported by this CPU", isa_name(isa));
    }
    return {};
}

// Validates the call, then runs f.template operator()<I>() for the target of `isa`.
template <typename F>
Status checked(Isa isa, GgmlType type, const void* src, const void* dst, int64_t n, F&& f) {
    LAZYLLM_TRY(check_row(type, src, dst, n));
    LAZYLLM_TRY(check_isa(isa));
    if (n > 0) isa_dispatch(isa, f);
    return {};
}

// src as the kernels read it: in place, or a copy in `copy` where it is not aligned for its
// type's fields (the fp16 scales, F16 / BF16 elements, F32; quant::aligned_bytes).
const void* aligned_row(GgmlType type, const void* src, int64_t n, std::vector<uint64_t>* copy) {
    if (n <= 0) return src;
    const quant::BlockShape shape = quant::block_shape(type);
    const size_t bytes = static_cast<size_t>(n / shape.elems) * shape.bytes;
    return quant::aligned_bytes(src, bytes, type == GgmlType::F32 ? 4 : 2, copy);
}

// dequantize_unchecked of the target I (the reference for kRef).
template <Isa I>
void dequantize_as(GgmlType type, const void* src, float* dst, int64_t n) {
    if constexpr (I == Isa::kRef) {
        ref::dequantize_unchecked(type, src, dst, n);
    } else {
        detail::dequantize_unchecked<I>(type, src, dst, n);
    }
}

// gemv_rows_f32's scratch: x zero-padded to whole lanes (the caller's), and per worker its
// dequantized rows and a row's aligned copy.
struct GemvInput {
    std::vector<float> x;
};
struct GemvRows {
    std::vector<float> rows;
    std::vector<uint64_t> copy;
};

}  // namespace

Status dequantize_row_f32(Isa isa, GgmlType type, const void* src, float* dst, int64_t n) {
    std::vector<uint64_t> copy;
    return checked(isa, type, src, dst, n, [&]<Isa I>() {
        dequantize_as<I>(type, aligned_row(type, src, n, &copy), dst, n);
    });
}

Status gemv_rows_f32(const KernelContext& ctx, const BlockRows& w, const float* x, float* y) {
    LAZYLLM_TRY(check_row(w.type, w.data, y, w.n_in));
    if (w.n_out < 0 || (w.n_out > 0 && (w.data == nullptr || x == nullptr || y == nullptr))) {
        return make_error(ErrorCode::kInvalidArgument, "gemv {}: {} rows, null buffers",
                          ggml_type_name(w.type), w.n_out);
    }
    LAZYLLM_TRY(check_isa(ctx.isa));
    if (w.n_out == 0) return {};
    const quant::BlockShape shape = quant::block_shape(w.type);
    const size_t row_bytes = static_cast<size_t>(w.n_in / shape.elems) * shape.bytes;
    const int64_t n_pad = (w.n_in + kGemvLanes - 1) / kGemvLanes * kGemvLanes;
    const int64_t n_chunks = (w.n_out + kGemvRows - 1) / kGemvRows;
    const int64_t want_threads = ctx.n_threads > 0 ? ctx.n_threads : omp_get_max_threads();
    const int n_threads = static_cast<int>(std::clamp<int64_t>(want_threads, 1, n_chunks));
    Workspace local;
    Workspace& s = ctx.ws != nullptr ? *ctx.ws : local;
    std::vector<float>& xp = s.caller<GemvInput>().x;
    xp.assign(static_cast<size_t>(n_pad), 0.0f);
    std::copy(x, x + w.n_in, xp.begin());
    s.workers(n_threads);
    isa_dispatch(ctx.isa, [&]<Isa I>() {
#pragma omp parallel num_threads(n_threads)
        {
            GemvRows& t = s.worker<GemvRows>(omp_get_thread_num());
            t.rows.resize(static_cast<size_t>(kGemvRows * n_pad));
#pragma omp for schedule(static)
            for (int64_t c = 0; c < n_chunks; ++c) {
                const int64_t r0 = c * kGemvRows;
                const int n_rows = static_cast<int>(std::min<int64_t>(kGemvRows, w.n_out - r0));
                for (int k = 0; k < n_rows; ++k) {
                    const auto* src = static_cast<const uint8_t*>(w.data) +
                                      static_cast<size_t>(r0 + k) * row_bytes;
                    float* dst = t.rows.data() + k * n_pad;
                    dequantize_as<I>(w.type, aligned_row(w.type, src, w.n_in, &t.copy), dst,
                                     w.n_in);
                    std::fill(dst + w.n_in, dst + n_pad, 0.0f);
                }
                if constexpr (I == Isa::kRef) {
                    ref::dot_rows_f32(t.rows.data(), n_rows, xp.data(), n_pad, y + r0);
                } else {
                    detail::dot_rows_f32<I>(t.rows.data(), n_rows, xp.data(), n_pad, y + r0);
                }
            }
        }
    });
    return {};
}

bf16_t fp32_to_bf16(float x) { return quant::fp32_to_bf16_scalar(x); }
float bf16_to_fp32(bf16_t x) { return quant::bf16_to_fp32_scalar(x); }
float fp16_to_fp32(uint16_t h) { return quant::fp16_to_fp32_scalar(h); }
uint16_t fp32_to_fp16(float x) { return quant::fp32_to_fp16_scalar(x); }

namespace ref {

Status dequantize_row_f32(GgmlType type, const void* src, float* dst, int64_t n) {
    LAZYLLM_TRY(check_row(type, src, dst, n));
    std::vector<uint64_t> copy;
    src = aligned_row(type, src, n, &copy);
    if (n > 0) dequantize_unchecked(type, src, dst, n);
    return {};
}

}  // namespace ref

}  // namespace lazyllm::kernels
