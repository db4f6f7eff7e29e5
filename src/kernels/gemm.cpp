// PackedLinear: our own AMX kernel (gemm_amx.h) where it applies, our own AVX2 fp32 kernel
// (gemm_avx2.h) for fp32 on Isa::kAvx2, else oneDNN matmul.
//
// The oneDNN backend: weights packed once (format_tag::any chosen by the primitive,
// one reorder), primitives cached per row count m (oneDNN primitives are shape-specific; with
// DNNL_RUNTIME_DIM_VAL for M oneDNN 2.6.3 falls back to its reference kernel).
//
// What oneDNN 2.6.3 does that this file relies on (see bench/gemm_bench.cpp):
// - the packed weight layout chosen for M = 256 is the one chosen for every M, and a matmul
//   created with that fixed layout still dispatches to brg:avx512_core_amx_bf16 (bf16) or
//   brg:avx512_core (f32) for every M tried (1..4096), so one packed copy serves all m;
// - strided src or dst (ld > row length) makes oneDNN pick ref:any, so strided activations go
//   through a dense scratch instead;
// - creating a primitive is costly on a miss of oneDNN's global primitive cache and cheap on a
//   hit, so 30 layers of the same shape pay the miss once per new m.
//
// Threads: oneDNN's OpenMP runtime reads omp_get_max_threads() when a primitive is created and
// run. forward() sets it to the ctx.n_threads given at create() for the duration of the call
// and restores the caller's value afterwards (the setting is per calling thread).
#include "kernels/gemm.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "base/check.h"
#include "base/scratch.h"
#include "kernels/gemm_amx.h"
#include "kernels/gemm_avx2.h"
#include "kernels/gemm_convert.h"
#include "kernels/ops.h"
#include "kernels/quant_blocks.h"
#include "kernels/workspace.h"

namespace lazyllm::kernels {

namespace detail {

void convert_rows_to_bf16_ref(const float* src, int64_t n_rows, int64_t n_cols, int64_t ld_src,
                              uint16_t* dst, int64_t ld_dst) {
    for (int64_t r = 0; r < n_rows; ++r) {
        for (int64_t c = 0; c < n_cols; ++c) {
            dst[r * ld_dst + c] = quant::fp32_to_bf16_scalar(src[r * ld_src + c]);
        }
    }
}

}  // namespace detail

namespace {

using dnnl::memory;
using Dt = memory::data_type;
using Tag = memory::format_tag;

// Row count used to let oneDNN choose the packed weight layout (any M gives the same one).
constexpr int64_t kPackRows = 256;
// Bound on cached primitives per layer; pruning makes m arbitrary, so the map is cleared
// when it grows past this (oneDNN's own cache still makes the re-creation cheap).
constexpr size_t kMaxCachedShapes = 256;
// oneDNN 2.6's AMX matmul is several times slower for some row counts, such as m = 1403 in
// y[m, 3072] = x[m, 576] W^T (bench/gemm_bench.cpp odd_rows); multiples of 64 were fast in
// every case tried. Pruned steps produce arbitrary counts (0.35 x 4006 = 1403), so execute()
// runs a ragged m > 64 as a block of a multiple of 64 rows plus a tail of < 64 rows.
constexpr int64_t kRowAlign = 64;

// Sets the OpenMP thread count for this thread's parallel regions for one scope.
class OmpThreadScope {
public:
    explicit OmpThreadScope(int n_threads) : prev_(omp_get_max_threads()) {
        if (n_threads != prev_) omp_set_num_threads(n_threads);
        changed_ = n_threads != prev_;
    }
    ~OmpThreadScope() {
        if (changed_) omp_set_num_threads(prev_);
    }
    OmpThreadScope(const OmpThreadScope&) = delete;
    OmpThreadScope& operator=(const OmpThreadScope&) = delete;

private:
    int prev_;
    bool changed_ = false;
};

// Activation scratch, a Workspace part rather than per layer: 30 layers x 4 linears, each
// holding scratch for 8k rows, would pin over 1 GB; one set per workspace is bounded by the
// largest layer (8k x 1536 bf16 = 25 MB).
struct Scratch {
    std::vector<uint16_t> src_bf16;  // [m, n_in] bf16 activations
    std::vector<float> src_f32;      // [m, n_in] dense copy of strided fp32 activations
    std::vector<float> dst_f32;      // [m, n_out] dense output when ldy > n_out
    std::vector<float> gate_up;      // [m, n_out] fp32 gate/up for the unfused GLU path
};

}  // namespace

bool gemm_uses_bf16(const KernelContext& ctx, GemmPrecision precision) {
    switch (precision) {
        case GemmPrecision::kAuto:
            return ctx.isa >= Isa::kAvx512 && cpu_bf16_gemm_pays();  // (AMX implies BF16)
        case GemmPrecision::kF32:
            return false;
        case GemmPrecision::kBf16:
            return cpu_has_avx512_bf16();
    }
    return false;
}

struct PackedLinear::Impl {
    // A matmul for one row count, with its memory objects (re-pointed each call: creating
    // dnnl::memory objects allocates, set_data_handle does not).
    struct Shape {
        dnnl::matmul prim;
        memory src, dst;
        // Built once and passed through the C API: the C++ execute() builds a vector per call.
        std::array<dnnl_exec_arg_t, 4> args{};
        int n_args = 0;
    };

