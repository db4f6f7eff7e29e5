// Workspace: one part per type for the caller and per worker, kept across calls; kernels that
// reuse one workspace across calls of other sizes and kinds give the same bits as kernels with
// a fresh one per call.
#include "kernels/workspace.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "kernels/attention.h"
#include "kernels/attention_test_util.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "support/build.h"
#include "support/random.h"

namespace lazyllm::kernels {
namespace {

using namespace attention_testing;

struct PartA {
    std::vector<int> v;
};
struct PartB {
    std::vector<int> v;
};

TEST(Workspace, OnePartPerTypeKeptAcrossCalls) {
    Workspace ws;
    ws.caller<PartA>().v = {1, 2, 3};
    ws.caller<PartB>().v = {4};
    EXPECT_EQ(ws.caller<PartA>().v, (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(ws.caller<PartB>().v, (std::vector<int>{4}));
    EXPECT_NE(static_cast<void*>(&ws.caller<PartA>()), static_cast<void*>(&ws.caller<PartB>()));
    ws.workers(2);
    ws.worker<PartA>(0).v = {5};
    ws.worker<PartA>(1).v = {6};
    EXPECT_EQ(ws.worker<PartA>(0).v, std::vector<int>{5});
    EXPECT_EQ(ws.worker<PartA>(1).v, std::vector<int>{6});
    EXPECT_EQ(ws.caller<PartA>().v, (std::vector<int>{1, 2, 3}));
    ws.workers(1);  // never shrinks
    EXPECT_EQ(ws.worker<PartA>(1).v, std::vector<int>{6});
    Workspace moved = std::move(ws);
    EXPECT_EQ(moved.caller<PartA>().v, (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(moved.worker<PartA>(1).v, std::vector<int>{6});
}

// Attention (prefill tiles, bf16 where the CPU has it, its key-chunked driver past 2048 keys at
// head_dim 64, decode) with one workspace over calls of growing and shrinking sizes: the same
// output as a fresh workspace per call. The sanitizer build runs 3 heads on 1 K/V head (not 9
// on 3): the same buffers, a third of the work.
TEST(Workspace, AttentionReusingOneWorkspaceMatchesFreshOnes) {
    const Isa isa = best_isa(detect_cpu_features());
    if (isa == Isa::kRef) GTEST_SKIP() << "no SIMD attention";
    const int n_kv_head = lazyllm::testing::kSanitized ? 1 : 3;
    Workspace ws;
    for (const bool bf16 : {false, true}) {
        for (const int n : {300, 40, 2600, 1, 1200, 2600}) {
            Problem shared = make_problem(iota_pos(n), iota_pos(n), 3 * n_kv_head, n_kv_head, 64, 5,
                                          kLayouts[0]);
            shared.args.bf16 = bf16;
            Problem fresh = shared;
            rebind(shared);
            rebind(fresh);
            attention({isa, 2, &ws}, shared.args);
            attention({isa, 2}, fresh.args);
            EXPECT_EQ(shared.out, fresh.out) << "n " << n << (bf16 ? " bf16" : " fp32");
        }
    }
}

// PackedLinear with one workspace over other row counts and strides: the same output as
// without one.
TEST(Workspace, LinearReusingOneWorkspaceMatchesFreshOnes) {
    const KernelContext ctx{best_isa(detect_cpu_features()), 2};
    const int64_t n_in = 64, n_out = 96;
    const auto w = test::random_vec(static_cast<size_t>(n_in * n_out), 1);
    auto lin = PackedLinear::create(ctx, w.data(), n_out, n_in, nullptr, GemmPrecision::kAuto);
    ASSERT_TRUE(lin.ok()) << lin.error().message();
    Workspace ws;
    for (const int64_t m : {33, 5, 70, 1}) {
        for (const int64_t ldx : {n_in, n_in + 16}) {
            const auto x = test::random_vec(static_cast<size_t>(m * ldx), 2);
            std::vector<float> y_shared(static_cast<size_t>(m * (n_out + 8)), 0.5f);
            std::vector<float> y_fresh = y_shared;
            lin->forward(x.data(), m, y_shared.data(), ldx, n_out + 8, true, &ws);
            lin->forward(x.data(), m, y_fresh.data(), ldx, n_out + 8, true);
            EXPECT_EQ(y_shared, y_fresh) << "m " << m << " ldx " << ldx;
        }
    }
}

}  // namespace
}  // namespace lazyllm::kernels
