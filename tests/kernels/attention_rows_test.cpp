// Row-invariant attention (AttentionArgs::row_invariant, set on a prompt step's rows): the last
// rows of a prompt attended in a call of their own, over the cache of the whole prompt, give
// the values those rows get in one call over the whole prompt, bit for bit, on every fast path
// (fp32 tiles on AVX2 and AVX-512, bf16 tiles where the CPU has them), with 1 and 2 threads,
// for prompts short enough for one key pass and long enough for the L2 key chunks. This is
// what makes a prompt continued over a cached prefix (the server's multi-turn cache) answer as
// the same prompt run cold. Sliding windows are not covered on the fp32 path (its tiles start
// their key blocks at the tile's first visible key).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/attention_test_util.h"
#include "kernels/cpu.h"

namespace lazyllm::kernels {
namespace {

using namespace attention_testing;

struct Path {
    Isa isa;
    bool bf16;
};

std::vector<Path> fast_paths() {
    std::vector<Path> out;
    if (cpu_has(Isa::kAvx2)) out.push_back({Isa::kAvx2, false});
    if (cpu_has(Isa::kAvx512)) out.push_back({Isa::kAvx512, false});
    if (cpu_has(Isa::kAvx512) && detect_cpu_features().avx512bf16)
        out.push_back({Isa::kAvx512, true});
    if (cpu_has(Isa::kAmx)) out.push_back({Isa::kAmx, true});
    return out;
}

TEST(AttentionRowInvariant, LastRowsAloneEqualTheWholePromptsRows) {
    const std::vector<Path> paths = fast_paths();
    if (paths.empty()) GTEST_SKIP() << "no AVX2";
    // {n_head, n_head_kv, head_dim}: SmolLM2's 9 / 3 x 64, Gemma 3's 4 / 1 x 256, MHA.
    const Shape shapes[] = {{9, 3, 64}, {4, 1, 256}, {4, 4, 64}};
    for (const Path& path : paths) {
        for (const Shape& s : shapes) {
            for (int32_t n : {40, 1100, 2300}) {  // one key pass; L2 key chunks (fp32; bf16)
                Problem whole = make_problem(iota_pos(n), iota_pos(n), s.n_head, s.n_head_kv,
                                             s.head_dim, 7 + n, {KvType::kF16, false});
                whole.args.bf16 = path.bf16;
                whole.args.row_invariant = true;
                for (int threads : {1, 2}) {
                    std::fill(whole.out.begin(), whole.out.end(), -7.0f);
                    attention({path.isa, threads}, whole.args);
                    for (int32_t rows : {1, 2, 7, 30}) {
                        Problem tail = whole;
                        rebind(tail);
                        const int32_t r0 = n - rows;
                        AttentionArgs& a = tail.args;
                        a.q = tail.q.data() + r0 * a.q_stride;
                        a.q_pos = tail.q_pos.data() + r0;
                        a.n_q = rows;
                        std::fill(tail.out.begin(), tail.out.end(), -7.0f);
                        attention({path.isa, threads}, a);
                        const std::vector<float> want(whole.out.begin() + r0 * a.out_stride,
                                                      whole.out.begin() + n * a.out_stride);
                        const std::vector<float> got(tail.out.begin(),
                                                     tail.out.begin() + rows * a.out_stride);
                        // Padding columns hold -7 in both.
                        EXPECT_EQ(got, want)
                            << isa_name(path.isa) << (path.bf16 ? " bf16" : "") << " "
                            << shape_name(s) << " n=" << n << " rows=" << rows << " t=" << threads;
                    }
                }
            }
        }
    }
}

}  // namespace
}  // namespace lazyllm::kernels
