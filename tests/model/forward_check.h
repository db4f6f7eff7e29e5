// Shared by the model tests: tiny random models loaded with given options, and the check of
// the engine's logits (a prefill block, then single-token decode steps) against the scalar
// reference forward over the same sequence.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "model/llama_model.h"
#include "model/reference_forward.h"
#include "support/tiny_model.h"

namespace lazyllm::model_test {

struct Case {
    std::string arch;
    bool tied;
    kernels::GemmPrecision precision;
    int n_head, n_head_kv;
    // KV cache element type; default: the one the session picks for the GEMM precision.
    std::optional<kernels::KvType> kv_type = std::nullopt;
    GgmlType weight_type = GgmlType::F32;  // 2-D weights of the tiny model
    int n_layer = 2;
    int head_dim = 0;  // 0: n_embd / n_head
    int n_ff = 128;
    int n_prompt = 37;  // rows of the prefill block
    // kCopy (GEMM copies for prefill) unless a test asks for the quantized prefill.
    PrefillWeights prefill = PrefillWeights::kCopy;
};

inline std::string temp_path(const std::string& tag) {
    return ::testing::TempDir() + "lazyllm_forward_" + tag + ".gguf";
}

// Writes `spec` to `path` and loads it (kernels from LAZYLLM_ISA; kCopy by default, so that the
// weights a test runs on do not depend on the memory available).
inline std::unique_ptr<LlamaModel> load(const testing::TinyModelSpec& spec, const std::string& path,
                                        kernels::GemmPrecision precision, int n_threads = 2,
                                        PrefillWeights prefill = PrefillWeights::kCopy) {
    EXPECT_TRUE(testing::write_tiny_model(spec, path).ok());
    ModelLoadOptions o;
    o.ctx.isa = kernels::isa_from_env().value();
    o.ctx.n_threads = n_threads;
    o.precision = precision;
    o.prefill_weights = prefill;
    auto m = LlamaModel::load(path, o);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message());
    return m.ok() ? std::move(m).value() : nullptr;
}

inline std::vector<int32_t> random_ids(int n, int n_vocab, uint32_t seed) {
    std::vector<int32_t> ids(n);
    uint32_t s = seed;
    for (auto& id : ids) {
        s = s * 1664525u + 1013904223u;
        id = static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(n_vocab));
    }
    return ids;
}

// Runs the whole prompt as one block, then a few single-token decode steps, and compares the
// logits of every position with the reference forward over the same sequence.
inline void check_against_reference(const Case& c, double tol) {
    testing::TinyModelSpec spec;
    spec.arch = c.arch;
    spec.tied_embeddings = c.tied;
    spec.n_head = c.n_head;
    spec.n_head_kv = c.n_head_kv;
    spec.n_embd = 16 * c.n_head;
    spec.weight_type = c.weight_type;
    spec.n_layer = c.n_layer;
    spec.head_dim = c.head_dim;
    spec.n_ff = c.n_ff;
    spec.n_ctx = std::max(spec.n_ctx, c.n_prompt + 8);
    const bool quant = c.prefill == PrefillWeights::kQuant;
    const std::string path =
        temp_path(c.arch + (c.tied ? "_tied" : "") + std::to_string(c.n_head_kv) +
                  std::string(ggml_type_name(c.weight_type)) + (quant ? "_qprefill" : ""));
    auto model = load(spec, path, c.precision, 2, c.prefill);
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(model->prefill_quant(), quant);
    // The exact path never takes the int8 decode weights; the bf16 path does wherever VNNI is;
    // a quantized prefill runs them on any ISA.
    if (quant) {
        EXPECT_TRUE(model->quantized_decode());
    } else if (c.precision == kernels::GemmPrecision::kF32) {
        EXPECT_FALSE(model->quantized_decode());
    } else {
        EXPECT_EQ(model->quantized_decode(), kernels::QuantLinear::has_fast_path(model->ctx()));
    }
    const ModelConfig& cfg = model->config();
    const int n_prompt = c.n_prompt, n_decode = 4, n = n_prompt + n_decode;
    const auto ids = random_ids(n, cfg.n_vocab, 7);

    auto gguf = GgufFile::open(path).value();
    const ReferenceForward ref = ReferenceForward::create(gguf).value();
    const auto want = ref.run(ids);  // [n, n_vocab]

    KvCache kv(cfg.n_layer, std::max(64, n), cfg.n_head_kv, cfg.head_dim,
               c.kv_type.value_or(model->kv_type()));
    ForwardScratch s;
    std::vector<float> h(static_cast<size_t>(n_prompt) * cfg.n_embd), logits(cfg.n_vocab);
    std::vector<int32_t> pos(n_prompt);
    std::iota(pos.begin(), pos.end(), 0);
    ASSERT_TRUE(model->embed(ids.data(), n_prompt, h.data()).ok());
    LayerRun run;
    run.h = h.data();
    run.pos = pos.data();
    run.n_rows = n_prompt;
    run.n_keys = n_prompt;
    run.il_begin = 0;
    run.il_end = cfg.n_layer;
    model->forward_layers(run, kv, s);
    double max_err = 0, max_ref = 0;
    for (int i = 0; i < n_prompt; ++i) {
        model->logits(h.data() + static_cast<size_t>(i) * cfg.n_embd, n_prompt, false,
                      logits.data(), s);
        for (int t = 0; t < cfg.n_vocab; ++t) {
            max_err = std::max(max_err, std::abs(static_cast<double>(logits[t]) -
                                                 want[static_cast<size_t>(i) * cfg.n_vocab + t]));
            max_ref = std::max(
                max_ref,
                std::abs(static_cast<double>(want[static_cast<size_t>(i) * cfg.n_vocab + t])));
        }
    }
    for (int i = n_prompt; i < n; ++i) {  // decode: one row over the cached prefix
        std::vector<float> hr(cfg.n_embd);
        ASSERT_TRUE(model->embed(&ids[i], 1, hr.data()).ok());
        int32_t p = i;
        run.h = hr.data();
        run.pos = &p;
        run.n_rows = 1;
        run.n_keys = i + 1;
        model->forward_layers(run, kv, s);
        model->logits(hr.data(), 1, false, logits.data(), s);
        for (int t = 0; t < cfg.n_vocab; ++t)
            max_err = std::max(max_err, std::abs(static_cast<double>(logits[t]) -
                                                 want[static_cast<size_t>(i) * cfg.n_vocab + t]));
    }
    EXPECT_LT(max_err, tol * std::max(1.0, max_ref))
        << "max |logit - ref| = " << max_err << ", max |ref| = " << max_ref;
}

}  // namespace lazyllm::model_test
