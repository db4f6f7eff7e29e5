// QuantLinear: validation, repacking GGML blocks into the interleaved layout of qgemv_isa.h
// (block by block through qgemv_pack.h), and dispatch (AVX-512 VNNI, AVX2 or the scalar
// reference of qgemv_ref.cpp, OpenMP over row groups).
#include "kernels/qgemv.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/check.h"
#include "base/scratch.h"
#include "kernels/amx_tiles.h"
#include "kernels/gemm_amx.h"
#include "kernels/qgemv_isa.h"
#include "kernels/qgemv_outliers.h"
#include "kernels/qgemv_pack.h"
#include "kernels/quant_blocks.h"
#include "kernels/workspace.h"

namespace lazyllm::kernels {

using qgemv::kBlock;
using qgemv::kChunkBytes;
using qgemv::kGroupRows;
using qgemv::UnpackedBlock;

namespace {

// Work (groups x blocks x activation rows) below which a thread is not worth waking (a
// parallel region costs ~1 us; a coarse bound, not tuned finer); see forward().
constexpr int64_t kMinWorkPerThread = 16 * 18;
// Rows from which forward() splits the activations' int8 rounding (and the outlier terms) over
// its threads too. Below it the rows are rounded before the parallel region: a barrier and
// each thread reading rows the other rounded cost more than the rounding (BM_QuantLinear, two
// threads, Q4_1 at the default model's shapes, AMX Xeon: 16 rows up to 1.4x faster on VNNI,
// 1.2x on AVX2; about even at 32; from 48 rows splitting is up to 1.14x faster).
constexpr int64_t kSplitQuantizeRows = 32;

int resolve_threads(const KernelContext& ctx) {
    return ctx.n_threads > 0 ? ctx.n_threads : omp_get_max_threads();
}

// Activation scratch, a Workspace part (as PackedLinear's): bounded by the largest m x n_in
// seen, shared by every layer.
struct Scratch {
    std::vector<int8_t> q;                 // [m, n_in]
    std::vector<float> d, s;               // [m, n_blocks]
    std::vector<int32_t> corr, half_sums;  // [m, n_blocks]
    ScratchVector<uint8_t> unpacked;       // [threads, qgemv::unpack_scratch_bytes]
    ScratchVector<uint16_t> xpack;         // AMX: x in A-tile order (amx_pack_rows_f32)
    ScratchVector<uint16_t> panels;        // AMX: [threads, a chunk of bf16 panels]
    qgemv::OutlierScratch outliers;
};

}  // namespace

struct QuantLinear::Impl {
    qgemv::Weights w;
    std::unique_ptr<uint8_t, FreeDeleter> storage;  // w.data: [n_groups][group_bytes]
    std::vector<float> bias;                        // [n_groups * 16] (zero padded) or empty
    GgmlType type = GgmlType::Q8_0;
    int32_t offset = 0;
    int n_threads = 1;
    Isa isa = Isa::kRef;  // qgemv_isa(ctx) at create()
    // Prompt rows on AMX bf16 tiles over weights dequantized a chunk at a time (forward_tiles):
    // has_tile_path() at create().
    bool tiles = false;
    // Output rows [first, first + layer.n_out()) stored in another format (create(): parts of
    // more than one type); each layer runs its own forward() into its columns of y.
    std::vector<std::pair<int64_t, QuantLinear>> tail;
    qgemv::OutlierColumns outlier_columns;  // forward(): of the outlier channels

    size_t storage_bytes() const { return w.group_bytes * static_cast<size_t>(w.n_groups); }

    // The setup shared by create() and create_from_f32(), which validate their own input and
    // differ only in where the blocks come from (see pack()). `type` has a FormatSpec.
    template <typename Source>
    static Result<QuantLinear> build(const KernelContext& ctx, GgmlType type, int64_t n_out,
                                     int64_t n_in, const float* bias, Source&& source) {
        qgemv::FormatSpec spec;
        LAZYLLM_CHECK(qgemv::format_of(type, &spec));
        QuantLinear out;
        out.impl_ = std::make_unique<Impl>();
        Impl& im = *out.impl_;
        im.type = type;
        im.n_threads = resolve_threads(ctx);
        im.isa = qgemv::qgemv_isa(ctx);
        im.tiles = has_tile_path(ctx);
        LAZYLLM_TRY(im.pack(n_out, n_in, spec, source));
        im.set_bias(bias);
        return out;
    }