    int64_t n_in = 0, n_out = 0;
    bool bf16 = false;
    KernelContext ctx;  // n_threads resolved at create() (> 0)
    GemmLayout layout = GemmLayout::kPlain;
    GemmBackend backend = GemmBackend::kOneDnn;

    // AVX2 fp32 backend: packed weights (gemm_avx2.h) and the bias.
    std::unique_ptr<float, FreeDeleter> avx2_w;
    std::vector<float> avx2_bias;

    // AMX backend: packed weights, bias in packed column order, and for kSwiGlu the W row of
    // each packed column (empty: identity).
    std::unique_ptr<uint16_t, FreeDeleter> amx_w;
    std::vector<float> amx_bias;
    std::vector<int64_t> amx_col_row;

    // oneDNN backend.
    dnnl::engine engine;
    dnnl::stream stream;
    memory::desc weights_md;  // packed layout chosen by oneDNN

    // A call's leading dimensions: 0 = dense rows, else at least a row (checked).
    void resolve_ld(int64_t& ldx, int64_t& ldy) const {
        if (ldx == 0) ldx = n_in;
        if (ldy == 0) ldy = n_out;
        LAZYLLM_CHECK(ldx >= n_in && ldy >= n_out);
    }
    memory weights;           // [n_in, n_out] logical, packed
    std::vector<float> bias;  // [n_out] or empty
    memory bias_mem;

    std::mutex mu;  // guards the cache and the stream (forward is const, may run concurrently)
    std::unordered_map<int64_t, Shape> shapes;  // key: m * 2 + accumulate

    Dt src_dt() const { return bf16 ? Dt::bf16 : Dt::f32; }

