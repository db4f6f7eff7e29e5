// What the Session tests share: tiny random models written as GGUFs and loaded on this CPU's
// kernels, prompts of random ids, greedy steps, and a LazyLLM schedule with the invariant
// checks on.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/gemm.h"
#include "model/llama_model.h"
#include "runtime/session.h"
#include "support/cpu.h"
#include "support/tiny_model.h"

namespace lazyllm::testing {

// Writes `spec` as lazyllm_session_<tag>.gguf in the test's temp folder and loads it.
inline std::unique_ptr<LlamaModel> load_session_model(const TinyModelSpec& spec,
                                                      const std::string& tag,
                                                      kernels::GemmPrecision precision) {
    const std::string path = ::testing::TempDir() + "lazyllm_session_" + tag + ".gguf";
    EXPECT_TRUE(write_tiny_model(spec, path).ok());
    ModelLoadOptions o;
    o.ctx.isa = model_load_isa();
    o.ctx.n_threads = 2;
    o.precision = precision;
    auto m = LlamaModel::load(path, o);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message());
    return m.ok() ? std::move(m).value() : nullptr;
}

// Whether the model's GEMM copies run on our kernels, whose sums do not depend on a call's row
// count, or on oneDNN, whose fp32 sgemm blocks (and so sums) differ with it (its AVX2 kernels,
// as under LAZYLLM_ISA=ref on an AVX2 CPU). Asked of a PackedLinear of the FFN's gate|up shape
// made in the model's own context.
inline bool gemms_row_invariant(const LlamaModel& model, kernels::GemmPrecision precision) {
    const int64_t n_in = model.config().n_embd, n_out = 2 * int64_t{model.config().n_ff};
    const std::vector<float> w(static_cast<size_t>(n_in * n_out), 0.25f);
    auto lin = kernels::PackedLinear::create(model.ctx(), w.data(), n_out, n_in, nullptr, precision,
                                             kernels::GemmLayout::kSwiGlu);
    return lin.ok() && lin->backend() != kernels::GemmBackend::kOneDnn;
}

// fp32 values a within 2e-5 of the range of b: the row-count check where the GEMMs are not
// invariant (gemms_row_invariant).
inline void expect_close(const float* a, const float* b, size_t n, const std::string& what) {
    const auto [lo, hi] = std::minmax_element(b, b + n);
    const float tol = 2e-5f * (*hi - *lo);
    for (size_t i = 0; i < n; ++i) ASSERT_NEAR(a[i], b[i], tol) << what << ", element " << i;
}

inline std::unique_ptr<LlamaModel> tiny_session_model(
    int n_layer, const std::string& tag, uint64_t seed = 5,
    kernels::GemmPrecision precision = kernels::GemmPrecision::kF32) {
    TinyModelSpec spec;
    spec.n_layer = n_layer;
    spec.seed = seed;
    spec.weight_scale = 0.2f;  // peaky attention, so scores differ clearly
    return load_session_model(spec, tag, precision);
}

// Gemma 3's layer shape at test size: 9 layers, every third global (2, 5, 8), the others with
// a 6-position window.
inline std::unique_ptr<LlamaModel> tiny_gemma3_session_model(const std::string& tag) {
    TinyModelSpec spec;
    spec.arch = "gemma3";
    spec.n_layer = 9;
    spec.n_head_kv = 1;
    spec.head_dim = 32;
    spec.sliding_window = 6;
    spec.swa_pattern = 3;
    spec.tied_embeddings = true;
    spec.weight_scale = 0.2f;
    return load_session_model(spec, tag, kernels::GemmPrecision::kF32);
}

inline std::vector<int32_t> ids_for(int n, int n_vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
    return ids;
}

inline int32_t argmax(const std::vector<float>& v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Prefill then greedy decode steps; returns every step's logits.
inline std::vector<std::vector<float>> run_steps(Session& s, const std::vector<int32_t>& prompt,
                                                 int n_decode, int n_vocab) {
    std::vector<std::vector<float>> out;
    std::vector<float> logits(static_cast<size_t>(n_vocab));
    EXPECT_TRUE(s.step(prompt, logits.data()).ok());
    out.push_back(logits);
    for (int i = 0; i < n_decode; ++i) {
        const int32_t next = argmax(logits);
        auto st = s.step(std::span<const int32_t>(&next, 1), logits.data());
        EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message());
        out.push_back(logits);
    }
    return out;
}

// LazyLLM with these boundaries and keep fractions (nothing else of a preset), 128 positions,
// the invariants checked at every stage.
inline SessionOptions lazy_options(std::vector<int> layers, std::vector<float> keep,
                                   bool prune_decode = true) {
    SessionOptions o;
    o.n_ctx = 128;
    o.policy = prune::Policy::kLazy;
    o.schedule.boundaries = std::move(layers);
    o.schedule.keep = std::move(keep);
    o.schedule.prune_decode = prune_decode;
    o.check_invariants = true;
    return o;
}

}  // namespace lazyllm::testing