    // Allocates the packed layout and fills every group from `source(row, blks)` (the row's
    // n_blocks blocks), in parallel over groups (n_threads; a row on one thread). Padding rows
    // get zero quants and scales (they produce 0).
    template <typename Source>
    Status pack(int64_t n_out, int64_t n_in, const qgemv::FormatSpec& spec, Source&& source) {
        w.n_in = n_in;
        w.n_out = n_out;
        w.n_blocks = n_in / kBlock;
        w.n_groups = (n_out + kGroupRows - 1) / kGroupRows;
        w.bits = spec.bits;
        w.scales_kind = spec.scales;
        w.group_bytes = qgemv::group_bytes_for(spec.bits, spec.scales, w.n_blocks);
        offset = spec.offset;
        const size_t bytes = storage_bytes();
        storage.reset(static_cast<uint8_t*>(alloc_weights(bytes, kChunkBytes)));
        if (!storage) {
            return make_error(ErrorCode::kInternal,
                              "QuantLinear: cannot allocate {} bytes for [n_out={}, n_in={}]",
                              bytes, n_out, n_in);
        }
        // Every lane of a real row is written below; only the last group's padding rows
        // (which must produce 0) are zeroed first.
        std::memset(storage.get() + (w.n_groups - 1) * w.group_bytes, 0, w.group_bytes);
        w.data = storage.get();
        const qgemv::Weights& cw = w;
#pragma omp parallel num_threads(n_threads)
        {
            std::vector<UnpackedBlock> blks(static_cast<size_t>(cw.n_blocks));
#pragma omp for schedule(static)
            for (int64_t g = 0; g < cw.n_groups; ++g) {
                uint8_t* group = storage.get() + static_cast<size_t>(g) * cw.group_bytes;
                for (int lane = 0; lane < kGroupRows; ++lane) {
                    const int64_t row = g * kGroupRows + lane;
                    if (row >= n_out) break;
                    source(row, blks.data());
                    qgemv::store_row(cw, group, lane, blks.data());
                }
            }
        }
        return {};
    }

    // Rounds rows [r0, r1) of x to int8 blocks (with their outlier channels where `rows`), and
    // for half-scale weights (Q3_K, Q6_K) their half sums into hs.
    void quantize(const float* x, int64_t m, int64_t ldx, int64_t r0, int64_t r1,
                  const qgemv::ActivationBuffers& buf, const qgemv::RowOutliers* rows,
                  int32_t* hs) const {
        if (r0 >= r1) return;
        const int32_t o = qgemv::corr_offset(w.bits, offset);
        simd_or_ref(
            isa, [&] { qgemv::ref::quantize_rows(x, m, r0, r1, ldx, w.n_in, o, buf, rows); },
            [&]<Isa I>() { qgemv::quantize_rows<I>(x, m, r0, r1, ldx, w.n_in, o, buf, rows); });
        if (hs == nullptr) return;
        for (int64_t b = 0; b < w.n_blocks; ++b) {  // block-major: rows [r0, r1) of each block
            qgemv::ref::half_sums(buf.q + (b * m + r0) * kBlock, r1 - r0, 1, hs + b * m + r0);
        }
    }

    // Output groups [g0, g1) of every row of a; scratch: the thread's unpack_scratch_bytes(w, isa)
    // where the kernels unpack (uses_unpacked), else nullptr.
    void gemv(const qgemv::Activations& a, int64_t g0, int64_t g1, float* y, int64_t ldy,
              bool accumulate, uint8_t* scratch) const {
        const float* b = bias.empty() ? nullptr : bias.data();
        simd_or_ref(
            isa, [&] { qgemv::ref::gemv(w, a, a.m, g0, g1, b, y, ldy, accumulate); },
            [&]<Isa I>() { qgemv::gemv<I>(w, a, a.m, g0, g1, b, y, ldy, accumulate, scratch); });
    }

