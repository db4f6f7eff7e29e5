// The engine's forward (packed GEMMs, tiled attention, KV cache) against the test-side scalar
// reference on tiny random GGUF models, and its load errors (row subsets: forward_rows_test.cpp).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "model/forward_check.h"
#include "model/llama_model.h"
#include "model/reference_forward.h"
#include "support/cpu.h"
#include "support/tiny_model.h"

namespace lazyllm {
namespace {

using model_test::Case;
using model_test::check_against_reference;
using model_test::load;
using model_test::random_ids;
using model_test::temp_path;

// fp32 GEMMs and attention differ from the double-accumulating reference only by fp32 rounding
// and summation order: relative error ~1e-6 per op over a handful of ops.
TEST(ForwardTest, LlamaF32MatchesReference) {
    check_against_reference({"llama", false, kernels::GemmPrecision::kF32, 4, 2}, 2e-4);
}
TEST(ForwardTest, LlamaTiedMhaF32MatchesReference) {
    check_against_reference({"llama", true, kernels::GemmPrecision::kF32, 4, 4}, 2e-4);
}
TEST(ForwardTest, Qwen2BiasNeoxF32MatchesReference) {
    check_against_reference({"qwen2", false, kernels::GemmPrecision::kF32, 6, 2}, 2e-4);
}
TEST(ForwardTest, Qwen3QkNormF32MatchesReference) {
    check_against_reference({"qwen3", true, kernels::GemmPrecision::kF32, 4, 2, std::nullopt,
                             GgmlType::F32, 2, 32},
                            2e-4);
}
TEST(ForwardTest, Phi3FusedF32MatchesReference) {
    check_against_reference({"phi3", false, kernels::GemmPrecision::kF32, 4, 4}, 2e-4);
}
// Weights in formats only dequantized at load (fp32 copies; token_embd dequantized per looked-up
// row and, tied, as the LM head): the reference dequantizes the same blocks, so the fp32 path
// still matches to rounding. n_embd 256 and n_ff 512 for the 256-element super-blocks.
TEST(ForwardTest, Q3KAndIq4XsAndIq4NlF32MatchesReference) {
    for (GgmlType type : {GgmlType::Q3_K, GgmlType::IQ4_XS, GgmlType::IQ4_NL}) {
        SCOPED_TRACE(std::string(ggml_type_name(type)));
        Case c{"llama", true, kernels::GemmPrecision::kF32, 16, 4};
        c.weight_type = type;
        c.n_ff = 512;
        check_against_reference(c, 2e-4);
    }
}
// Six layers: five with an 8-position window (the 37-token prompt and the decode steps go
// past it) and a global one; head_dim 32 with n_head * head_dim != n_embd, as Gemma 3.
TEST(ForwardTest, Gemma3SlidingWindowF32MatchesReference) {
    check_against_reference({"gemma3", true, kernels::GemmPrecision::kF32, 4, 1, std::nullopt,
                             GgmlType::F32, 6, 32},
                            2e-4);
}
TEST(ForwardTest, Gemma3Bf16CloseToReference) {
    if (!testing::cpu_has_bf16_gemm()) GTEST_SKIP() << "no bf16 GEMM on this CPU";
    check_against_reference({"gemma3", true, kernels::GemmPrecision::kBf16, 4, 1, std::nullopt,
                             GgmlType::F32, 6, 32},
                            5e-2);
}
TEST(ForwardTest, Gemma3Q8QuantizedDecodeCloseToReference) {
    kernels::KernelContext ctx;
    ctx.isa = testing::engine_isa();
    if (!kernels::QuantLinear::has_fast_path(ctx)) GTEST_SKIP() << "no QuantLinear fast path";
    check_against_reference({"gemma3", true, kernels::GemmPrecision::kAuto, 4, 1, std::nullopt,
                             GgmlType::Q8_0, 6, 32},
                            5e-2);
}
// An f16 KV cache with fp32 GEMMs: K and V rounded to 11 significant bits (2^-12 relative),
// the only difference from the fp32 path.
TEST(ForwardTest, F16KvCacheCloseToReference) {
    check_against_reference(
        {"llama", false, kernels::GemmPrecision::kF32, 4, 2, kernels::KvType::kF16}, 2e-3);
}
// bf16 rounds GEMM inputs to 8 bits of mantissa (2^-9 relative): a few percent of the logit
// range. Its KV cache is f16.
TEST(ForwardTest, LlamaBf16CloseToReference) {
    if (!testing::cpu_has_bf16_gemm()) GTEST_SKIP() << "no bf16 GEMM on this CPU";
    check_against_reference({"llama", false, kernels::GemmPrecision::kBf16, 4, 2}, 5e-2);
}
// The other layer bodies on the bf16 path (the default on AMX and AVX-512-BF16 CPUs): qwen2's
// biases added to the bf16 GEMM's output, qwen3's QK-norm in the qkv row hook, phi3's fused
// q|k|v and gate|up matrices.
TEST(ForwardTest, Qwen2BiasBf16CloseToReference) {
    if (!testing::cpu_has_bf16_gemm()) GTEST_SKIP() << "no bf16 GEMM on this CPU";
    check_against_reference({"qwen2", false, kernels::GemmPrecision::kBf16, 6, 2}, 5e-2);
}
TEST(ForwardTest, Qwen3QkNormBf16CloseToReference) {
    if (!testing::cpu_has_bf16_gemm()) GTEST_SKIP() << "no bf16 GEMM on this CPU";
    check_against_reference(
        {"qwen3", true, kernels::GemmPrecision::kBf16, 4, 2, std::nullopt, GgmlType::F32, 2, 32},
        5e-2);
}
TEST(ForwardTest, Phi3FusedBf16CloseToReference) {
    if (!testing::cpu_has_bf16_gemm()) GTEST_SKIP() << "no bf16 GEMM on this CPU";
    check_against_reference({"phi3", false, kernels::GemmPrecision::kBf16, 4, 4}, 5e-2);
}

// Q4_1 weights (the default model's type): prefill through the bf16 GEMMs, decode steps and the
// LM head through QuantLinear on the same 4-bit blocks with int8 activations. The reference
// dequantizes the same blocks, so only activation rounding (bf16 / int8 per 32-block) differs.
TEST(ForwardTest, Q41QuantizedDecodeCloseToReference) {
    if (!testing::cpu_has_bf16_gemm()) GTEST_SKIP() << "no bf16 GEMM on this CPU";
    check_against_reference({"llama", false, kernels::GemmPrecision::kBf16, 4, 2, std::nullopt,
                             GgmlType::Q4_1},
                            5e-2);
}
// The same where the CPU has QuantLinear's fast path but no bf16 GEMM (AVX2, no AVX-512): the
// default precision runs the fp32 GEMMs in prefill and QuantLinear in decode and the LM head.
TEST(ForwardTest, Q41AutoPrecisionWithoutBf16CloseToReference) {
    if (testing::auto_precision_is_bf16()) GTEST_SKIP() << "covered by the bf16 case on this CPU";
    kernels::KernelContext ctx;
    ctx.isa = testing::engine_isa();
    if (!kernels::QuantLinear::has_fast_path(ctx)) GTEST_SKIP() << "no QuantLinear fast path";
    check_against_reference({"llama", false, kernels::GemmPrecision::kAuto, 4, 2, std::nullopt,
                             GgmlType::Q4_1},
                            5e-2);
}

TEST(ForwardTest, LoadErrorsNameTheProblem) {
    ModelLoadOptions o;
    o.ctx.isa = kernels::Isa::kRef;
    auto missing = LlamaModel::load("/nonexistent/model.gguf", o);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message().find("/nonexistent/model.gguf"), std::string::npos);