    dnnl::matmul::primitive_desc make_pd(int64_t m, const memory::desc& w_md,
                                         bool accumulate) const {
        const memory::desc src_md({m, n_in}, src_dt(), Tag::ab);
        const memory::desc dst_md({m, n_out}, Dt::f32, Tag::ab);
        dnnl::primitive_attr attr;
        if (accumulate) {
            dnnl::post_ops ops;
            ops.append_sum(1.0f);
            attr.set_post_ops(ops);
        }
        if (bias.empty()) {
            return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, w_md, dst_md), attr,
                                                engine);
        }
        const memory::desc bias_md({1, n_out}, Dt::f32, Tag::ab);
        return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, w_md, bias_md, dst_md), attr,
                                            engine);
    }

    Shape& shape_for(int64_t m, bool accumulate) {
        const int64_t key = m * 2 + (accumulate ? 1 : 0);
        auto it = shapes.find(key);
        if (it != shapes.end()) return it->second;
        if (shapes.size() >= kMaxCachedShapes) shapes.clear();
        try {
            const auto pd = make_pd(m, weights_md, accumulate);
            Shape s{dnnl::matmul(pd),
                    memory(pd.src_desc(), engine, DNNL_MEMORY_NONE),
                    memory(pd.dst_desc(), engine, DNNL_MEMORY_NONE),
                    {}};
            Shape& out = shapes.emplace(key, std::move(s)).first->second;
            out.args[out.n_args++] = {DNNL_ARG_SRC, out.src.get()};
            out.args[out.n_args++] = {DNNL_ARG_WEIGHTS, weights.get()};
            out.args[out.n_args++] = {DNNL_ARG_DST, out.dst.get()};
            if (!bias.empty()) out.args[out.n_args++] = {DNNL_ARG_BIAS, bias_mem.get()};
            return out;
        } catch (const dnnl::error& e) {
            // create() built a primitive of the same kind, so this is an internal failure.
            std::fprintf(stderr, "lazyllm: oneDNN matmul m=%lld n_in=%lld n_out=%lld: %s\n",
                         static_cast<long long>(m), static_cast<long long>(n_in),
                         static_cast<long long>(n_out), e.what());
            std::abort();
        }
    }

    void convert_src(const float* x, int64_t m, int64_t ldx, uint16_t* dst) {
        // Conversion is memory-bound; split rows over the threads for big blocks only.
        const int64_t chunk = 64;
        const int64_t n_chunks = (m + chunk - 1) / chunk;
#pragma omp parallel for num_threads(ctx.n_threads) schedule(static) if (n_chunks > 1)
        for (int64_t c = 0; c < n_chunks; ++c) {
            const int64_t r0 = c * chunk;
            const int64_t rows = std::min(chunk, m - r0);
            detail::convert_rows_to_bf16_avx512(x + r0 * ldx, rows, n_in, ldx, dst + r0 * n_in,
                                                n_in);
        }
    }

    void forward(const float* x, int64_t m, float* y, int64_t ldx, int64_t ldy, bool accumulate,
                 Workspace& ws) {
        std::lock_guard<std::mutex> lock(mu);
        OmpThreadScope threads(ctx.n_threads);
        Scratch& scratch = ws.caller<Scratch>();
        const void* src_ptr = x;
        if (bf16) {
            uint16_t* converted = grow(scratch.src_bf16, m * n_in);
            convert_src(x, m, ldx, converted);
            src_ptr = converted;
        } else if (ldx != n_in) {
            float* dense = grow(scratch.src_f32, m * n_in);
            for (int64_t r = 0; r < m; ++r) {
                std::memcpy(dense + r * n_in, x + r * ldx, n_in * sizeof(float));
            }
            src_ptr = dense;
        }
        execute(src_ptr, m, y, ldy, accumulate, scratch);
    }

    void forward_bf16(const uint16_t* x, int64_t m, float* y, int64_t ldx, int64_t ldy,
                      bool accumulate, Workspace& ws) {
        std::lock_guard<std::mutex> lock(mu);
        OmpThreadScope threads(ctx.n_threads);
        Scratch& scratch = ws.caller<Scratch>();
        const void* src_ptr = x;
        if (ldx != n_in) {
            uint16_t* dense = grow(scratch.src_bf16, m * n_in);
            for (int64_t r = 0; r < m; ++r) {
                std::memcpy(dense + r * n_in, x + r * ldx, n_in * sizeof(uint16_t));
            }
            src_ptr = dense;
        }
        execute(src_ptr, m, y, ldy, accumulate, scratch);
    }

    // AMX backend. x: bf16 [m, n_in] with leading dimension ldx.
    bool amx_run(Workspace& ws, const uint16_t* x, int64_t m, int64_t ldx, detail::AmxGemmOut out,
                 float* y, int64_t ldy, uint16_t* y16, int64_t ldy16,
                 const RowsDone* done = nullptr, GluAct glu_act = GluAct::kSilu) const {
        const detail::AmxGemmArgs a{.x = x,
                                    .ldx = ldx,
                                    .m = m,
                                    .w = amx_w.get(),
                                    .n_in = n_in,
                                    .n_out = n_out,
                                    .bias = amx_bias.empty() ? nullptr : amx_bias.data(),
                                    .out = out,
                                    .y = y,
                                    .ldy = ldy,
                                    .y16 = y16,
                                    .ldy16 = ldy16,
                                    .glu_act = glu_act,
                                    .rows_done = done != nullptr ? done->fn : nullptr,
                                    .rows_ctx = done != nullptr ? done->ctx : nullptr,
                                    .ws = &ws};
        return detail::amx_gemm(a, ctx.n_threads);
    }

    bool amx_forward_bf16(Workspace& ws, const uint16_t* x, int64_t m, float* y, int64_t ldx,
                          int64_t ldy, bool accumulate, const RowsDone* done) const {
        using detail::AmxGemmOut;
        if (amx_col_row.empty()) {
            return amx_run(ws, x, m, ldx, accumulate ? AmxGemmOut::kAccumulate : AmxGemmOut::kStore,
                           y, ldy, nullptr, 0, done);
        }
        // kSwiGlu layout asked for plain outputs: run in packed column order, then put each
        // column back where W had it.
        float* tmp = grow(ws.caller<Scratch>().dst_f32, m * n_out);
        amx_run(ws, x, m, ldx, AmxGemmOut::kStore, tmp, n_out, nullptr, 0);
        for (int64_t r = 0; r < m; ++r) {
            const float* src = tmp + r * n_out;
            float* dst = y + r * ldy;
            for (int64_t j = 0; j < n_out; ++j) {
                const int64_t c = amx_col_row[j];
                dst[c] = accumulate ? dst[c] + src[j] : src[j];
            }
        }
        return false;  // `done` not called: these rows are final only after the loop above
    }

    // Runs the primitive for m rows: src dense [m, n_in], dst dense [m, n_out] (sum post-op
    // when accumulate). Called with `mu` held.
    void run_primitive(const void* src_ptr, int64_t m, float* dst_ptr, bool accumulate) {
        Shape& s = shape_for(m, accumulate);
        s.src.set_data_handle(const_cast<void*>(src_ptr));
        s.dst.set_data_handle(dst_ptr);
        const dnnl_status_t st =
            dnnl_primitive_execute(s.prim.get(), stream.get(), s.n_args, s.args.data());
        LAZYLLM_CHECK_MSG(st == dnnl_success, "oneDNN matmul execute failed");
        stream.wait();
    }

    // src: dense [m, n_in] in the primitive's data type. Called with `mu` held.
    void execute(const void* src_ptr, int64_t m, float* y, int64_t ldy, bool accumulate,
                 Scratch& scratch) {
        const bool dense_dst = ldy == n_out;
        float* dst_ptr = dense_dst ? y : grow(scratch.dst_f32, m * n_out);  // [m, n_out]

        // A ragged m runs as an aligned block plus a tail (kRowAlign). One primitive at a
        // time: shape_for() may clear the cache, which would free an earlier Shape.
        const int64_t tail = m > kRowAlign ? m % kRowAlign : 0;
        const int64_t m_main = m - tail;
        run_primitive(src_ptr, m_main, dst_ptr, accumulate && dense_dst);
        if (tail > 0) {
            const size_t src_row_bytes = n_in * (bf16 ? sizeof(uint16_t) : sizeof(float));
            run_primitive(static_cast<const char*>(src_ptr) + m_main * src_row_bytes, tail,
                          dst_ptr + m_main * n_out, accumulate && dense_dst);
        }

        if (!dense_dst) {
            for (int64_t r = 0; r < m; ++r) {
                const float* src_row = dst_ptr + r * n_out;
                float* y_row = y + r * ldy;
                if (accumulate) {
                    for (int64_t c = 0; c < n_out; ++c) y_row[c] += src_row[c];
                } else {
                    std::memcpy(y_row, src_row, n_out * sizeof(float));
                }
            }
        }
    }
};