    // y (+)= x W^T (+ bias) for prompt rows on AMX: x rounded to bf16 once, then each
    // thread takes its share of the 32-column panels (two groups each) a chunk at a time
    // (about pass_chunk_bytes() of bf16), dequantizes the chunk (dequant_bf16_panels) and runs
    // every row over it (amx_gemm_panels); the chunk stays in L2 while the rows stream by.
    // The products are the bf16 GEMM's: x and the weights rounded to bf16, fp32 sums.
    void forward_tiles(const float* x, int64_t m, int64_t ldx, float* y, int64_t ldy,
                       bool accumulate, Workspace& space, Scratch& s) const {
        const int64_t n_micro = (m + detail::kAmxGemmRows - 1) / detail::kAmxGemmRows;
        const int64_t n_panels = (w.n_groups + 1) / 2;
        const int64_t panel_elems = w.n_in * detail::kAmxGemmPanel;
        const int64_t chunk =
            std::clamp<int64_t>(qgemv::pass_chunk_bytes() / (2 * panel_elems), 1, n_panels);
        const int nt = static_cast<int>(std::min<int64_t>(n_threads, n_panels));
        const int64_t tmp_elems = qgemv::unpacked_group_bytes(w, Isa::kAvx512) / 2;
        const int64_t per_thread = chunk * panel_elems + tmp_elems;
        uint16_t* xpack =
            grow(s.xpack, static_cast<int64_t>(detail::amx_packed_rows_elems(m, w.n_in)));
        uint16_t* panels = grow(s.panels, per_thread * nt);
        const detail::AmxGemmArgs args{
            .m = m,
            .n_in = w.n_in,
            .n_out = w.n_out,
            .bias = bias.empty() ? nullptr : bias.data(),
            .out = accumulate ? detail::AmxGemmOut::kAccumulate : detail::AmxGemmOut::kStore,
            .y = y,
            .ldy = ldy,
            .ws = &space};
        space.workers(nt);
#pragma omp parallel num_threads(nt)
        {
            const int t = omp_get_thread_num();
            detail::amx_pack_rows_f32(x, ldx, m, w.n_in, n_micro * t / nt, n_micro * (t + 1) / nt,
                                      xpack);
#pragma omp barrier
            uint16_t* mine = panels + per_thread * t;
            auto* tmp = reinterpret_cast<uint8_t*>(mine + chunk * panel_elems);
            const int64_t p1 = n_panels * (t + 1) / nt;
            for (int64_t p = n_panels * t / nt; p < p1; p += chunk) {
                const int64_t pe = std::min(p1, p + chunk);
                qgemv::dequant_bf16_panels(w, offset, 2 * p, std::min(w.n_groups, 2 * pe), mine,
                                           tmp);
                detail::amx_gemm_panels(args, xpack, mine, p, pe, t);
            }
        }
    }

    // Do m rows take the kernels' unpacked prompt passes (gemv_passes of qgemv_vnni.cpp and
    // qgemv_avx2.cpp)?
    bool uses_unpacked(int64_t m) const {
        return qgemv::unpacks_prompt(isa, w.bits, w.scales_kind, m);
    }

