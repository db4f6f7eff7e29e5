// The AMX GEMM (src/kernels/gemm_amx.cpp, with its packing in gemm_amx_layout.cpp) on the
// tile emulator, against a double-precision product of the same bf16 operands, for every
// output stage (store, accumulate with bias, SwiGLU to bf16), ragged row counts and both
// loop orders; and amx_gemm_panels (QuantLinear's prompt rows on AMX) over fp32 rows packed by
// amx_pack_rows_f32, on sets of panels with a partial last one. Built with the AVX-512 flags;
// main.cpp enters it only after checking the CPU.
#include "amx_emulation/tally.h"
#include "amx_emulation/tile_emulator.h"

#define amx_permission amx_permission_emulated
#include "kernels/gemm_amx.cpp"
#include "kernels/gemm_amx_layout.cpp"
#undef amx_permission

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels/ops_isa.h"
#include "kernels/workspace.h"

namespace lazyllm::kernels::detail {

bool amx_permission_emulated();

// gemm.cpp's, which this executable does not link: round each element to nearest even.
void convert_rows_to_bf16_ref(const float* src, int64_t n_rows, int64_t n_cols, int64_t ld_src,
                              uint16_t* dst, int64_t ld_dst) {
    for (int64_t r = 0; r < n_rows; ++r) {
        for (int64_t c = 0; c < n_cols; ++c)
            dst[r * ld_dst + c] = round_to_bf16(src[r * ld_src + c]);
    }
}

namespace {

struct Shape {
    int64_t m, n_in, n_out;
};

}  // namespace

// Returns the number of failed checks (each printed).
int run_gemm_amx_emulated() {
    // fp32 sums of up to 576 products, in any order: far below 1e-4 of the sum of |products|.
    constexpr double kSumError = 1e-4;
    constexpr double kTolerance = 1.0;
    std::mt19937 rng(13);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    tile_emulator::Tally tally;
    // n_in over 576 (18 chunks): the panel-by-panel order with two k blocks; m 260: rows split
    // across two threads; the others: micro-tile by micro-tile, panels split across threads.
    const Shape shapes[] = {{1, 32, 32},    {17, 64, 96},   {32, 96, 64},  {45, 576, 128},
                            {100, 160, 64}, {40, 1024, 96}, {260, 640, 64}};
    for (const Shape& s : shapes) {
        std::vector<uint16_t> x(static_cast<size_t>(s.m * s.n_in));
        for (uint16_t& v : x) v = round_to_bf16(normal(rng));
        std::vector<float> w(static_cast<size_t>(s.n_out * s.n_in)), bias(s.n_out);
        for (float& v : w) v = normal(rng) * 0.1f;
        for (float& v : bias) v = normal(rng);
        for (const AmxGemmOut out :
             {AmxGemmOut::kStore, AmxGemmOut::kAccumulate, AmxGemmOut::kGlu}) {
            for (const int n_threads : {1, 2}) {
                // Packed column j holds W row col_row[j] (SwiGLU: gate and up interleaved).
                std::vector<int64_t> col_row(s.n_out);
                for (int64_t j = 0; j < s.n_out; ++j) col_row[j] = j;
                if (out == AmxGemmOut::kGlu) amx_gemm_swiglu_order(s.n_out / 2, col_row.data());
                std::vector<uint16_t> packed(amx_gemm_packed_elems(s.n_in, s.n_out));
                amx_gemm_pack(w.data(), s.n_in, s.n_out, col_row.data(), packed.data());
                std::vector<float> bias_packed(s.n_out);
                for (int64_t j = 0; j < s.n_out; ++j) bias_packed[j] = bias[col_row[j]];
                const int64_t ldy = s.n_out + 3;
                std::vector<float> y(static_cast<size_t>(s.m * ldy), 0.5f);
                std::vector<uint16_t> y16(static_cast<size_t>(s.m * s.n_out / 2));
                AmxGemmArgs a;
                a.x = x.data();
                a.ldx = s.n_in;
                a.m = s.m;
                a.w = packed.data();
                a.n_in = s.n_in;
                a.n_out = s.n_out;
                a.bias = out == AmxGemmOut::kAccumulate ? bias_packed.data() : nullptr;
                a.out = out;
                a.y = y.data();
                a.ldy = ldy;
                a.y16 = y16.data();
                a.ldy16 = s.n_out / 2;
                amx_gemm(a, n_threads);
                // err: |got - want| over what fp32 sums of n_in products (and, for SwiGLU,
                // a bf16 rounding of the result) may be off by; 1 = at that bound.
                double err = 0.0;
                for (int64_t r = 0; r < s.m; ++r) {
                    std::vector<double> dot(s.n_out), mag(s.n_out);  // by W row
                    for (int64_t j = 0; j < s.n_out; ++j) {
                        for (int64_t k = 0; k < s.n_in; ++k) {
                            const double p =
                                static_cast<double>(
                                    tile_emulator::bf16_to_float(x[r * s.n_in + k])) *
                                tile_emulator::bf16_to_float(round_to_bf16(w[j * s.n_in + k]));
                            dot[j] += p;
                            mag[j] += std::abs(p);
                        }
                    }
                    const auto sum_bound = [&](int64_t j) { return kSumError * mag[j] + 1e-6; };
                    if (out == AmxGemmOut::kGlu) {
                        const int64_t n_ff = s.n_out / 2;
                        for (int64_t i = 0; i < n_ff; ++i) {
                            const double g = dot[i], u = dot[n_ff + i];
                            const double silu = g / (1.0 + std::exp(-g));
                            const double want = silu * u;
                            const double bound = std::abs(want) / 128.0 +
                                                 (1.0 + std::abs(u)) * sum_bound(i) +
                                                 (1.0 + std::abs(silu)) * sum_bound(n_ff + i);
                            err = std::max(
                                err,
                                std::abs(tile_emulator::bf16_to_float(y16[r * n_ff + i]) - want) /
                                    bound);
                        }
                    } else {
                        for (int64_t j = 0; j < s.n_out; ++j) {
                            double want = dot[j];
                            if (out == AmxGemmOut::kAccumulate) want += 0.5 + bias[j];
                            err = std::max(err, std::abs(y[r * ldy + j] - want) / sum_bound(j));
                        }
                    }
                }
                if (!tally.record(err, kTolerance)) {
                    std::printf(
                        "FAIL m %lld n_in %lld n_out %lld out %d threads %d: error %g > %g\n",
                        static_cast<long long>(s.m), static_cast<long long>(s.n_in),
                        static_cast<long long>(s.n_out), static_cast<int>(out), n_threads, err,
                        kTolerance);
                }
            }
        }
    }
    // amx_gemm_panels: n_out not a multiple of 32 (a half panel at the end), two sets of panels
    // per call, n_in over 18 chunks (two k blocks), store and accumulate with bias.
    const Shape panel_shapes[] = {{1, 64, 48}, {45, 640, 80}, {100, 96, 112}};
    for (const Shape& s : panel_shapes) {
        std::vector<float> x(static_cast<size_t>(s.m * s.n_in));
        for (float& v : x) v = normal(rng);
        const int64_t n_panels = (s.n_out + kAmxGemmPanel - 1) / kAmxGemmPanel;
        std::vector<float> w(static_cast<size_t>(n_panels * kAmxGemmPanel * s.n_in), 0.0f);
        std::vector<float> bias(s.n_out);
        for (int64_t i = 0; i < s.n_out * s.n_in; ++i) w[i] = normal(rng) * 0.1f;
        for (float& v : bias) v = normal(rng);
        std::vector<uint16_t> packed(w.size());
        amx_gemm_pack(w.data(), s.n_in, n_panels * kAmxGemmPanel, nullptr, packed.data());
        std::vector<uint16_t> xpack(amx_packed_rows_elems(s.m, s.n_in));
        const int64_t n_micro = (s.m + kAmxGemmRows - 1) / kAmxGemmRows;
        amx_pack_rows_f32(x.data(), s.n_in, s.m, s.n_in, 0, n_micro, xpack.data());
        for (const AmxGemmOut out : {AmxGemmOut::kStore, AmxGemmOut::kAccumulate}) {
            const int64_t ldy = s.n_out + 3;
            std::vector<float> y(static_cast<size_t>(s.m * ldy), 0.5f);
            Workspace ws;
            ws.workers(1);
            AmxGemmArgs a;
            a.m = s.m;
            a.n_in = s.n_in;
            a.n_out = s.n_out;
            a.bias = out == AmxGemmOut::kAccumulate ? bias.data() : nullptr;
            a.out = out;
            a.y = y.data();
            a.ldy = ldy;
            a.ws = &ws;
            const int64_t split = n_panels / 2;
            const int64_t panel_elems = s.n_in * kAmxGemmPanel;
            amx_gemm_panels(a, xpack.data(), packed.data(), 0, split, 0);
            amx_gemm_panels(a, xpack.data(), packed.data() + split * panel_elems, split, n_panels,
                            0);
            double err = 0.0;
            for (int64_t r = 0; r < s.m; ++r) {
                for (int64_t j = 0; j < ldy; ++j) {
                    const float got = y[r * ldy + j];
                    if (j >= s.n_out) {  // past n_out: untouched
                        err = std::max(err, got == 0.5f ? 0.0 : 1e9);
                        continue;
                    }
                    double want = 0.0, mag = 0.0;
                    for (int64_t k = 0; k < s.n_in; ++k) {
                        const double p =
                            static_cast<double>(
                                tile_emulator::bf16_to_float(round_to_bf16(x[r * s.n_in + k]))) *
                            tile_emulator::bf16_to_float(round_to_bf16(w[j * s.n_in + k]));
                        want += p;
                        mag += std::abs(p);
                    }
                    if (out == AmxGemmOut::kAccumulate) want += 0.5 + bias[j];
                    err = std::max(err, std::abs(got - want) / (kSumError * mag + 1e-6));
                }
            }
            if (!tally.record(err, kTolerance)) {
                std::printf("FAIL panels m %lld n_in %lld n_out %lld out %d: error %g > %g\n",
                            static_cast<long long>(s.m), static_cast<long long>(s.n_in),
                            static_cast<long long>(s.n_out), static_cast<int>(out), err,
                            kTolerance);
            }
        }
    }
    return tally.report("gemm_amx");
}

}  // namespace lazyllm::kernels::detail
