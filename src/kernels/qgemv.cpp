// QuantLinear: validation, repacking GGML blocks into the interleaved layout of
// qgemv_isa.h, and dispatch (AVX-512 VNNI, AVX2 or the scalar reference of qgemv_ref.cpp,
// OpenMP over row groups).
#include "kernels/qgemv.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/check.h"
#include "base/scratch.h"
#include "kernels/qgemv_isa.h"
#include "kernels/qgemv_outliers.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_isa.h"
#include "kernels/workspace.h"

namespace lazyllm::kernels {

using qgemv::kBlock;
using qgemv::kChunkBytes;
using qgemv::kGroupRows;

namespace {

// How a GGML type is stored (qgemv_isa.h, "Values").
struct FormatSpec {
    int bits;
    qgemv::Scales scales;
    int32_t offset;
};

bool format_of(GgmlType type, FormatSpec* spec) {
    using qgemv::Scales;
    switch (type) {
        case GgmlType::Q4_0:
            *spec = {4, Scales::kD, 8};
            return true;
        case GgmlType::Q4_1:
            *spec = {4, Scales::kDMin, 0};
            return true;
        case GgmlType::Q5_0:
            *spec = {5, Scales::kD, 16};
            return true;
        case GgmlType::Q5_1:
            *spec = {5, Scales::kDMin, 0};
            return true;
        case GgmlType::Q8_0:
            *spec = {8, Scales::kD, 128};
            return true;
        case GgmlType::Q4_K:
            *spec = {4, Scales::kK, 0};
            return true;
        case GgmlType::Q5_K:
            *spec = {5, Scales::kK, 0};
            return true;
        case GgmlType::Q6_K:
            *spec = {6, Scales::kD, 0};
            return true;
        default:
            return false;
    }
}

// One block of 32 weights as stored: unsigned quants u, fp16 scale and min (raw bits; the
// K-quants' super-block D and M), and the K-quants' two int8 multipliers (Q6_K: the halves'
// scales; Q4_K, Q5_K: the block's scale and min).
struct UnpackedBlock {
    uint8_t u[kBlock];
    uint16_t d;
    uint16_t m;
    int8_t sc[2];
};

// The 4- and 5-bit formats: qs[j] holds element j in its low nibble and element j + 16 in its
// high one; the 5-bit formats add bit j of qh as bit 4 of element j (the 4-bit ones have no qh,
// read as 0), and the affine ones (Q4_1, Q5_1) a min after d. Block: quant::BlockQ{4,5}_{0,1}.
template <typename Block>
void unpack_nibbles(const uint8_t* src, UnpackedBlock* out) {
    constexpr bool kHasMin = requires(const Block& b) { b.m; };
    constexpr bool kHasHigh = requires(const Block& b) { b.qh; };
    Block b;
    std::memcpy(&b, src, sizeof(b));
    out->d = b.d;
    if constexpr (kHasMin) out->m = b.m;
    uint32_t qh = 0;
    if constexpr (kHasHigh) std::memcpy(&qh, b.qh, sizeof(qh));
    for (int j = 0; j < kBlock / 2; ++j) {
        out->u[j] = static_cast<uint8_t>((b.qs[j] & 0x0F) | (((qh >> j) << 4) & 0x10));
        out->u[j + kBlock / 2] = static_cast<uint8_t>((b.qs[j] >> 4) | ((qh >> (j + 12)) & 0x10));
    }
}

// Sub-block `sub` (32 elements) of a Q4_K / Q5_K super-block: unsigned 4- or 5-bit quants,
// the super-block's d and -dmin, and the sub-block's 6-bit scale and min multipliers.
template <typename Block>
void unpack_k(const uint8_t* src, int sub, UnpackedBlock* out) {
    constexpr bool kHasHigh = requires(const Block& b) { b.qh; };
    Block b;
    std::memcpy(&b, src, sizeof(b));
    uint8_t sc = 0, mn = 0;
    quant::get_scale_min_k4(sub, b.scales, &sc, &mn);
    out->d = b.d;
    out->m = static_cast<uint16_t>(b.dmin ^ 0x8000u);  // -dmin: the fp16 sign bit flipped
    out->sc[0] = static_cast<int8_t>(sc);              // <= 63
    out->sc[1] = static_cast<int8_t>(mn);
    // Sub-block s: nibble s % 2 of qs[32 (s / 2) + l]; bit s of qh[l] is its fifth bit.
    const uint8_t* qs = b.qs + 32 * (sub / 2);
    for (int l = 0; l < kBlock; ++l) {
        int u = (sub % 2 == 0) ? (qs[l] & 0x0F) : (qs[l] >> 4);
        if constexpr (kHasHigh) u |= ((b.qh[l] >> sub) & 1) << 4;
        out->u[l] = static_cast<uint8_t>(u);
    }
}

// Sub-block `sub` (32 elements) of a Q6_K super-block: element e = 32 sub + l has its low 4
// bits in nibble (e % 128) / 64 of ql[64 (e / 128) + e % 64], its high 2 bits at bit
// 2 ((e % 128) / 32) of qh[32 (e / 128) + l], and scale e / 16 (ggml-quants.c,
// dequantize_row_q6_K).
void unpack_q6_k(const uint8_t* src, int sub, UnpackedBlock* out) {
    quant::BlockQ6K b;
    std::memcpy(&b, src, sizeof(b));
    out->d = b.d;
    out->m = 0;
    out->sc[0] = b.scales[2 * sub];
    out->sc[1] = b.scales[2 * sub + 1];
    const int half = sub / 4, quarter = sub % 4;
    const uint8_t* ql = b.ql + 64 * half + 32 * (quarter % 2);
    const uint8_t* qh = b.qh + 32 * half;
    for (int l = 0; l < kBlock; ++l) {
        const int lo = quarter < 2 ? (ql[l] & 0x0F) : (ql[l] >> 4);
        out->u[l] = static_cast<uint8_t>(lo | (((qh[l] >> (2 * quarter)) & 3) << 4));
    }
}

// Block of 32 weights `sub` of the GGML block at `src` (sub > 0 only for the K-quants'
// 256-element super-blocks) -> UnpackedBlock (layouts: quant_blocks.h, after ggml-common.h).
void unpack_block(GgmlType type, const uint8_t* src, int sub, UnpackedBlock* out) {
    using namespace quant;  // NOLINT: block structs of this function's concern
    out->m = 0;
    if (type == GgmlType::Q8_0) {
        BlockQ8_0 b;
        std::memcpy(&b, src, sizeof(b));
        out->d = b.d;
        for (int j = 0; j < kBlock; ++j) out->u[j] = static_cast<uint8_t>(b.qs[j]) ^ 0x80u;
        return;
    }
    if (type == GgmlType::Q4_K) return unpack_k<BlockQ4K>(src, sub, out);
    if (type == GgmlType::Q5_K) return unpack_k<BlockQ5K>(src, sub, out);
    if (type == GgmlType::Q6_K) return unpack_q6_k(src, sub, out);
    const bool unpacked = with_blocks(type, src, kBlock, [&]<typename B>(const B*, int64_t) {
        if constexpr (NibbleBlock<B>) {
            unpack_nibbles<B>(src, out);
        } else {
            LAZYLLM_CHECK_MSG(false, "unpack_block: type without a QuantLinear format");
        }
    });
    LAZYLLM_CHECK_MSG(unpacked, "unpack_block: type without a QuantLinear format");
}

// nearbyint(x) in the default rounding mode (half to even) for |x| < 2^22, without a libm
// call (the generic build has no SSE4.1 roundss): adding 1.5 * 2^23 leaves no fraction bits
// (the build has no -ffast-math, so the sum is rounded and not folded away).
inline float round_half_even(float x) {
    constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
    return (x + kMagic) - kMagic;
}

// fp32 -> Q8_0-as-stored (u = q + 128). As ggml's quantize_row_q8_0_ref, except that q is
// rounded against the fp16-rounded scale actually stored, which removes the scale's rounding
// from the error (the clamp covers a scale that rounded down).
void quantize_block_q8_0(const float* x, UnpackedBlock* out) {
    float amax = 0.0f;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    out->d = quant::fp32_to_fp16_scalar(amax / 127.0f);
    out->m = 0;
    const float d = quant::fp16_to_fp32_scalar(out->d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kBlock; ++j) {
        const float q = std::clamp(round_half_even(x[j] * id), -127.0f, 127.0f);
        out->u[j] = static_cast<uint8_t>(static_cast<int>(q) + 128);
    }
}

// Writes lane `lane` of block `b` of a group (layout: qgemv_isa.h).
void store_lane(const qgemv::Weights& w, uint8_t* group, int64_t b, int lane,
                const UnpackedBlock& blk) {
    uint8_t* qs = group + b * w.qs_bytes();
    if (w.bits != 8) {
        for (int c = 0; c < 4; ++c) {
            for (int j = 0; j < 4; ++j) {
                qs[c * kChunkBytes + lane * 4 + j] = static_cast<uint8_t>(
                    (blk.u[8 * c + j] & 0x0F) | ((blk.u[8 * c + 4 + j] & 0x0F) << 4));
            }
        }
        // 5 bits: the fifth bit of element 8c + j at bit c of chunk 4, of 8c + 4 + j at 4 + c.
        for (int j = 0; w.bits == 5 && j < 4; ++j) {
            uint8_t high = 0;
            for (int c = 0; c < 4; ++c) {
                high |= static_cast<uint8_t>(((blk.u[8 * c + j] >> 4) & 1) << c);
                high |= static_cast<uint8_t>(((blk.u[8 * c + 4 + j] >> 4) & 1) << (4 + c));
            }
            qs[4 * kChunkBytes + lane * 4 + j] = high;
        }
        // 6 bits: the high 2 bits of elements 16p + j, + 4, + 8, + 12 in chunk 4 + p.
        for (int p = 0; w.bits == 6 && p < 2; ++p) {
            for (int j = 0; j < 4; ++j) {
                const uint8_t* u = blk.u + 16 * p + j;
                qs[(4 + p) * kChunkBytes + lane * 4 + j] = static_cast<uint8_t>(
                    (u[0] >> 4) | ((u[4] >> 4) << 2) | ((u[8] >> 4) << 4) | ((u[12] >> 4) << 6));
            }
        }
    } else {
        for (int c = 0; c < 8; ++c) {
            for (int j = 0; j < 4; ++j) qs[c * kChunkBytes + lane * 4 + j] = blk.u[4 * c + j];
        }
    }
    // d and m per super-block (written by each of its blocks: the same values) or per block.
    const int64_t is = w.per_super() ? b / qgemv::kSuperBlocks : b;
    reinterpret_cast<uint16_t*>(group + w.scales_offset())[is * kGroupRows + lane] = blk.d;
    if (w.has_min())
        reinterpret_cast<uint16_t*>(group + w.mins_offset())[is * kGroupRows + lane] = blk.m;
    if (w.per_super()) {
        auto* sc = reinterpret_cast<int8_t*>(group + w.sub_offset());
        sc[(b * kGroupRows + lane) * 2] = blk.sc[0];
        sc[(b * kGroupRows + lane) * 2 + 1] = blk.sc[1];
    }
}

// Work (groups x blocks x activation rows) below which a thread is not worth waking (a
// parallel region costs ~1 us; the 2-thread bench on the shared 2-core VM is too noisy to tune
// this finer); see forward().
constexpr int64_t kMinWorkPerThread = 16 * 18;
// Rows from which forward() splits the activations' int8 rounding (and the outlier terms) over
// its threads too.
constexpr int64_t kSplitQuantizeRows = 16;

int resolve_threads(const KernelContext& ctx) {
    return ctx.n_threads > 0 ? ctx.n_threads : omp_get_max_threads();
}

// Activation scratch, a Workspace part (as PackedLinear's): bounded by the largest m x n_in
// seen, shared by every layer.
struct Scratch {
    std::vector<int8_t> q;                 // [m, n_in]
    std::vector<float> d, s;               // [m, n_blocks]
    std::vector<int32_t> corr, half_sums;  // [m, n_blocks]
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
        FormatSpec spec;
        LAZYLLM_CHECK(format_of(type, &spec));
        QuantLinear out;
        out.impl_ = std::make_unique<Impl>();
        Impl& im = *out.impl_;
        im.type = type;
        im.n_threads = resolve_threads(ctx);
        im.isa = qgemv::qgemv_isa(ctx);
        LAZYLLM_TRY(im.pack(n_out, n_in, spec, source));
        im.set_bias(bias);
        return out;
    }

