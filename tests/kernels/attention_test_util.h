// Attention test problems shared by attention_test.cpp and attention_avx2_test.cpp: random
// Q/K/V in every K/V layout (fp32 or f16, dense or indexed rows), with padded strides, and the
// comparison of a fast path against the reference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/cpu.h"
#include "kernels/gemm_convert.h"
#include "kernels/quant_blocks.h"
#include "support/build.h"

namespace lazyllm::kernels::attention_testing {

inline bool cpu_has(Isa isa) { return isa_supported(isa, detect_cpu_features()); }

// How K/V are stored: element type, dense rows [0, n_kv) or rows by index, and each row's kv
// heads side by side or each head's rows in a block of their own (AttentionArgs::
// kv_head_stride, the model's KvCache).
struct Layout {
    KvType type = KvType::kF32;
    bool indexed = false;
    bool head_blocks = false;
};

inline const Layout kLayouts[] = {{KvType::kF32, false},       {KvType::kF32, true},
                                  {KvType::kF16, false},       {KvType::kF16, true},
                                  {KvType::kF32, false, true}, {KvType::kF16, true, true}};

// The layouts of the heaviest checks (thousands of keys, or many shapes): all six in release.
// The sanitizer build, which checks memory accesses rather than numerics and runs the scalar
// reference several times slower, takes dense fp32 rows and indexed f16 rows and head blocks:
// both element types, both row modes, both head layouts.
inline std::span<const Layout> heavy_check_layouts() {
    static const Layout kSanitizedLayouts[] = {kLayouts[0], kLayouts[3], kLayouts[5]};
    if (lazyllm::testing::kSanitized) return kSanitizedLayouts;
    return kLayouts;
}

inline std::string layout_name(const Layout& l) {
    return std::string(l.type == KvType::kF16 ? "f16" : "f32") + (l.indexed ? "/indexed" : "") +
           (l.head_blocks ? "/head blocks" : "");
}

// Owns the buffers of one attention problem. k/v hold the fp32 values (already rounded to
// f16 when the layout is f16); k16/v16 their half bits.
struct Problem {
    std::vector<float> q, k, v, out;
    std::vector<uint16_t> k16, v16;
    std::vector<int32_t> q_pos, kv_pos, kv_row;
    Layout layout;
    AttentionArgs args;
};

// Points args at this Problem's own buffers (after a copy or an edit of k/v).
inline void rebind(Problem& p) {
    AttentionArgs& a = p.args;
    const bool f16 = p.layout.type == KvType::kF16;
    if (f16) {
        p.k16.resize(p.k.size());
        p.v16.resize(p.v.size());
        for (size_t i = 0; i < p.k.size(); ++i) {
            p.k16[i] = quant::fp32_to_fp16_scalar(p.k[i]);
            p.v16[i] = quant::fp32_to_fp16_scalar(p.v[i]);
        }
    }
    a.q = p.q.data();
    a.q_pos = p.q_pos.data();
    a.k = f16 ? static_cast<const void*>(p.k16.data()) : p.k.data();
    a.v = f16 ? static_cast<const void*>(p.v16.data()) : p.v.data();
    a.kv_type = p.layout.type;
    a.kv_row = p.layout.indexed ? p.kv_row.data() : nullptr;
    a.kv_pos = p.kv_pos.data();
    a.out = p.out.data();
}

// K/V of rows of side-by-side heads ([n_rows, kv_stride]) as one block per head: [n_head_kv,
// head_stride] with head_stride = n_rows * head_dim + 3 (the gap holds 100s, far outside the
// values, so that a read into it shows).
inline std::vector<float> to_head_blocks(const std::vector<float>& rows, int64_t n_rows,
                                         int64_t kv_stride, int n_head_kv, int head_dim) {
    const int64_t head_stride = n_rows * head_dim + 3;
    std::vector<float> out(std::max<int64_t>(1, n_head_kv * head_stride), 100.0f);
    for (int g = 0; g < n_head_kv; ++g) {
        for (int64_t r = 0; r < n_rows; ++r) {
            std::copy_n(rows.begin() + r * kv_stride + g * head_dim, head_dim,
                        out.begin() + g * head_stride + r * head_dim);
        }
    }
    return out;
}

// Queries at q_pos, keys at kv_pos (sorted); strides padded to catch stride bugs. Indexed
// layouts put key j at row kv_row[j] of a cache three times larger (sorted random rows, not
// the positions, so that rows and positions cannot be mixed up); the other rows hold garbage.
inline Problem make_problem(std::vector<int32_t> q_pos, std::vector<int32_t> kv_pos, int n_head,
                            int n_head_kv, int head_dim, uint32_t seed, Layout layout = {}) {
    Problem p;
    p.layout = layout;
    p.q_pos = std::move(q_pos);
    p.kv_pos = std::move(kv_pos);
    const int64_t n_q = static_cast<int64_t>(p.q_pos.size());
    const int64_t n_kv = static_cast<int64_t>(p.kv_pos.size());
    const int64_t q_stride = static_cast<int64_t>(n_head) * head_dim + 3;
    const int64_t kv_stride = static_cast<int64_t>(n_head_kv) * head_dim + 5;
    const int64_t out_stride = static_cast<int64_t>(n_head) * head_dim + 7;
    std::mt19937 rng(seed);
    const int64_t n_rows = layout.indexed ? 3 * n_kv + 1 : n_kv;
    if (layout.indexed) {
        p.kv_row.resize(n_rows);
        std::iota(p.kv_row.begin(), p.kv_row.end(), 0);
        std::shuffle(p.kv_row.begin(), p.kv_row.end(), rng);
        p.kv_row.resize(n_kv);
        std::sort(p.kv_row.begin(), p.kv_row.end());
    }
    // Uniform in [-1, 1) from a 32-bit LCG: cheap enough for caches of thousands of rows.
    uint32_t state = seed * 2654435761u + 1;
    auto fill = [&](std::vector<float>& x, int64_t n) {
        x.resize(n);
        for (float& e : x) {
            state = state * 1664525u + 1013904223u;
            e = static_cast<float>(static_cast<int32_t>(state)) * 0x1p-31f;
        }
    };
    fill(p.q, n_q * q_stride);
    fill(p.k, std::max<int64_t>(1, n_rows * kv_stride));
    fill(p.v, std::max<int64_t>(1, n_rows * kv_stride));
    // Scale queries up so that softmax rows are peaked, not near-uniform.
    for (float& e : p.q) e *= 4.0f;
    if (layout.type == KvType::kF16) {
        for (float& e : p.k) e = quant::fp16_to_fp32_scalar(quant::fp32_to_fp16_scalar(e));
        for (float& e : p.v) e = quant::fp16_to_fp32_scalar(quant::fp32_to_fp16_scalar(e));
    }
    p.out.assign(n_q * out_stride, -7.0f);
    AttentionArgs& a = p.args;
    a.n_q = n_q;
    a.q_stride = q_stride;
    a.n_kv = n_kv;
    a.kv_stride = kv_stride;
    if (layout.head_blocks) {
        p.k = to_head_blocks(p.k, n_rows, kv_stride, n_head_kv, head_dim);
        p.v = to_head_blocks(p.v, n_rows, kv_stride, n_head_kv, head_dim);
        a.kv_stride = head_dim;
        a.kv_head_stride = n_rows * head_dim + 3;
    }
    a.n_head = n_head;
    a.n_head_kv = n_head_kv;
    a.head_dim = head_dim;
    a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    a.out_stride = out_stride;
    rebind(p);
    return p;
}

// The same problem with K/V gathered into dense fp32 rows of side-by-side heads (the
// pre-index, pre-f16, pre-head-block form).
inline Problem dense_f32(const Problem& src) {
    Problem p = src;
    p.layout = {};
    if (src.layout.indexed || src.layout.head_blocks) {
        const AttentionArgs& a = src.args;
        const int d = a.head_dim;
        const int64_t stride = static_cast<int64_t>(a.n_head_kv) * d + 5;
        p.args.kv_stride = stride;
        p.args.kv_head_stride = 0;
        p.k.assign(std::max<int64_t>(1, a.n_kv * stride), 0.0f);
        p.v.assign(p.k.size(), 0.0f);
        for (int64_t j = 0; j < a.n_kv; ++j) {
            const int64_t r = src.layout.indexed ? src.kv_row[j] : j;
            for (int g = 0; g < a.n_head_kv; ++g) {
                const int64_t from = r * a.kv_stride + kv_head_offset(a, g);
                std::copy_n(src.k.begin() + from, d, p.k.begin() + j * stride + g * d);
                std::copy_n(src.v.begin() + from, d, p.v.begin() + j * stride + g * d);
            }
        }
    }
    rebind(p);
    return p;
}

inline std::vector<int32_t> iota_pos(int32_t n) {
    std::vector<int32_t> v(n);
    std::iota(v.begin(), v.end(), 0);
    return v;
}

// Sorted random subset of [0, range) of the given size.
inline std::vector<int32_t> random_subset(int32_t range, int32_t size, uint32_t seed) {
    std::vector<int32_t> all = iota_pos(range);
    std::mt19937 rng(seed);
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(size);
    std::sort(all.begin(), all.end());
    return all;
}

// Runs ref once and the kernel of `isa` with each thread count; compares the head_dim outputs
// of every (row, head).
inline void check_against_ref(Problem p, Isa isa, std::initializer_list<int> thread_counts,
                              float abs_tol, float mean_tol, const std::string& what_in) {
    rebind(p);
    Problem want = p;
    rebind(want);
    ref::attention(want.args);
    for (int n_threads : thread_counts) {
        const std::string what =
            what_in + " [" + layout_name(p.layout) + ", " + std::to_string(n_threads) + " threads]";
        std::fill(p.out.begin(), p.out.end(), -7.0f);
        attention({isa, n_threads}, p.args);
        const AttentionArgs& a = p.args;
        double err_sum = 0.0;
        int64_t count = 0;
        for (int64_t i = 0; i < a.n_q; ++i) {
            for (int64_t c = 0; c < a.out_stride; ++c) {
                const float w = want.out[i * a.out_stride + c];
                const float g = p.out[i * a.out_stride + c];
                if (c >= static_cast<int64_t>(a.n_head) * a.head_dim) {
                    ASSERT_EQ(g, -7.0f) << what << ": wrote into the row padding";
                    continue;
                }
                ASSERT_NEAR(g, w, abs_tol) << what << " row " << i << " col " << c;
                err_sum += std::fabs(g - w);
                ++count;
            }
        }
        EXPECT_LE(err_sum / std::max<int64_t>(1, count), mean_tol) << what;
    }
}

inline constexpr float kFp32Tol = 2e-5f;  // outputs are convex combinations of values in [-1, 1]
// bf16 inputs (Q, K, V, P rounded to 8 significant bits) with scores of magnitude ~5 in the
// tests: a few parts in 1e3 per element, averaging out over the keys.
inline constexpr float kBf16Tol = 3e-2f;
inline constexpr float kBf16MeanTol = 3e-3f;

struct Shape {
    int n_head, n_head_kv, head_dim;
};

// GQA groups 1 to 6 (every lane count of the keys-in-lanes kernel); head_dim 64, 128, 80, 256.
inline const Shape kShapes[] = {{4, 4, 64}, {9, 3, 64},  {8, 2, 64},   {4, 1, 128}, {8, 2, 128},
                                {6, 2, 80}, {10, 2, 64}, {12, 2, 128}, {4, 2, 256}};

inline std::string shape_name(const Shape& s) {
    return std::to_string(s.n_head) + "/" + std::to_string(s.n_head_kv) + "x" +
           std::to_string(s.head_dim);
}

// One problem per fast path, run on 4 threads: prefill tiles, decode, key split (4 tiles on 4
// threads: keys split across threads, partial states merged), AMX key chunks (more keys than
// one L2 chunk).
inline std::vector<Problem> path_problems(uint32_t seed) {
    std::vector<Problem> problems;
    problems.push_back(make_problem(iota_pos(130), iota_pos(130), 6, 2, 64, seed));
    problems.push_back(make_problem({1999}, iota_pos(2000), 6, 2, 64, seed + 1));
    std::vector<int32_t> q_late = iota_pos(64);
    for (int32_t& e : q_late) e += 3936;
    problems.push_back(
        make_problem(q_late, random_subset(4000, 2500, seed + 2), 1, 1, 64, seed + 3));
    std::vector<int32_t> q_long(150);
    std::iota(q_long.begin(), q_long.end(), 2450);
    problems.push_back(make_problem(q_long, iota_pos(2600), 4, 1, 64, seed + 4));
    return problems;
}

// Checks shared by the fp32 fast paths (AVX2, AVX-512), each against the reference on every
// layout, on the given thread counts.

// A pruned step: 211 of 1000 positions kept; queries anywhere, unsorted, one before the first
// key (zero output).
inline void check_sparse_keys(Isa isa, std::initializer_list<int> threads) {
    for (const Layout& l : kLayouts) {
        for (const Shape& s : kShapes) {
            for (uint32_t seed : {1u, 2u}) {
                std::vector<int32_t> kv = random_subset(1000, 211, seed);
                std::vector<int32_t> q = random_subset(1000, 37, seed + 10);
                std::shuffle(q.begin(), q.end(), std::mt19937(seed));
                q.push_back(kv.front() > 0 ? kv.front() - 1 : 0);
                check_against_ref(make_problem(q, kv, s.n_head, s.n_head_kv, s.head_dim, seed, l),
                                  isa, threads, kFp32Tol, kFp32Tol,
                                  "sparse seed " + std::to_string(seed) + " " + shape_name(s));
            }
        }
    }
}

// Decode shapes: a new token at the end of a long sparse key set, plus 0-8 revived ones
// (earlier tokens: the last keys, or keys anywhere before), so that a KV head has 1-54 query
// vectors: keys in lanes in one or several tiles of up to 6 lanes, and past 48 the 16-lane
// tile kernel; over 512 keys two threads split them.
inline void check_decode(Isa isa, std::initializer_list<int> threads) {
    for (const Layout& l : heavy_check_layouts()) {
        for (const Shape& s : kShapes) {
            for (int n_q : {1, 2, 3, 5, 9}) {
                std::vector<int32_t> kv = random_subset(3000, 1100 + 37 * n_q, 4 + n_q);
                std::vector<int32_t> q(kv.end() - n_q, kv.end());
                if (n_q > 3) {  // revived rows spread over the context
                    for (int i = 0; i + 1 < n_q; ++i) q[i] = kv[(i * 7919 + 13) % (kv.size() - 1)];
                    std::sort(q.begin(), q.end() - 1);
                }
                check_against_ref(make_problem(q, kv, s.n_head, s.n_head_kv, s.head_dim, 5, l),
                                  isa, threads, kFp32Tol, kFp32Tol,
                                  "decode n_q=" + std::to_string(n_q) + " " + shape_name(s));
            }
        }
    }
}

// One query over 3000 keys: few tiles, so the keys are split across threads (chunks of
// unequal count with 3 threads).
inline void check_decode_split_keys(Isa isa, std::initializer_list<int> threads) {
    for (const Layout& l : heavy_check_layouts()) {
        for (const Shape& s : {kShapes[1], kShapes[3]}) {
            check_against_ref(make_problem({5000}, random_subset(5000, 3000, 4), s.n_head,
                                           s.n_head_kv, s.head_dim, 5, l),
                              isa, threads, kFp32Tol, kFp32Tol, "decode split");
        }
    }
}

// A prefill over more keys than one L2 chunk of the driver (1024 keys at head_dim 64, 512 at
// 128) with enough tiles for the chunked path, each tile resuming its state chunk by chunk.
// 149 rows x 4 heads leave a last tile of 4 lanes (keys in lanes, all keys at once). Dense and
// sparse keys, every layout (heavy_check_layouts); then scores that jump far above everything
// before them at the first block of a later chunk (a resumed call rescales the O it was handed) and
// inside one.
inline void check_key_chunks(Isa isa, std::initializer_list<int> threads) {
    std::vector<int32_t> q(149);
    std::iota(q.begin(), q.end(), 2451);
    // The sanitizer build checks head_dim 64 only: 128 takes the same chunk loop, twice the work.
    for (int d : {64, 128}) {
        if (lazyllm::testing::kSanitized && d == 128) continue;
        const std::string dim = " d=" + std::to_string(d);
        for (const Layout& l : heavy_check_layouts()) {
            check_against_ref(make_problem(q, iota_pos(2600), 4, 1, d, 14, l), isa, threads,
                              kFp32Tol, kFp32Tol, "chunks dense" + dim);
            check_against_ref(make_problem(random_subset(7000, 100, 15),
                                           random_subset(7000, 2700, 16), 8, 2, d, 17, l),
                              isa, threads, kFp32Tol, kFp32Tol, "chunks sparse" + dim);
        }
        Problem p = make_problem(q, iota_pos(2600), 4, 1, d, 18);
        for (int64_t i = 0; i < p.args.n_q; ++i) {
            for (int h = 0; h < p.args.n_head; ++h) p.q[i * p.args.q_stride + h * d] = 4.0f;
        }
        for (int64_t j : {1029, 1536, 2053, 2300}) p.k[j * p.args.kv_stride] = 40.0f;
        check_against_ref(p, isa, threads, kFp32Tol, kFp32Tol, "chunk rescale" + dim);
    }
}

// Indexed rows and f16 storage change only where the values come from: the fast kernels give
// bit for bit the output of the same values stored as dense fp32 rows.
inline void check_indexed_f16_equals_dense_f32(Isa isa) {
    for (const Layout& l : kLayouts) {
        for (int n_q : {1, 40}) {
            std::vector<int32_t> kv = random_subset(3000, 900, 21);
            std::vector<int32_t> q(kv.end() - n_q, kv.end());
            Problem p = make_problem(q, kv, 9, 3, 64, 22, l);
            Problem d = dense_f32(p);
            attention({isa, 2}, p.args);
            attention({isa, 2}, d.args);
            EXPECT_EQ(p.out, d.out) << layout_name(l) << " n_q=" << n_q;
        }
    }
}

// out16 (the bf16 path's output) holds exactly the bf16 rounding of what the same call writes
// to out, row padding included (left alone in both).
inline void check_bf16_output_is_rounded_fp32(std::vector<Problem>& problems, Isa isa,
                                              int threads) {
    for (size_t k = 0; k < problems.size(); ++k) {
        Problem& p = problems[k];
        rebind(p);
        const AttentionArgs& a = p.args;
        const int64_t width = static_cast<int64_t>(a.n_head) * a.head_dim;
        attention({isa, threads}, p.args);
        std::vector<uint16_t> want(static_cast<size_t>(a.n_q * a.out_stride), 0xBEEF);
        detail::convert_rows_to_bf16_ref(p.out.data(), a.n_q, width, a.out_stride, want.data(),
                                         a.out_stride);
        std::vector<uint16_t> got(want.size(), 0xBEEF);
        AttentionArgs b = p.args;
        b.out = nullptr;
        b.out16 = got.data();
        attention({isa, threads}, b);
        EXPECT_EQ(got, want) << "problem " << k << ", isa " << static_cast<int>(isa);
    }
}

// Sliding windows (Gemma 3's local layers): a full prefix prefill with windows shorter than
// a tile, than a key block and than the context; a pruned step (sparse keys, unsorted
// queries); decode over a long context (keys split across threads).
inline void check_windows(Isa isa, std::initializer_list<int> threads) {
    for (const Layout& l : kLayouts) {
        for (int32_t w : {1, 5, 37, 4096}) {
            Problem p = make_problem(iota_pos(150), iota_pos(150), 8, 2, 64, 31, l);
            p.args.window = w;
            check_against_ref(p, isa, threads, kFp32Tol, kFp32Tol,
                              "prefill window " + std::to_string(w));
        }
        std::vector<int32_t> kv = random_subset(1000, 300, 32);
        std::vector<int32_t> q = random_subset(1000, 40, 33);
        std::shuffle(q.begin(), q.end(), std::mt19937(34));
        Problem sparse = make_problem(q, kv, 6, 2, 64, 35, l);
        sparse.args.window = 50;
        check_against_ref(sparse, isa, threads, kFp32Tol, kFp32Tol, "sparse window 50");
        for (int n_q : {1, 3, 6}) {  // 6: five revived rows far apart, windows apart
            std::vector<int32_t> keys = random_subset(3000, 1500, 36);
            std::vector<int32_t> last(keys.end() - n_q, keys.end());
            if (n_q == 6)
                last = {keys[40], keys[300], keys[700], keys[1100], keys[1400], keys.back()};
            Problem d = make_problem(last, keys, 4, 1, 256, 37, l);
            d.args.window = 512;
            check_against_ref(d, isa, threads, kFp32Tol, kFp32Tol,
                              "decode window 512, n_q " + std::to_string(n_q));
        }
    }
}

}  // namespace lazyllm::kernels::attention_testing