    void set_bias(const float* b) {
        if (b == nullptr) return;
        bias.assign(static_cast<size_t>(w.n_groups * kGroupRows), 0.0f);
        std::copy(b, b + w.n_out, bias.begin());
    }
};

bool QuantLinear::has_fast_path(const KernelContext& ctx) {
    return qgemv::qgemv_isa(ctx) != Isa::kRef;
}

bool QuantLinear::has_vnni_path(const KernelContext& ctx) {
    return qgemv::qgemv_isa(ctx) == Isa::kAvx512;
}

bool QuantLinear::has_tile_path(const KernelContext& ctx) {
    return has_vnni_path(ctx) && ctx.isa >= Isa::kAmx && detail::amx_permission();
}

bool QuantLinear::tile_rows(QuantRows rows, int64_t m) {
    return rows == QuantRows::kPromptTiles || (rows != QuantRows::kDecode && m >= kTileMinRows);
}

bool QuantLinear::supports(GgmlType type) {
    qgemv::FormatSpec spec;
    return qgemv::format_of(type, &spec);
}

Result<QuantLinear> QuantLinear::create(const KernelContext& ctx, std::span<const Part> parts,
                                        int64_t n_in, const float* bias) {
    if (parts.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "QuantLinear: no weight parts");
    }
    const GgmlType type = parts[0].type;
    for (const Part& p : parts) {
        if (!supports(p.type)) {
            return make_error(
                ErrorCode::kUnsupported,
                "QuantLinear: weight type {} is not taken directly (supported: "
                "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, IQ4_NL; use "
                "create_from_f32)",
                ggml_type_name(p.type));
        }
    }
    // Parts of another type than the first (a fused q|k|v with Q6_K v rows) form the layers
    // of Impl::tail, each made the same way.
    const auto run_end =
        std::find_if(parts.begin(), parts.end(), [type](const Part& p) { return p.type != type; });
    const std::span<const Part> tail = parts.subspan(run_end - parts.begin());
    parts = parts.first(run_end - parts.begin());
    int64_t n_out = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
        const Part& p = parts[i];
        if (p.data == nullptr || p.n_out <= 0) {
            return make_error(ErrorCode::kInvalidArgument,
                              "QuantLinear: part {} ({}) has bad weight [n_out={}, n_in={}] "
                              "(null={})",
                              i, ggml_type_name(type), p.n_out, n_in, p.data == nullptr);
        }
        n_out += p.n_out;
    }
    if (n_in <= 0 || n_in % kBlock != 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          "QuantLinear: {} weight [n_out={}, n_in={}]: n_in is not a positive "
                          "multiple of {}",
                          ggml_type_name(type), n_out, n_in, kBlock);
    }

    // Row -> (part, row within part), by a running table of where each part starts.
    std::vector<int64_t> part_start(parts.size() + 1, 0);
    for (size_t i = 0; i < parts.size(); ++i) part_start[i + 1] = part_start[i] + parts[i].n_out;
    // Block b of 32 inputs lies in GGML block b / per of a row (per = 8 for the K-quants'
    // super-blocks of 256, else 1), as its sub-block b % per.
    const quant::BlockShape shape = quant::block_shape(type);
    const int64_t per = shape.elems / kBlock;
    if (n_in % shape.elems != 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          "QuantLinear: {} weight [n_out={}, n_in={}]: n_in is not a multiple of "
                          "the block size {}",
                          ggml_type_name(type), n_out, n_in, shape.elems);
    }
    const int64_t row_blocks = n_in / shape.elems;
    const auto source = [&](int64_t row, UnpackedBlock* blks) {
        const size_t p =
            std::upper_bound(part_start.begin(), part_start.end(), row) - part_start.begin() - 1;
        const int64_t r = row - part_start[p];
        qgemv::unpack_row(type, parts[p].data + r * row_blocks * shape.bytes, row_blocks * per,
                          blks);
    };
    Result<QuantLinear> out = Impl::build(ctx, type, n_out, n_in, bias, source);
    if (!out.ok() || tail.empty()) return out;
    Result<QuantLinear> rest = create(ctx, tail, n_in, bias != nullptr ? bias + n_out : nullptr);
    if (!rest.ok()) return rest.error();
    out->impl_->tail.emplace_back(n_out, std::move(rest).value());
    return out;
}

Result<QuantLinear> QuantLinear::create_from_f32(const KernelContext& ctx, const float* w,
                                                 int64_t n_out, int64_t n_in, const float* bias) {
    if (w == nullptr || n_out <= 0 || n_in <= 0 || n_in % kBlock != 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          "QuantLinear: bad fp32 weight [n_out={}, n_in={}] (null={}; n_in must "
                          "be a positive multiple of {})",
                          n_out, n_in, w == nullptr, kBlock);
    }
    const auto source = [&](int64_t row, UnpackedBlock* blks) {
        for (int64_t b = 0; b < n_in / kBlock; ++b) {
            qgemv::quantize_block_q8_0(w + row * n_in + b * kBlock, blks + b);
        }
    };
    return Impl::build(ctx, GgmlType::Q8_0, n_out, n_in, bias, source);
}