    // Allocates the packed layout and fills every group from `source(row, block, &blk)`, in
    // parallel over groups (n_threads; a row's blocks in order, on one thread). Padding rows
    // get zero quants and scales (they produce 0).
    template <typename Source>
    Status pack(int64_t n_out, int64_t n_in, const FormatSpec& spec, Source&& source) {
        w.n_in = n_in;
        w.n_out = n_out;
        w.n_blocks = n_in / kBlock;
        w.n_groups = (n_out + kGroupRows - 1) / kGroupRows;
        w.bits = spec.bits;
        w.scales_kind = spec.scales;
        w.group_bytes = qgemv::group_bytes_for(spec.bits, spec.scales, w.n_blocks);
        offset = spec.offset;
        const size_t bytes = storage_bytes();
        storage.reset(static_cast<uint8_t*>(std::aligned_alloc(kChunkBytes, bytes)));
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
#pragma omp parallel for num_threads(n_threads) schedule(static)
        for (int64_t g = 0; g < cw.n_groups; ++g) {
            uint8_t* group = storage.get() + static_cast<size_t>(g) * cw.group_bytes;
            UnpackedBlock blk;
            for (int lane = 0; lane < kGroupRows; ++lane) {
                const int64_t row = g * kGroupRows + lane;
                if (row >= n_out) break;
                for (int64_t b = 0; b < cw.n_blocks; ++b) {
                    source(row, b, &blk);
                    store_lane(cw, group, b, lane, blk);
                }
            }
        }
        return {};
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

bool QuantLinear::supports(GgmlType type) {
    FormatSpec spec;
    return format_of(type, &spec);
}

Result<QuantLinear> QuantLinear::create(const KernelContext& ctx, std::span<const Part> parts,
                                        int64_t n_in, const float* bias) {
    if (parts.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "QuantLinear: no weight parts");
    }
    const GgmlType type = parts[0].type;
    for (const Part& p : parts) {
        if (!supports(p.type)) {
            return make_error(ErrorCode::kUnsupported,
                              "QuantLinear: weight type {} is not taken directly (supported: "
                              "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K; use "
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
    const auto source = [&](int64_t row, int64_t b, UnpackedBlock* blk) {
        const size_t p =
            std::upper_bound(part_start.begin(), part_start.end(), row) - part_start.begin() - 1;
        const int64_t r = row - part_start[p];
        const uint8_t* src = parts[p].data + (r * row_blocks + b / per) * shape.bytes;
        unpack_block(type, src, static_cast<int>(b % per), blk);
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
    const auto source = [&](int64_t row, int64_t b, UnpackedBlock* blk) {
        quantize_block_q8_0(w + row * n_in + b * kBlock, blk);
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
    // One row buffer per thread of pack(), which visits a row's blocks in order on one thread.
    const int n_threads = resolve_threads(ctx);
    std::vector<float> rows(static_cast<size_t>(n_threads * n_in));
    std::vector<int64_t> current(static_cast<size_t>(n_threads), -1);
    std::atomic<bool> failed{false};
    Status first_error;
    std::mutex error_mutex;
    const auto source = [&](int64_t r, int64_t b, UnpackedBlock* blk) {
        const int t = omp_get_thread_num();
        float* buf = rows.data() + static_cast<size_t>(t) * n_in;
        if (current[t] != r) {
            current[t] = r;
            Status st = failed.load(std::memory_order_relaxed) ? Status{} : row(r, buf);
            if (!st.ok()) {
                const std::lock_guard<std::mutex> lock(error_mutex);
                if (!failed.exchange(true)) first_error = std::move(st);
                std::fill(buf, buf + n_in, 0.0f);
            }
        }
        quantize_block_q8_0(buf + b * kBlock, blk);
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
                          bool accumulate, Workspace* ws, bool outliers) const {
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
        layer.forward(x, m, y + first, ldx, ldy, accumulate, &space, outliers);
    }

    Scratch& s = space.caller<Scratch>();
    qgemv::OutlierScratch& o = s.outliers;
    const qgemv::RowOutliers rows = outliers ? o.rows(m) : qgemv::RowOutliers{};
    const int64_t n_qblocks = m * w.n_blocks;
    const qgemv::ActivationBuffers buf{grow(s.q, m * w.n_in), grow(s.d, n_qblocks),
                                       grow(s.s, n_qblocks), grow(s.corr, n_qblocks)};
    int32_t* hs = w.bits == 6 ? grow(s.half_sums, n_qblocks) : nullptr;
    // The activations' rows [r0, r1) (with their outlier channels where asked).
    const auto quantize = [&](int64_t r0, int64_t r1) {
        if (r0 >= r1) return;
        isa_dispatch(im.isa, [&]<Isa I>() {
            if constexpr (I == Isa::kRef) {
                qgemv::ref::quantize_rows(x, m, r0, r1, ldx, w.n_in, im.offset, buf,
                                          outliers ? &rows : nullptr);
            } else {
                qgemv::quantize_rows<I>(x, m, r0, r1, ldx, w.n_in, im.offset, buf,
                                        outliers ? &rows : nullptr);
            }
        });
        if (hs == nullptr) return;
        for (int64_t b = 0; b < w.n_blocks; ++b) {  // block-major: rows [r0, r1) of each block
            qgemv::ref::half_sums(buf.q + (b * m + r0) * qgemv::kBlock, r1 - r0, 1,
                                  hs + b * m + r0);
        }
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
    const float* bias = im.bias.empty() ? nullptr : im.bias.data();
    const auto run = [&](int64_t g0, int64_t g1) {
        isa_dispatch(im.isa, [&]<Isa I>() {
            if constexpr (I == Isa::kRef) {
                qgemv::ref::gemv(w, a, m, g0, g1, bias, y, ldy, accumulate);
            } else {
                qgemv::gemv<I>(w, a, m, g0, g1, bias, y, ldy, accumulate);
            }
        });
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
            run(0, w.n_groups);
        } else {
#pragma omp parallel num_threads(n_threads)
            {
                const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
                run(w.n_groups * t / nt, w.n_groups * (t + 1) / nt);
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
        run(w.n_groups * t / nt, w.n_groups * (t + 1) / nt);
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
