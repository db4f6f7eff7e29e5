// Row-invariant attention (AttentionArgs::row_invariant, set on a prompt step's rows): the last
// rows of a prompt attended in a call of their own, over the cache of the whole prompt, give
// the values those rows get in one call over the whole prompt, bit for bit, on every fast path
// (fp32 tiles on AVX2 and AVX-512, bf16 tiles where the CPU has them), with 1 and 2 threads,
// for prompts short enough for one key pass and long enough for the L2 key chunks, with and
// without a sliding window; and the first rows of a prompt, run as a prompt of their own (fewer
// keys: one pass where the longer prompt's rows take L2 chunks), equal the same rows of the
// longer prompt, at another thread count. This is what makes a prompt continued over a cached
// prefix (the server's multi-turn cache) answer as the same prompt run cold.
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

// Rows [r0, r0 + rows) of `whole` (row_invariant, its output computed), attended alone over the
// first n_kv keys with `threads`: the whole call's values, bit for bit.
void expect_rows_alone(const Problem& whole, const Path& path, int64_t r0, int32_t rows,
                       int64_t n_kv, int threads, const std::string& what) {
    Problem part = whole;
    rebind(part);
    AttentionArgs& a = part.args;
    a.q = part.q.data() + r0 * a.q_stride;
    a.q_pos = part.q_pos.data() + r0;
    a.n_q = rows;
    a.n_kv = n_kv;
    std::fill(part.out.begin(), part.out.end(), -7.0f);
    attention({path.isa, threads}, a);
    const std::vector<float> want(whole.out.begin() + r0 * a.out_stride,
                                  whole.out.begin() + (r0 + rows) * a.out_stride);
    const std::vector<float> got(part.out.begin(), part.out.begin() + rows * a.out_stride);
    // Padding columns hold -7 in both.
    EXPECT_EQ(got, want) << isa_name(path.isa) << (path.bf16 ? " bf16 " : " ") << what << " rows "
                         << r0 << "+" << rows << " over " << n_kv << " keys, t=" << threads;
}

void check_rows(const Path& path, const Shape& s, int32_t n, int32_t window) {
    Problem whole = make_problem(iota_pos(n), iota_pos(n), s.n_head, s.n_head_kv, s.head_dim, 7 + n,
                                 {KvType::kF16, false});
    whole.args.bf16 = path.bf16;
    whole.args.row_invariant = true;
    whole.args.window = window;
    const std::string what =
        shape_name(s) + " n=" + std::to_string(n) + " window=" + std::to_string(window);
    for (int threads : {1, 2}) {
        std::fill(whole.out.begin(), whole.out.end(), -7.0f);
        attention({path.isa, threads}, whole.args);
        for (int32_t rows : {1, 2, 7, 30}) {  // the last rows, over every key
            expect_rows_alone(whole, path, n - rows, rows, n, threads, what);
        }
        // The first rows as a prompt of their own (their keys only), at the other thread count.
        for (int32_t first : {17, 500}) {
            if (first < n) expect_rows_alone(whole, path, 0, first, first, 3 - threads, what);
        }
    }
}

TEST(AttentionRowInvariant, RowsAloneEqualTheSameRowsOfALongerPrompt) {
    const std::vector<Path> paths = fast_paths();
    if (paths.empty()) GTEST_SKIP() << "no AVX2";
    // {n_head, n_head_kv, head_dim}: SmolLM2's 9 / 3 x 64, Gemma 3's 4 / 1 x 256, MHA.
    const Shape shapes[] = {{9, 3, 64}, {4, 1, 256}, {4, 4, 64}};
    for (const Path& path : paths) {
        for (const Shape& s : shapes) {
            for (int32_t window : {0, 300}) {
                for (int32_t n : {40, 1100, 2300}) {  // one key pass; L2 key chunks (fp32; bf16)
                    check_rows(path, s, n, window);
                }
            }
        }
    }
}

}  // namespace
}  // namespace lazyllm::kernels