Result<QuantLinear> QuantLinear::create_from_rows(const KernelContext& ctx, int64_t n_out,
                                                  int64_t n_in, const RowSource& row,
                                                  const float* bias) {
    if (!row || n_out <= 0 || n_in <= 0 || n_in % kBlock != 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          "QuantLinear: bad row source [n_out={}, n_in={}] (n_in must be a "
                          "positive multiple of {})",
                          n_out, n_in, kBlock);
    }
    // One row buffer per thread of pack(), which takes a row on one thread.
    const int n_threads = resolve_threads(ctx);
    std::vector<float> rows(static_cast<size_t>(n_threads * n_in));
    std::atomic<bool> failed{false};
    Status first_error;
    std::mutex error_mutex;
    const auto source = [&](int64_t r, UnpackedBlock* blks) {
        float* buf = rows.data() + static_cast<size_t>(omp_get_thread_num()) * n_in;
        Status st = failed.load(std::memory_order_relaxed) ? Status{} : row(r, buf);
        if (!st.ok()) {
            const std::lock_guard<std::mutex> lock(error_mutex);
            if (!failed.exchange(true)) first_error = std::move(st);
            std::fill(buf, buf + n_in, 0.0f);
        }
        for (int64_t b = 0; b < n_in / kBlock; ++b) {
            qgemv::quantize_block_q8_0(buf + b * kBlock, blks + b);
        }
    };
    Result<QuantLinear> out = Impl::build(ctx, GgmlType::Q8_0, n_out, n_in, bias, source);
    if (failed.load()) return first_error.error();
    return out;
}

QuantLinear::QuantLinear() = default;
QuantLinear::QuantLinear(QuantLinear&&) noexcept = default;
QuantLinear& QuantLinear::operator=(QuantLinear&&) noexcept = default;
QuantLinear::~QuantLinear() = default;

int64_t QuantLinear::n_in() const { return impl_ ? impl_->w.n_in : 0; }
int64_t QuantLinear::n_out() const {
    if (!impl_) return 0;
    int64_t n = impl_->w.n_out;
    for (const auto& [first, layer] : impl_->tail) n += layer.n_out();
    return n;
}
size_t QuantLinear::weight_bytes() const {
    if (!impl_) return 0;
    size_t bytes = impl_->storage_bytes();
    for (const auto& [first, layer] : impl_->tail) bytes += layer.weight_bytes();
    return bytes;
}
GgmlType QuantLinear::type() const { return impl_ ? impl_->type : GgmlType::Q8_0; }
bool QuantLinear::uses_fast_path() const { return impl_ && impl_->isa != Isa::kRef; }