namespace {

// 64-byte aligned storage for `elems` packed weights of an [n_out, n_in] matrix.
template <typename T>
Status alloc_packed(std::unique_ptr<T, FreeDeleter>& dst, size_t elems, int64_t n_out,
                    int64_t n_in) {
    const size_t bytes = elems * sizeof(T);
    dst.reset(static_cast<T*>(alloc_weights(bytes, 64)));
    if (!dst) {
        return make_error(ErrorCode::kInternal,
                          "PackedLinear: out of memory packing [n_out={}, n_in={}] ({} bytes)",
                          n_out, n_in, bytes);
    }
    return {};
}

}  // namespace

bool cap_onednn_isa(Isa isa) {
    if (isa == best_isa(detect_cpu_features())) return true;  // nothing to cap
    dnnl_cpu_isa_t cap = dnnl_cpu_isa_sse41;
    switch (isa) {
        case Isa::kAmx:
            return true;
        case Isa::kAvx512:
            cap = dnnl_cpu_isa_avx512_core_bf16;
            break;
        case Isa::kAvx2:
            cap = dnnl_cpu_isa_avx2;
            break;
        case Isa::kRef:
            break;
    }
    return dnnl_set_max_cpu_isa(cap) == dnnl_success && dnnl_get_effective_cpu_isa() <= cap;
}

