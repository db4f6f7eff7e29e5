// The AMX prompt path's dequantization (qgemv::dequant_bf16_panels) against GGML's own values:
// it needs AVX-512 VNNI and BF16 only, so it runs on CPUs without AMX too, where nothing else
// reaches it. Every type, a ragged last group (a zero half panel) and, for the per-block
// formats, a short last segment of blocks (qgemv_isa.h, layout).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/ops_isa.h"
#include "kernels/qgemv_isa.h"
#include "kernels/qgemv_pack.h"
#include "kernels/quant_blocks.h"
#include "qgemv_fixture.h"

namespace lazyllm::kernels::qgemv_test {
namespace {

float bf16_float(uint16_t v) {
    const uint32_t u = static_cast<uint32_t>(v) << 16;
    float f;
    std::memcpy(&f, &u, sizeof(f));
    return f;
}

struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
};

// The matrix packed as QuantLinear packs it (qgemv::store_row), in `storage`.
qgemv::Weights pack(GgmlType type, const QuantMatrix& q, int64_t n_out, int64_t n_in,
                    std::unique_ptr<uint8_t, FreeDeleter>& storage, int32_t* offset) {
    qgemv::FormatSpec spec{};
    EXPECT_TRUE(qgemv::format_of(type, &spec));
    qgemv::Weights w;
    w.n_in = n_in;
    w.n_out = n_out;
    w.n_blocks = n_in / qgemv::kBlock;
    w.n_groups = (n_out + qgemv::kGroupRows - 1) / qgemv::kGroupRows;
    w.bits = spec.bits;
    w.scales_kind = spec.scales;
    w.group_bytes = qgemv::group_bytes_for(spec.bits, spec.scales, w.n_blocks);
    const size_t bytes = w.group_bytes * static_cast<size_t>(w.n_groups);
    storage.reset(static_cast<uint8_t*>(std::aligned_alloc(64, bytes)));
    std::memset(storage.get(), 0, bytes);
    w.data = storage.get();
    const quant::BlockShape shape = quant::block_shape(type);
    const int64_t row_bytes = n_in / shape.elems * shape.bytes;
    std::vector<qgemv::UnpackedBlock> blks(static_cast<size_t>(w.n_blocks));
    for (int64_t r = 0; r < n_out; ++r) {
        qgemv::unpack_row(type, q.blocks.data() + r * row_bytes, w.n_blocks, blks.data());
        qgemv::store_row(w, storage.get() + (r / qgemv::kGroupRows) * w.group_bytes,
                         static_cast<int>(r % qgemv::kGroupRows), blks.data());
    }
    *offset = spec.offset;
    return w;
}

void expect_panels_match(GgmlType type, int64_t n_out, int64_t n_in) {
    const QuantMatrix q = make_matrix(type, n_out, n_in, 11);
    std::unique_ptr<uint8_t, FreeDeleter> storage;
    int32_t offset = 0;
    const qgemv::Weights w = pack(type, q, n_out, n_in, storage, &offset);
    // Panel p holds groups 2p (half 0) and 2p + 1 (half 1); per block two 512-element tiles.
    constexpr int64_t kTile = 512;
    const int64_t n_panels = (w.n_groups + 1) / 2, nb = w.n_blocks;
    const size_t n_elems = static_cast<size_t>(n_panels * nb * 2 * kTile);
    std::unique_ptr<uint16_t, FreeDeleter> owned(  // 64-byte aligned: tile stores
        static_cast<uint16_t*>(std::aligned_alloc(64, n_elems * sizeof(uint16_t))));
    uint16_t* panels = owned.get();
    std::fill_n(panels, n_elems, uint16_t{0xFFFF});
    std::unique_ptr<uint8_t, FreeDeleter> tmp(static_cast<uint8_t*>(
        std::aligned_alloc(64, static_cast<size_t>(qgemv::unpacked_group_bytes(w, Isa::kAvx512)))));
    qgemv::dequant_bf16_panels(w, offset, 0, w.n_groups, panels, tmp.get());
    int bad = 0;
    for (int64_t g = 0; g < n_panels * 2; ++g) {
        for (int64_t b = 0; b < nb; ++b) {
            const uint16_t* tile = panels + ((g / 2) * nb * 2 + g % 2) * kTile + b * 2 * kTile;
            for (int lane = 0; lane < qgemv::kGroupRows; ++lane) {
                const int64_t n = g * qgemv::kGroupRows + lane;
                for (int k = 0; k < qgemv::kBlock; ++k) {
                    // Element k of the block: chunk k / 4 of the 8-bit layout, pair (k % 4) / 2
                    // of it in tile rows 2c and 2c + 1, lane-major pairs.
                    const int c = k / 4, j = k % 4;
                    const uint16_t got = tile[(2 * c + j / 2) * 32 + 2 * lane + j % 2];
                    // Padding rows (zero quants and scales) give 0. Values compare as floats:
                    // a zero weight may come out as -0 or +0 (Q3_K's prescaled quants).
                    const uint16_t want =
                        n < n_out ? detail::round_to_bf16(q.deq[n * n_in + b * qgemv::kBlock + k])
                                  : uint16_t{0};
                    if (bf16_float(got) != bf16_float(want) && ++bad <= 3) {
                        ADD_FAILURE() << ggml_type_name(type) << " row " << n << " col "
                                      << b * qgemv::kBlock + k << ": " << got << " vs " << want;
                    }
                }
            }
        }
    }
    EXPECT_EQ(bad, 0) << ggml_type_name(type) << " " << n_out << " x " << n_in;
}

bool have_vnni_bf16() {
    const CpuFeatures f = detect_cpu_features();
    return f.avx512vnni && f.avx512bf16 && isa_supported(Isa::kAvx512, f);
}

TEST(QuantPanels, EveryTypeMatchesGgmlValuesInBf16) {
    if (!have_vnni_bf16()) GTEST_SKIP() << "no AVX-512 VNNI and BF16";
    for (GgmlType type : kTypes) {
        expect_panels_match(type, 40, 576);  // 18 blocks: a last segment of 2
        expect_panels_match(type, 33, 256);
    }
    for (GgmlType type : kKTypes) expect_panels_match(type, 40, 512);
}

}  // namespace
}  // namespace lazyllm::kernels::qgemv_test