void QuantLinear::forward(const float* x, int64_t m, float* y, int64_t ldx, int64_t ldy,
                          bool accumulate, Workspace* ws, QuantRows rows_kind) const {
    LAZYLLM_CHECK(impl_ != nullptr);
    const Impl& im = *impl_;
    const qgemv::Weights& w = im.w;
    if (ldx == 0) ldx = w.n_in;
    if (ldy == 0) ldy = n_out();
    LAZYLLM_CHECK(ldx >= w.n_in && ldy >= n_out() && m >= 0);
    if (m == 0) return;
    Workspace local;
    Workspace& space = ws != nullptr ? *ws : local;
    for (const auto& [first, layer] : im.tail) {
        layer.forward(x, m, y + first, ldx, ldy, accumulate, &space, rows_kind);
    }

    Scratch& s = space.caller<Scratch>();
    if (im.tiles && tile_rows(rows_kind, m)) {
        im.forward_tiles(x, m, ldx, y, ldy, accumulate, space, s);
        return;
    }
    const bool outliers = rows_kind == QuantRows::kPromptOutliers;
    qgemv::OutlierScratch& o = s.outliers;
    const qgemv::RowOutliers rows = outliers ? o.rows(m) : qgemv::RowOutliers{};
    const int64_t n_qblocks = m * w.n_blocks;
    const qgemv::ActivationBuffers buf{grow(s.q, m * w.n_in), grow(s.d, n_qblocks),
                                       grow(s.s, n_qblocks), grow(s.corr, n_qblocks)};
    int32_t* hs = qgemv::half_scales(w.bits) ? grow(s.half_sums, n_qblocks) : nullptr;
    const auto quantize = [&](int64_t r0, int64_t r1) {
        im.quantize(x, m, ldx, r0, r1, buf, outliers ? &rows : nullptr, hs);
    };
    // The rows' outlier channels and their columns, once every row is quantized.
    const auto gather = [&] {
        o.collect(m, w.n_in);
        if (!o.channels.empty()) im.outlier_columns.gather(w, im.offset, o);
    };
    const auto terms = [&](int64_t r0, int64_t r1) {
        qgemv::add_outlier_terms(im.isa, w.n_out, o, r0, r1, y, ldy);
    };
    const qgemv::Activations a{m, buf.q, buf.d, buf.s, buf.corr, hs};
    const size_t unpack_bytes = im.uses_unpacked(m) ? qgemv::unpack_scratch_bytes(w, im.isa) : 0;
    uint8_t* unpacked = unpack_bytes == 0
                            ? nullptr
                            : grow(s.unpacked, static_cast<int64_t>(unpack_bytes) * im.n_threads);
    // Thread t of the parallel region (0 outside it) runs output groups [g0, g1).
    const auto run = [&](int64_t g0, int64_t g1, int64_t t) {
        im.gemv(a, g0, g1, y, ldy, accumulate,
                unpacked == nullptr ? nullptr : unpacked + t * unpack_bytes);
    };
    // A fork/join costs about a microsecond; a thread is only woken for at least
    // kMinWorkPerThread group-block-rows (~1.5 us at ~19 cycles each).
    const int64_t work = w.n_groups * w.n_blocks * m;
    const int n_threads = static_cast<int>(std::clamp<int64_t>(
        std::min<int64_t>(work / kMinWorkPerThread, w.n_groups), 1, im.n_threads));
    // Below kSplitQuantizeRows rows (decode steps) rounding x, and the outlier terms, take
    // less than a barrier: they run on the calling thread, around a parallel region for the
    // GEMV alone.
    if (n_threads <= 1 || m < kSplitQuantizeRows) {
        quantize(0, m);
        if (outliers) gather();
        if (n_threads <= 1) {
            run(0, w.n_groups, 0);
        } else {
#pragma omp parallel num_threads(n_threads)
            {
                const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
                run(w.n_groups * t / nt, w.n_groups * (t + 1) / nt, t);
            }
        }
        if (outliers) terms(0, m);
        return;
    }
    bool any = false;  // some row has outlier channels
#pragma omp parallel num_threads(n_threads)
    {
        const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
        quantize(m * t / nt, m * (t + 1) / nt);
#pragma omp barrier
        if (outliers) {
#pragma omp single
            {
                gather();
                any = !o.channels.empty();
            }  // implied barrier
        }
        run(w.n_groups * t / nt, w.n_groups * (t + 1) / nt, t);
        if (any) {  // the same for every thread
#pragma omp barrier
            terms(m * t / nt, m * (t + 1) / nt);
        }
    }
}

float QuantLinear::weight(int64_t n, int64_t c) const {
    LAZYLLM_CHECK(impl_ != nullptr && n >= 0 && n < n_out() && c >= 0 && c < n_in());
    for (const auto& [first, layer] : impl_->tail) {
        if (n >= first && n < first + layer.n_out()) return layer.weight(n - first, c);
    }
    return qgemv::ref::weight_value(impl_->w, impl_->offset, n, c);
}

Isa qgemv::qgemv_isa(const KernelContext& ctx) {
    const CpuFeatures f = detect_cpu_features();
    if (ctx.isa >= Isa::kAvx512 && isa_supported(Isa::kAvx512, f) && f.avx512vnni) {
        return Isa::kAvx512;
    }
    if (ctx.isa >= Isa::kAvx2 && isa_supported(Isa::kAvx2, f)) return Isa::kAvx2;
    return Isa::kRef;
}

}  // namespace lazyllm::kernels