    // Wrong shape: build a model, then rewrite it with one tensor of the wrong width.
    testing::TinyModelSpec spec;
    const auto bytes = testing::build_tiny_model(spec);
    auto g = GgufFile::from_memory(bytes.data(), bytes.size(), "tiny").value();
    GgufWriter w;
    for (const auto& [key, value] : g.metadata()) {
        if (key == "general.architecture") w.set_string(key, value.as_string().value());
        else if (value.type == GgufValueType::UINT32) w.set_uint32(key, static_cast<uint32_t>(value.as_uint().value()));
        else if (value.type == GgufValueType::FLOAT32) w.set_float32(key, static_cast<float>(value.as_float().value()));
        else if (value.type == GgufValueType::STRING) w.set_string(key, value.as_string().value());
        else if (value.type == GgufValueType::BOOL) w.set_bool(key, value.as_bool().value());
        else if (value.type == GgufValueType::ARRAY && value.elem_type == GgufValueType::STRING)
            w.set_string_array(key, value.as_string_array().value());
        else if (value.type == GgufValueType::ARRAY) {
            auto ints = value.as_int_array().value();
            w.set_int32_array(key, std::vector<int32_t>(ints.begin(), ints.end()));
        }
    }
    for (const auto& t : g.tensors()) {
        std::vector<int64_t> shape = t.shape;
        std::vector<uint8_t> data(g.tensor_data(t), g.tensor_data(t) + t.n_bytes());
        if (t.name == "blk.1.ffn_up.weight") {
            shape[1] -= 1;
            data.resize(data.size() - static_cast<size_t>(shape[0]) * sizeof(float));
        }
        if (t.name == "blk.0.attn_k.weight") continue;  // and one tensor missing
        w.add_tensor(t.name, t.type, shape, data);
    }
    const std::string path = temp_path("broken");
    ASSERT_TRUE(w.write(path).ok());
    auto broken = LlamaModel::load(path, o);
    ASSERT_FALSE(broken.ok());
    EXPECT_NE(broken.error().message().find("blk.0.attn_k.weight"), std::string::npos) << broken.error().message();
}

TEST(ForwardTest, UnknownArchitectureIsRejectedByName) {
    GgufWriter w;
    w.set_string("general.architecture", "mamba");
    const std::string path = temp_path("mamba");
    ASSERT_TRUE(w.write(path).ok());
    ModelLoadOptions o;
    auto m = LlamaModel::load(path, o);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.error().message().find("mamba"), std::string::npos);
}

}  // namespace
}  // namespace lazyllm