Result<PackedLinear> PackedLinear::create(const KernelContext& ctx, const float* w, int64_t n_out,
                                          int64_t n_in, const float* bias, GemmPrecision precision,
                                          GemmLayout layout) {
    if (w == nullptr || n_out <= 0 || n_in <= 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          "PackedLinear: bad weight [n_out={}, n_in={}] (null={})", n_out, n_in,
                          w == nullptr);
    }
    if (precision == GemmPrecision::kBf16 && !cpu_has_avx512_bf16()) {
        return make_error(ErrorCode::kUnsupported,
                          "PackedLinear: bf16 GEMM requested but this CPU has no AVX-512-BF16 "
                          "([n_out={}, n_in={}])",
                          n_out, n_in);
    }
    const bool use_bf16 = gemm_uses_bf16(ctx, precision);

    if (layout == GemmLayout::kSwiGlu && n_out % 2 != 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          "PackedLinear: GLU layout needs [gate; up] rows, got n_out={}", n_out);
    }
    // Our kernels on every GEMM they fit, where they prefill faster end to end than oneDNN,
    // unless the context asks for oneDNN alone.
    const bool own_allowed = ctx.gemm == GemmKernels::kOwn;

    PackedLinear out;
    out.impl_ = std::make_unique<Impl>();
    Impl& im = *out.impl_;
    im.n_in = n_in;
    im.n_out = n_out;
    im.bf16 = use_bf16;
    im.ctx = KernelContext{ctx.isa, ctx.n_threads > 0 ? ctx.n_threads : omp_get_max_threads(),
                           nullptr, ctx.gemm};
    im.layout = layout;

    if (use_bf16 && ctx.isa >= Isa::kAmx && own_allowed && detail::amx_gemm_usable(n_in, n_out)) {
        im.backend = GemmBackend::kAmx;
        LAZYLLM_TRY(
            alloc_packed(im.amx_w, detail::amx_gemm_packed_elems(n_in, n_out), n_out, n_in));
        if (layout == GemmLayout::kSwiGlu) {
            im.amx_col_row.resize(n_out);
            detail::amx_gemm_swiglu_order(n_out / 2, im.amx_col_row.data());
        }
        const int64_t* order = im.amx_col_row.empty() ? nullptr : im.amx_col_row.data();
        detail::amx_gemm_pack(w, n_in, n_out, order, im.amx_w.get());
        if (bias != nullptr) {
            im.amx_bias.resize(n_out);
            for (int64_t j = 0; j < n_out; ++j) im.amx_bias[j] = bias[order ? order[j] : j];
        }
        return out;
    }

    // fp32 on AVX2 (also when LAZYLLM_ISA=avx2 on an AVX-512 CPU). oneDNN 2.6.3's gemm:jit
    // sgemm has a slow spot at m = 64 to 256 on the model's shapes, where this kernel keeps
    // its rate (bench/gemm_bench.cpp stage_rows).
    // The avx512 fp32 path stays on oneDNN.
    if (!use_bf16 && ctx.isa == Isa::kAvx2 && own_allowed &&
        isa_supported(Isa::kAvx2, detect_cpu_features())) {
        im.backend = GemmBackend::kAvx2;
        LAZYLLM_TRY(
            alloc_packed(im.avx2_w, detail::avx2_gemm_packed_elems(n_in, n_out), n_out, n_in));
        detail::avx2_gemm_pack(w, n_in, n_out, im.avx2_w.get());
        if (bias != nullptr) im.avx2_bias.assign(bias, bias + n_out);
        return out;
    }

    if (bias != nullptr) im.bias.assign(bias, bias + n_out);
    OmpThreadScope threads(im.ctx.n_threads);
    try {
        im.engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
        im.stream = dnnl::stream(im.engine);
        const memory::desc any_md({n_in, n_out}, im.src_dt(), Tag::any);
        im.weights_md = im.make_pd(kPackRows, any_md, false).weights_desc();
        // W is [n_out, n_in] row-major = the [K = n_in, N = n_out] matrix in "ba" order.
        const memory::desc user_md({n_in, n_out}, Dt::f32, Tag::ba);
        memory user(user_md, im.engine, const_cast<float*>(w));
        im.weights = memory(im.weights_md, im.engine);
        dnnl::reorder(user, im.weights).execute(im.stream, user, im.weights);
        if (!im.bias.empty()) {
            im.bias_mem =
                memory(memory::desc({1, n_out}, Dt::f32, Tag::ab), im.engine, im.bias.data());
        }
        im.stream.wait();
    } catch (const dnnl::error& e) {
        return make_error(ErrorCode::kInternal,
                          "PackedLinear: oneDNN {} matmul setup for [n_out={}, n_in={}]: {}",
                          use_bf16 ? "bf16" : "f32", n_out, n_in, e.what());
    }
    return out;
}

