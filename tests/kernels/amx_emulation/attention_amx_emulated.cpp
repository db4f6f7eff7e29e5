// The AMX attention tile kernel (src/kernels/attention_amx.cpp) on the tile emulator, against
// a scalar reference of the same tile: so its logic (Q packing, the software pipeline, the
// conditional rescaling, resumed key ranges) is tested on every AVX-512-BF16 machine, not
// only where AMX runs. Built with the AVX-512 flags; main.cpp enters it only after checking
// the CPU.
#include "amx_emulation/tally.h"
#include "amx_emulation/tile_emulator.h"

// The kernel source, with the tile unit emulated and AMX permission granted.
#define amx_permission amx_permission_emulated
#include "kernels/attention_amx.cpp"
#undef amx_permission

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels/ops_isa.h"

namespace lazyllm::kernels::detail {
bool amx_permission_emulated() { return true; }
}  // namespace lazyllm::kernels::detail

namespace lazyllm::kernels::detail {
namespace {

using tile_emulator::bf16_to_float;
uint16_t to_bf16(float f) { return round_to_bf16(f); }

struct Case {
    int head_dim;
    int n_kv;
    float score_scale;  // > 1: large scores, so blocks raise the running max (rescales)
};

// Softmax(q . K^T) V of one lane over the keys it sees among [0, j_end), with q rounded to
// bf16 after the log2-domain prescale and K, V as packed (bf16), in double.
std::vector<double> reference_lane(const AttentionArgs& a, const PackedKvBf16& p, const AttnTile& t,
                                   int lane, int64_t j_end) {
    const int D = a.head_dim;
    const float* q = a.q + t.row[lane] * a.q_stride + static_cast<int64_t>(t.head[lane]) * D;
    const uint16_t* k = p.k.data() + t.kv_head * p.n_kv_pad * D;
    const uint16_t* vt = p.vt.data() + static_cast<int64_t>(t.kv_head) * D * p.n_kv_pad;
    std::vector<double> s;
    for (int64_t j = 0; j < j_end && a.kv_pos[j] <= t.pos[lane]; ++j) {
        double dot = 0.0;
        for (int d = 0; d < D; ++d) {
            dot += bf16_to_float(to_bf16(q[d] * (a.scale * kLog2e))) * bf16_to_float(k[j * D + d]);
        }
        s.push_back(dot);
    }
    const double m = *std::max_element(s.begin(), s.end());
    std::vector<double> o(D, 0.0);
    double l = 0.0;
    for (size_t j = 0; j < s.size(); ++j) {
        const double w = std::exp2(s[j] - m);
        l += w;
        const uint16_t* vb = vt + (static_cast<int64_t>(j) / kKeyBlock) * D * kKeyBlock;
        for (int d = 0; d < D; ++d) o[d] += w * bf16_to_float(vb[d * kKeyBlock + j % kKeyBlock]);
    }
    for (double& x : o) x /= l;
    return o;
}

// Largest |kernel - reference| over the tile's lanes and dims, the kernel's output normalized
// by its l.
double max_error(const AttentionArgs& a, const PackedKvBf16& p, const AttnTile& t,
                 const std::vector<float>& o, const AttnState& st, int64_t j_end) {
    double worst = 0.0;
    for (int lane = 0; lane < kAttnLanes; ++lane) {
        const std::vector<double> want = reference_lane(a, p, t, lane, j_end);
        for (int d = 0; d < a.head_dim; ++d) {
            const double got = o[d * kAttnLanes + lane] / st.l[lane];
            worst = std::max(worst, std::abs(got - want[d]));
        }
    }
    return worst;
}

}  // namespace

// Returns the number of failed checks (each printed).
int run_attention_amx_emulated() {
    // P and V are rounded to bf16 in the kernel (the reference keeps P exact): errors of a
    // few bf16 ulps of the values, which are ~N(0, 1) here.
    constexpr double kTolerance = 0.03;
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    tile_emulator::Tally tally;
    const Case cases[] = {{64, 32, 1.0f},   {64, 200, 4.0f}, {128, 96, 1.0f},
                          {128, 333, 4.0f}, {256, 70, 1.0f}, {256, 130, 4.0f}};
    for (const Case& c : cases) {
        const int D = c.head_dim, n_head = 4, n_head_kv = 2, n_q = 40;
        std::vector<float> q(static_cast<size_t>(n_q) * n_head * D);
        for (float& x : q) x = normal(rng);
        PackedKvBf16 packed;
        packed.n_kv_pad = (c.n_kv + kKeyBlock - 1) / kKeyBlock * kKeyBlock;
        packed.k.resize(static_cast<size_t>(n_head_kv) * packed.n_kv_pad * D);
        packed.vt.resize(packed.k.size());
        for (uint16_t& x : packed.k) x = to_bf16(normal(rng));
        for (uint16_t& x : packed.vt) x = to_bf16(normal(rng));
        // Padding keys (pack_kv_bf16 zeroes them) made loud: a kernel that failed to mask
        // one would take it with a large weight and value.
        for (int kv_head = 0; kv_head < n_head_kv; ++kv_head) {
            for (int64_t j = c.n_kv; j < packed.n_kv_pad; ++j) {
                uint16_t* kr = packed.k.data() + (kv_head * packed.n_kv_pad + j) * D;
                uint16_t* vb = packed.vt.data() +
                               static_cast<int64_t>(kv_head) * D * packed.n_kv_pad +
                               (j / kKeyBlock) * D * kKeyBlock;
                for (int d = 0; d < D; ++d) {
                    kr[d] = to_bf16(q[d] > 0 ? 2.0f : -2.0f);
                    vb[d * kKeyBlock + j % kKeyBlock] = to_bf16(100.0f);
                }
            }
        }
        // Positions past n_kv (never to be read) would make a padding key visible.
        std::vector<int32_t> kv_pos(packed.n_kv_pad, 0);
        for (int j = 0; j < c.n_kv; ++j) kv_pos[j] = j;
        AttentionArgs a;
        a.q = q.data();
        a.q_stride = static_cast<int64_t>(n_head) * D;
        a.n_q = n_q;
        a.kv_pos = kv_pos.data();
        a.n_kv = c.n_kv;
        a.n_head = n_head;
        a.n_head_kv = n_head_kv;
        a.head_dim = D;
        a.scale = c.score_scale / std::sqrt(static_cast<float>(D));
        a.bf16 = true;
        for (int kv_head = 0; kv_head < n_head_kv; ++kv_head) {
            AttnTile t;
            t.n_lanes = kAttnLanes;
            t.kv_head = kv_head;
            int32_t min_pos = c.n_kv;
            for (int lane = 0; lane < kAttnLanes; ++lane) {
                t.row[lane] = (lane * 7 + kv_head) % n_q;
                t.head[lane] = kv_head * 2 + lane % 2;
                t.pos[lane] = c.n_kv - 1 - (lane * 5) % std::min(c.n_kv, 40);  // causal masks
                min_pos = std::min(min_pos, t.pos[lane]);
            }
            t.n_vis_min = min_pos + 1;
            t.n_vis_max = c.n_kv;
            std::vector<float> o(static_cast<size_t>(D) * kAttnLanes);
            AttnState st;
            st.o = o.data();
            // All keys in one call, then the same range in two calls, the second resuming.
            const int64_t split = c.n_kv > 64 ? 64 : 32;
            for (int resumed = 0; resumed < 2; ++resumed) {
                if (resumed == 0) {
                    attention_tile_amx(a, packed, t, 0, c.n_kv, st, false);
                } else {
                    attention_tile_amx(a, packed, t, 0, split, st, false);
                    attention_tile_amx(a, packed, t, split, c.n_kv, st, true);
                }
                const double err = max_error(a, packed, t, o, st, c.n_kv);
                if (!tally.record(err, kTolerance)) {
                    std::printf("FAIL head_dim %d n_kv %d kv_head %d %s: max error %g > %g\n", D,
                                c.n_kv, kv_head, resumed ? "resumed" : "one call", err, kTolerance);
                }
            }
            // Lane 0 among other tile-mates (other rows and positions in lanes 1-15, so other
            // block maxima and rescales): its running max, sum and O are the same bits.
            AttnTile t2 = t;
            for (int lane = 1; lane < kAttnLanes; ++lane) {
                t2.row[lane] = (lane * 3 + 1) % n_q;
                t2.pos[lane] = c.n_kv - 1 - (lane * 11) % std::min(c.n_kv, 60);
                t2.n_vis_min = std::min<int64_t>(t2.n_vis_min, t2.pos[lane] + 1);
            }
            std::vector<float> o2(o.size());
            AttnState st2;
            st2.o = o2.data();
            attention_tile_amx(a, packed, t, 0, c.n_kv, st, false);
            attention_tile_amx(a, packed, t2, 0, c.n_kv, st2, false);
            bool same = st.m[0] == st2.m[0] && st.l[0] == st2.l[0];
            for (int d = 0; d < D; ++d) same = same && o[d * kAttnLanes] == o2[d * kAttnLanes];
            if (!tally.record(same ? 0.0 : 1.0, 0.5)) {
                std::printf(
                    "FAIL head_dim %d n_kv %d kv_head %d: lane 0 depends on its tile-mates\n", D,
                    c.n_kv, kv_head);
            }
        }
    }
    return tally.report("attention_amx");
}

}  // namespace lazyllm::kernels::detail
