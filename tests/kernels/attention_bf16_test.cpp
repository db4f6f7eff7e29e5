// The bf16 attention tiles (AttentionArgs::bf16): VDPBF16PS on an AVX-512-BF16 CPU and AMX,
// against the fp32 reference within the bf16 tolerance, on full prefixes, sparse key sets,
// the key-split and the L2-chunked drivers, scores that force rescales (inside a call and at
// the start of a resumed one), sliding windows, every K/V layout and head_dim 32-256. Each
// check also makes sure the bf16 kernel ran: its output differs from the fp32 kernel's.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/attention_test_util.h"
#include "kernels/cpu.h"

namespace lazyllm::kernels {
namespace {

using namespace attention_testing;

// The contexts whose prefill has bf16 tiles on this CPU: AVX-512 with AVX-512-BF16, AMX.
std::vector<Isa> bf16_isas() {
    std::vector<Isa> out;
    if (cpu_has(Isa::kAvx512) && detect_cpu_features().avx512bf16) out.push_back(Isa::kAvx512);
    if (cpu_has(Isa::kAmx)) out.push_back(Isa::kAmx);
    return out;
}

std::string isa_label(Isa isa) { return std::string(isa_name(isa)) + " bf16 "; }

// check_against_ref at the bf16 tolerance with AttentionArgs::bf16 set, and the proof that
// the call took a bf16 path: the fp32 kernels' output is not the same.
void check_bf16(Problem p, Isa isa, std::initializer_list<int> threads, const std::string& what) {
    p.args.bf16 = true;
    check_against_ref(p, isa, threads, kBf16Tol, kBf16MeanTol, isa_label(isa) + what);
    rebind(p);
    attention({isa, 2}, p.args);
    Problem fp32 = p;
    rebind(fp32);
    fp32.args.bf16 = false;
    attention({Isa::kAvx512, 2}, fp32.args);
    EXPECT_NE(p.out, fp32.out) << isa_label(isa) << what << ": no bf16 kernel ran";
}

const Shape kBf16Shapes[] = {{4, 4, 64},  {9, 3, 64}, {8, 2, 64}, {4, 1, 128},
                             {8, 2, 128}, {4, 2, 32}, {6, 2, 96}, {4, 1, 256}};

TEST(AttentionBf16, PrefillAndSparse) {
    const std::vector<Isa> isas = bf16_isas();
    if (isas.empty()) GTEST_SKIP() << "no AVX-512-BF16";
    for (Isa isa : isas) {
        for (const Layout& l : heavy_check_layouts()) {
            for (const Shape& s : kBf16Shapes) {
                // AMX tiles take head_dim 64, 128, 256 (the others: VDPBF16PS).
                // 130 queries: >= 64 query vectors per KV head, the bf16 threshold.
                check_bf16(make_problem(iota_pos(130), iota_pos(130), s.n_head, s.n_head_kv,
                                        s.head_dim, 6, l),
                           isa, {2}, "prefill " + shape_name(s));
                std::vector<int32_t> kv = random_subset(2000, 400, 7);
                std::vector<int32_t> q = random_subset(2000, 80, 8);
                q.push_back(kv.front() > 0 ? kv.front() - 1 : 0);  // sees no key: zeros
                check_bf16(make_problem(q, kv, s.n_head, s.n_head_kv, s.head_dim, 9, l), isa, {1},
                           "sparse " + shape_name(s));
            }
            // Few tiles over many keys with 4 threads: the key-split path.
            std::vector<int32_t> q_late = iota_pos(64);
            for (int32_t& e : q_late) e += 3936;
            check_bf16(make_problem(q_late, random_subset(4000, 2500, 10), 1, 1, 64, 11, l), isa,
                       {4}, "split");
        }
    }
}

// Scores growing along the keys raise the running max again and again.
TEST(AttentionBf16, LargeScoresRescale) {
    const std::vector<Isa> isas = bf16_isas();
    if (isas.empty()) GTEST_SKIP() << "no AVX-512-BF16";
    for (Isa isa : isas) {
        Problem p = make_problem(iota_pos(256), iota_pos(256), 4, 1, 64, 12);
        for (int64_t j = 0; j < p.args.n_kv; ++j) {
            for (int c = 0; c < 64; ++c)
                p.k[j * p.args.kv_stride + c] *= 0.05f * static_cast<float>(j % 97);
        }
        check_bf16(p, isa, {2}, "rescale");
    }
}

// Prefill over more keys than one L2 chunk of the driver (2048 keys at head_dim 64, 1024 at
// 128) with enough tiles for the chunked path: each tile resumes its state chunk by chunk.
// Dense and sparse keys, every layout (heavy_check_layouts).
TEST(AttentionBf16, KeyChunksMatchReference) {
    const std::vector<Isa> isas = bf16_isas();
    if (isas.empty()) GTEST_SKIP() << "no AVX-512-BF16";
    for (Isa isa : isas) {
        for (const Layout& l : heavy_check_layouts()) {
            for (int d : {64, 128}) {
                // The sanitizer build: head_dim 64 only (128 takes the same chunk loop).
                if (lazyllm::testing::kSanitized && d == 128) continue;
                std::vector<int32_t> q(150);
                std::iota(q.begin(), q.end(), 2450);
                check_bf16(make_problem(q, iota_pos(2600), 4, 1, d, 14, l), isa, {1, 2},
                           "chunks dense d=" + std::to_string(d));
                check_bf16(make_problem(random_subset(7000, 100, 15), random_subset(7000, 2700, 16),
                                        8, 2, d, 17, l),
                           isa, {2}, "chunks sparse d=" + std::to_string(d));
            }
        }
    }
}

// Keys whose scores jump far above everything before them, at the first block of a later
// chunk (where a resumed call must rescale the O it was handed) and inside one.
TEST(AttentionBf16, KeyChunksRescaleResumedState) {
    const std::vector<Isa> isas = bf16_isas();
    if (isas.empty()) GTEST_SKIP() << "no AVX-512-BF16";
    for (Isa isa : isas) {
        for (int d : {64, 128}) {
            std::vector<int32_t> q(150);
            std::iota(q.begin(), q.end(), 2450);
            Problem p = make_problem(q, iota_pos(2600), 4, 1, d, 18);
            for (int64_t i = 0; i < p.args.n_q; ++i) {
                for (int h = 0; h < p.args.n_head; ++h) p.q[i * p.args.q_stride + h * d] = 4.0f;
            }
            for (int64_t j : {1029, 2053, 2300}) p.k[j * p.args.kv_stride] = 40.0f;
            check_bf16(p, isa, {1, 2}, "chunk rescale d=" + std::to_string(d));
        }
    }
}

// Sliding windows (Gemma 3's local layers, AMX contexts included: the AMX tiles have none, the
// VDPBF16PS ones mask them): windows shorter than a tile, than a key block and than the
// context; unaligned first keys of the chunked driver (a long context with a window); a
// pruned step.
TEST(AttentionBf16, SlidingWindowsMatchReference) {
    const std::vector<Isa> isas = bf16_isas();
    if (isas.empty()) GTEST_SKIP() << "no AVX-512-BF16";
    for (Isa isa : isas) {
        for (const Layout& l : heavy_check_layouts()) {
            for (int32_t w : {1, 5, 37, 4096}) {
                Problem p = make_problem(iota_pos(150), iota_pos(150), 8, 2, 64, 31, l);
                p.args.window = w;
                check_bf16(p, isa, {1, 2}, "prefill window " + std::to_string(w));
            }
            for (int32_t w : {100, 512}) {
                // 1200 keys > 512, one chunk at head_dim 256.
                Problem p = make_problem(iota_pos(1200), iota_pos(1200), 2, 1, 256, 38, l);
                p.args.window = w;
                check_bf16(p, isa, {2}, "long prefill window " + std::to_string(w));
            }
            std::vector<int32_t> kv = random_subset(1000, 300, 32);
            std::vector<int32_t> q = random_subset(1000, 80, 33);
            Problem sparse = make_problem(q, kv, 6, 2, 64, 35, l);
            sparse.args.window = 50;
            check_bf16(sparse, isa, {2}, "sparse window 50");
        }
    }
}

// Sliding-window layers on AMX run the AMX tiles, not the VDPBF16PS kernel (whose sums come in
// another order): windows that start inside a key block, the chunked path (2000 keys of
// head_dim 256) and sparse keys.
TEST(AttentionBf16, AmxRunsSlidingWindows) {
    if (!cpu_has(Isa::kAmx) || !detect_cpu_features().avx512bf16) GTEST_SKIP() << "no AMX";
    struct Case {
        int n, n_head, n_head_kv, head_dim, window;
    };
    for (const Case& c :
         {Case{150, 8, 2, 64, 37}, Case{2000, 4, 1, 256, 512}, Case{600, 4, 1, 128, 100}}) {
        Problem amx =
            make_problem(iota_pos(c.n), iota_pos(c.n), c.n_head, c.n_head_kv, c.head_dim, 41);
        amx.args.window = c.window;
        check_bf16(amx, Isa::kAmx, {1, 2}, "window " + std::to_string(c.window));
        amx.args.bf16 = true;
        Problem vdp = amx;
        rebind(amx);
        rebind(vdp);
        attention({Isa::kAmx, 2}, amx.args);
        attention({Isa::kAvx512, 2}, vdp.args);
        EXPECT_NE(amx.out, vdp.out) << "window " << c.window << ": AMX did not run";
    }
    std::vector<int32_t> kv = random_subset(1000, 300, 42);
    Problem sparse = make_problem(random_subset(1000, 80, 43), kv, 6, 2, 64, 44);
    sparse.args.window = 50;
    check_bf16(sparse, Isa::kAmx, {2}, "sparse window 50");
}

// Below the bf16 threshold (few query vectors) and with bf16 unset the fp32 kernels run:
// the output is the fp32 AVX-512 kernel's, bit for bit.
TEST(AttentionBf16, SmallCallsAndUnsetFlagStayFp32) {
    const std::vector<Isa> isas = bf16_isas();
    if (isas.empty()) GTEST_SKIP() << "no AVX-512-BF16";
    for (Isa isa : isas) {
        for (bool bf16 : {false, true}) {
            const int32_t n = bf16 ? 20 : 130;  // 20 x 3 = 60 query vectors per KV head
            Problem p = make_problem(iota_pos(n), iota_pos(n), 9, 3, 64, 40);
            p.args.bf16 = bf16;
            Problem want = p;
            rebind(want);
            want.args.bf16 = false;
            attention({isa, 2}, p.args);
            attention({Isa::kAvx512, 2}, want.args);
            EXPECT_EQ(p.out, want.out) << isa_label(isa) << "n=" << n << " bf16=" << bf16;
        }
    }
}

}  // namespace
}  // namespace lazyllm::kernels