PackedLinear::PackedLinear() = default;
PackedLinear::PackedLinear(PackedLinear&&) noexcept = default;
PackedLinear& PackedLinear::operator=(PackedLinear&&) noexcept = default;
PackedLinear::~PackedLinear() = default;

int64_t PackedLinear::n_in() const { return impl_ ? impl_->n_in : 0; }
int64_t PackedLinear::n_out() const { return impl_ ? impl_->n_out : 0; }
bool PackedLinear::is_bf16() const { return impl_ && impl_->bf16; }
GemmBackend PackedLinear::backend() const { return impl_ ? impl_->backend : GemmBackend::kOneDnn; }
size_t PackedLinear::weight_bytes() const {
    if (!impl_) return 0;
    if (impl_->backend == GemmBackend::kAmx) {
        return detail::amx_gemm_packed_elems(impl_->n_in, impl_->n_out) * sizeof(uint16_t);
    }
    if (impl_->backend == GemmBackend::kAvx2) {
        return detail::avx2_gemm_packed_elems(impl_->n_in, impl_->n_out) * sizeof(float);
    }
    return impl_->weights_md.get_size();
}

bool PackedLinear::forward_bf16(const uint16_t* x, int64_t m, float* y, int64_t ldx, int64_t ldy,
                                bool accumulate, const RowsDone* done, Workspace* ws) const {
    LAZYLLM_CHECK_MSG(impl_ != nullptr, "PackedLinear::forward_bf16 on an empty PackedLinear");
    LAZYLLM_CHECK_MSG(impl_->bf16, "PackedLinear::forward_bf16 on an fp32 PackedLinear");
    if (m <= 0) return false;
    impl_->resolve_ld(ldx, ldy);
    Workspace local;
    Workspace& w = ws != nullptr ? *ws : local;
    if (impl_->backend == GemmBackend::kAmx) {
        return impl_->amx_forward_bf16(w, x, m, y, ldx, ldy, accumulate, done);
    }
    impl_->forward_bf16(x, m, y, ldx, ldy, accumulate, w);
    return false;
}

void PackedLinear::forward_glu_bf16(GluAct act, const uint16_t* x, int64_t m, uint16_t* out,
                                    int64_t ldx, int64_t ld_out, Workspace* ws) const {
    LAZYLLM_CHECK_MSG(impl_ != nullptr, "PackedLinear::forward_glu_bf16 on an empty PackedLinear");
    LAZYLLM_CHECK_MSG(impl_->bf16, "PackedLinear::forward_glu_bf16 on an fp32 PackedLinear");
    LAZYLLM_CHECK_MSG(impl_->layout == GemmLayout::kSwiGlu,
                      "PackedLinear::forward_glu_bf16 needs GemmLayout::kSwiGlu");
    if (m <= 0) return;
    const int64_t n_ff = impl_->n_out / 2;
    if (ldx == 0) ldx = impl_->n_in;
    if (ld_out == 0) ld_out = n_ff;
    LAZYLLM_CHECK(ldx >= impl_->n_in && ld_out >= n_ff);
    Workspace local;
    Workspace& w = ws != nullptr ? *ws : local;
    if (impl_->backend == GemmBackend::kAmx) {
        impl_->amx_run(w, x, m, ldx, detail::AmxGemmOut::kGlu, nullptr, 0, out, ld_out, nullptr,
                       act);
        return;
    }
    const int64_t chunk = std::min<int64_t>(m, kSwiGluChunkRows);
    float* gate_up = grow(w.caller<Scratch>().gate_up, chunk * impl_->n_out);
    for (int64_t r0 = 0; r0 < m; r0 += chunk) {
        const int64_t rows = std::min(chunk, m - r0);
        forward_bf16(x + r0 * ldx, rows, gate_up, ldx, impl_->n_out, false, nullptr, &w);
        if (ld_out == n_ff) {
            glu_bf16(impl_->ctx, act, gate_up, out + r0 * ld_out, rows, n_ff);
            continue;
        }
        for (int64_t r = 0; r < rows; ++r) {
            glu_bf16(impl_->ctx, act, gate_up + r * impl_->n_out, out + (r0 + r) * ld_out, 1, n_ff);
        }
    }
}

void PackedLinear::forward(const float* x, int64_t m, float* y, int64_t ldx, int64_t ldy,
                           bool accumulate, Workspace* ws) const {
    LAZYLLM_CHECK_MSG(impl_ != nullptr, "PackedLinear::forward on an empty PackedLinear");
    if (m <= 0) return;
    impl_->resolve_ld(ldx, ldy);
    Workspace local;
    Workspace& w = ws != nullptr ? *ws : local;
    if (impl_->backend == GemmBackend::kAmx) {
        uint16_t* x16 = grow(w.caller<Scratch>().src_bf16, m * impl_->n_in);
        impl_->convert_src(x, m, ldx, x16);
        impl_->amx_forward_bf16(w, x16, m, y, impl_->n_in, ldy, accumulate, nullptr);
        return;
    }
    if (impl_->backend == GemmBackend::kAvx2) {
        const Impl& im = *impl_;
        const detail::Avx2GemmArgs a{.x = x,
                                     .ldx = ldx,
                                     .m = m,
                                     .w = im.avx2_w.get(),
                                     .n_in = im.n_in,
                                     .n_out = im.n_out,
                                     .bias = im.avx2_bias.empty() ? nullptr : im.avx2_bias.data(),
                                     .accumulate = accumulate,
                                     .y = y,
                                     .ldy = ldy};
        detail::avx2_gemm(a, im.ctx.n_threads);  // no state: no lock
        return;
    }
    impl_->forward(x, m, y, ldx, ldy, accumulate, w);
}

namespace ref {

void linear(const float* x, const float* w, const float* bias, float* y, int64_t m, int64_t n_out,
            int64_t n_in) {
    for (int64_t r = 0; r < m; ++r) {
        for (int64_t o = 0; o < n_out; ++o) {
            float acc = 0.0f;
            for (int64_t i = 0; i < n_in; ++i) acc += x[r * n_in + i] * w[o * n_in + i];
            y[r * n_out + o] = acc + (bias != nullptr ? bias[o] : 0.0f);
        }
    }
}

}  // namespace ref

}  // namespace lazyllm::kernels
