// Prefill on the GGUF's own blocks (PrefillWeights::kQuant): every step runs on QuantLinear with
// int8 activations, for every weight type the loader takes, against the scalar reference; no
// GEMM copy is made; kAuto chooses it where the copies would not fit.
//
// Tolerance. The reference dequantizes the same blocks, so the differences are the int8
// rounding of the activations per block of 32 (amax / 254 per element, qgemv_test.cpp) and
// Q8_0 requantization for the types QuantLinear does not take directly (F16, F32: amax / 254
// per weight): the same 5e-2 of the logit range as the quantized decode tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/ops.h"
#include "kernels/qgemv.h"
#include "kernels/quant.h"
#include "model/forward_check.h"
#include "model/llama_model.h"
#include "support/tiny_model.h"

namespace lazyllm {
namespace {

using model_test::Case;
using model_test::check_against_reference;
using model_test::load;
using model_test::temp_path;

constexpr double kTol = 5e-2;

Case quant_case(GgmlType type, const std::string& arch = "llama") {
    Case c{arch, false, kernels::GemmPrecision::kAuto, 4, 2};
    c.weight_type = type;
    c.prefill = PrefillWeights::kQuant;
    if (ggml_type_traits(static_cast<uint32_t>(type))->block_size == 256) {
        // every n_in a multiple of the 256-element super-blocks (K-quants, IQ4_XS)
        c.n_head = 16;  // n_embd 256
        c.n_ff = 512;
    }
    return c;
}

class QuantPrefillTypes : public ::testing::TestWithParam<GgmlType> {};

TEST_P(QuantPrefillTypes, CloseToReference) {
    check_against_reference(quant_case(GetParam()), kTol);
}

INSTANTIATE_TEST_SUITE_P(QuantPrefill, QuantPrefillTypes,
                         ::testing::Values(GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                                           GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q4_K,
                                           GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q3_K,
                                           GgmlType::IQ4_XS, GgmlType::IQ4_NL, GgmlType::F16,
                                           GgmlType::F32),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                             return std::string(ggml_type_name(info.param));
                         });

// A prefill longer than the FFN's row chunk (equal chunks of at most 256 rows on this path), with
// gemma3's post-norm residual on the chunked rows.
TEST(QuantPrefill, LongPrefillRunsTheFfnInChunks) {
    Case c = quant_case(GgmlType::Q4_1);
    c.n_prompt = 600;
    check_against_reference(c, kTol);
    Case g = quant_case(GgmlType::Q8_0, "gemma3");
    g.tied = true;
    g.n_head_kv = 1;
    g.n_layer = 6;
    g.head_dim = 32;
    g.n_prompt = 300;
    check_against_reference(g, kTol);
}

// The other layer bodies on the quantized prefill: qwen2's biases, qwen3's QK-norm, phi3's fused
// matrices, gemma3's sliding windows and GeGLU.
TEST(QuantPrefill, Qwen2BiasCloseToReference) {
    check_against_reference(quant_case(GgmlType::Q8_0, "qwen2"), kTol);
}
TEST(QuantPrefill, Qwen3QkNormCloseToReference) {
    Case c = quant_case(GgmlType::Q4_K, "qwen3");
    c.tied = true;
    c.head_dim = 32;  // n_head x head_dim = 512 > n_embd = 256
    check_against_reference(c, kTol);
}
TEST(QuantPrefill, Phi3FusedCloseToReference) {
    check_against_reference(quant_case(GgmlType::Q4_0, "phi3"), kTol);
}
TEST(QuantPrefill, Gemma3CloseToReference) {
    Case c = quant_case(GgmlType::Q8_0, "gemma3");
    c.tied = true;
    c.n_head_kv = 1;
    c.n_layer = 6;
    c.head_dim = 32;
    check_against_reference(c, kTol);
}

// A tiny Q8_0 model written to a temp file named by `tag`; its path.
std::string write_q8_model(const std::string& tag) {
    testing::TinyModelSpec spec;
    spec.weight_type = GgmlType::Q8_0;
    const std::string path = temp_path(tag);
    EXPECT_TRUE(testing::write_tiny_model(spec, path).ok());
    return path;
}

size_t file_bytes_of_2d(const std::string& path) {
    const GgufFile gguf = GgufFile::open(path).value();
    size_t total = 0;
    for (const GgufTensorInfo& t : gguf.tensors()) {
        if (t.shape.size() == 2) total += t.n_bytes();
    }
    return total;
}

// A tiny model spec of `type` weights and a 512-token vocabulary (the LM head's tests).
testing::TinyModelSpec vocab_512(GgmlType type) {
    testing::TinyModelSpec spec;
    spec.weight_type = type;
    spec.n_vocab = 512;
    return spec;
}

// On the blocks, a prompt's last row goes through the LM head with its outlier channels exact
// (the final norm's output carries the residual stream's big channels, as the layers' normed
// inputs do); a decode step's row is rounded to int8 whole. A hidden state with one channel 60
// times the others: the prompt's logits stay near the fp32 product of the dequantized head,
// the decode step's, whose block scale that channel sets, do not.
TEST(QuantPrefill, PromptLogitsKeepTheHeadsOutlierChannels) {
    const std::string path = temp_path("head_outliers");
    auto m = load(vocab_512(GgmlType::Q8_0), path, kernels::GemmPrecision::kAuto, 1,
                  PrefillWeights::kQuant);
    ASSERT_NE(m, nullptr);
    const int64_t E = m->config().n_embd, V = m->config().n_vocab;
    std::vector<float> h(static_cast<size_t>(E));
    for (int64_t e = 0; e < E; ++e) h[e] = std::sin(0.7f * static_cast<float>(e) + 0.3f);
    h[5] = 60.0f;

    // fp32: rms_norm(h) * output_norm, times each dequantized head row.
    const GgufFile gguf = GgufFile::open(path).value();
    const GgufTensorInfo* norm_t = gguf.find_tensor("output_norm.weight");
    const GgufTensorInfo* head_t = gguf.find_tensor("output.weight");
    ASSERT_NE(norm_t, nullptr);
    ASSERT_NE(head_t, nullptr);
    std::vector<float> norm(static_cast<size_t>(E)), head(static_cast<size_t>(V * E));
    std::memcpy(norm.data(), gguf.tensor_data(*norm_t), norm.size() * sizeof(float));
    ASSERT_TRUE(kernels::dequantize_row_f32(kernels::Isa::kRef, head_t->type,
                                            gguf.tensor_data(*head_t), head.data(), V * E)
                    .ok());
    std::vector<float> x(static_cast<size_t>(E));
    kernels::ref::rms_norm(h.data(), norm.data(), x.data(), 1, E, m->config().rms_eps);
    std::vector<double> want(static_cast<size_t>(V));
    for (int64_t v = 0; v < V; ++v) {
        for (int64_t e = 0; e < E; ++e) want[v] += static_cast<double>(x[e]) * head[v * E + e];
    }
    const auto max_error = [&](const std::vector<float>& got) {
        double err = 0.0;
        for (int64_t v = 0; v < V; ++v) err = std::max(err, std::abs(got[v] - want[v]));
        return err;
    };
    ForwardScratch s;
    std::vector<float> prompt(static_cast<size_t>(V)), decode(static_cast<size_t>(V));
    m->logits(h.data(), 1, /*prompt=*/true, prompt.data(), s, nullptr);
    m->logits(h.data(), 1, /*prompt=*/false, decode.data(), s, nullptr);
    const double range =
        *std::max_element(want.begin(), want.end()) - *std::min_element(want.begin(), want.end());
    EXPECT_LT(max_error(prompt), 0.01 * range) << "range " << range;
    EXPECT_GT(max_error(decode), 4.0 * max_error(prompt)) << "range " << range;
}

// No GEMM copy: the weights held are QuantLinear's repacked blocks (Q4_1: 4-bit quants and fp16
// scale and min per 32, as in the file, plus the 16-row group padding), where the copy path
// holds fp32 GEMM weights beside them.
TEST(QuantPrefill, KeepsNoCopy) {
    const testing::TinyModelSpec spec = vocab_512(GgmlType::Q4_1);
    const std::string path = temp_path("no_copy");
    auto quant = load(spec, path, kernels::GemmPrecision::kAuto, 2, PrefillWeights::kQuant);
    auto copy = load(spec, path, kernels::GemmPrecision::kF32, 2, PrefillWeights::kCopy);
    ASSERT_NE(quant, nullptr);
    ASSERT_NE(copy, nullptr);
    EXPECT_TRUE(quant->prefill_quant());
    EXPECT_FALSE(copy->prefill_quant());
    const size_t file = file_bytes_of_2d(path);
    // Norm vectors (fp32) are a few KiB in both.
    EXPECT_LT(quant->weight_bytes(), file * 11 / 10 + 16 * 1024) << "file: " << file;
    // Both hold the head as its blocks (the fp32 path reads them in place); the layers' fp32
    // copies are 6.4x Q4_1's bytes.
    const size_t head = GgufFile::open(path).value().find_tensor("output.weight")->n_bytes();
    EXPECT_GT(copy->weight_bytes() - head, (quant->weight_bytes() - head) * 6);
}

// On the fp32 path the LM head has no copy: its logits read the GGUF's blocks in place, so the
// weights held are the layers' fp32 copies, the fp32 norms and the head's own bytes.
TEST(QuantPrefill, Fp32PathKeepsTheHeadOnItsBlocks) {
    for (bool tied : {false, true}) {
        testing::TinyModelSpec spec = vocab_512(GgmlType::Q8_0);
        spec.tied_embeddings = tied;
        const std::string path = temp_path(tied ? "head_tied" : "head");
        auto m = load(spec, path, kernels::GemmPrecision::kF32, 2, PrefillWeights::kCopy);
        ASSERT_NE(m, nullptr);
        const GgufFile gguf = GgufFile::open(path).value();
        const std::string head = tied ? "token_embd.weight" : "output.weight";
        size_t want = 0;
        for (const GgufTensorInfo& t : gguf.tensors()) {
            if (t.name == head) {
                want += t.n_bytes();
            } else if (t.name != "token_embd.weight") {
                want += static_cast<size_t>(t.n_elements()) * sizeof(float);
            }
        }
        EXPECT_EQ(m->weight_bytes(), want) << (tied ? "tied" : "untied");
    }
}

// kAuto weighs the copies against the memory available: quant where they would take more
// than half of it, else copy; the choice says why.
TEST(QuantPrefill, AutoChoosesByMemory) {
    kernels::KernelContext ctx;
    ctx.isa = kernels::isa_from_env().value();
    if (!kernels::QuantLinear::has_fast_path(ctx)) GTEST_SKIP() << "no QuantLinear fast path";
    const std::string path = write_q8_model("auto");
    ModelLoadOptions o;
    o.ctx = ctx;
    o.ctx.n_threads = 1;
    o.available_memory = 1024;  // 1 KiB: no copy fits
    auto small = LlamaModel::load(path, o);
    ASSERT_TRUE(small.ok()) << small.error().message();
    EXPECT_TRUE((*small)->prefill_quant());
    EXPECT_NE((*small)->prefill_choice().find("quant (auto: copies"), std::string::npos)
        << (*small)->prefill_choice();
    o.available_memory = uint64_t{1} << 40;
    auto large = LlamaModel::load(path, o);
    ASSERT_TRUE(large.ok()) << large.error().message();
    EXPECT_FALSE((*large)->prefill_quant());
    EXPECT_NE((*large)->prefill_choice().find("copy (auto: copies"), std::string::npos)
        << (*large)->prefill_choice();
}

// A Llama config with these shapes (head_dim 64), for plans made from the config alone.
ModelConfig llama_shape(int n_layer, int n_embd, int n_head_kv, int n_ff, int n_vocab) {
    ModelConfig c;
    c.n_layer = n_layer;
    c.n_embd = n_embd;
    c.head_dim = 64;
    c.n_head = n_embd / c.head_dim;
    c.n_head_kv = n_head_kv;
    c.n_ff = n_ff;
    c.n_vocab = n_vocab;
    return c;
}

// Without bf16 GEMMs the copies are fp32, and past kFp32CopyLimit kAuto takes the blocks even
// where memory is plentiful; with bf16 GEMMs, past kBf16CopyLimit where the blocks run on AMX
// tiles or (no AMX) on AVX-512 VNNI int8 kernels. The default model's shape stays on its copies
// everywhere. The copies are the layers' alone: the LM head reads its blocks in place.
TEST(QuantPrefill, AutoTakesTheBlocksPastTheCopyLimits) {
    kernels::KernelContext ctx;
    ctx.isa = kernels::isa_from_env().value();
    if (!kernels::QuantLinear::has_fast_path(ctx)) GTEST_SKIP() << "no QuantLinear fast path";
    ModelLoadOptions o;
    o.ctx = ctx;
    o.available_memory = uint64_t{1} << 40;
    const ModelConfig llama_1b = llama_shape(16, 2048, 8, 8192, 128256);  // 2.3 GiB bf16
    const ModelConfig qwen_05b = llama_shape(24, 896, 2, 4864, 151936);   // 0.9 GiB bf16
    const ModelConfig qwen_half = llama_shape(19, 896, 2, 4864, 151936);  // 540 MiB bf16
    const ModelConfig smollm2 = llama_shape(30, 576, 3, 1536, 49152);     // 203 MiB bf16
    const bool bf16 = kernels::gemm_uses_bf16(o.ctx, o.precision);
    const bool vnni =
        bf16 && (kernels::QuantLinear::has_tile_path(ctx) ||
                 (ctx.isa == kernels::Isa::kAvx512 &&
                  !kernels::isa_supported(kernels::Isa::kAmx, kernels::detect_cpu_features()) &&
                  kernels::QuantLinear::has_vnni_path(ctx)));
    auto big = LlamaModel::plan_weights(llama_1b, o);
    ASSERT_TRUE(big.ok()) << big.error().message();
    EXPECT_EQ(big->prefill_quant, !bf16 || vnni) << big->prefill_choice;
    if (!bf16) {
        EXPECT_NE(big->prefill_choice.find("quant (auto: fp32 copies"), std::string::npos)
            << big->prefill_choice;
    }
    auto mid = LlamaModel::plan_weights(qwen_05b, o);
    ASSERT_TRUE(mid.ok()) << mid.error().message();
    EXPECT_EQ(mid->prefill_quant, !bf16 || vnni) << mid->prefill_choice;  // fp32: 1365 MiB
    if (vnni) {
        EXPECT_NE(mid->prefill_choice.find("over the blocks' limit"), std::string::npos)
            << mid->prefill_choice;
    }
    auto half = LlamaModel::plan_weights(qwen_half, o);
    ASSERT_TRUE(half.ok()) << half.error().message();
    EXPECT_EQ(half->prefill_quant, vnni) << half->prefill_choice;  // fp32: 1080 MiB
    auto def = LlamaModel::plan_weights(smollm2, o);
    ASSERT_TRUE(def.ok()) << def.error().message();
    EXPECT_FALSE(def->prefill_quant) << def->prefill_choice;
    if (!bf16) {  // the layers' 106M weights in fp32, without the head's 28M
        EXPECT_NE(def->prefill_choice.find("copies 405 MiB"), std::string::npos)
            << def->prefill_choice;
    }
    // Asked for, the copies are kept at any size that fits.
    o.prefill_weights = PrefillWeights::kCopy;
    auto asked = LlamaModel::plan_weights(llama_1b, o);
    ASSERT_TRUE(asked.ok()) << asked.error().message();
    EXPECT_FALSE(asked->prefill_quant);
}

// The VNNI rule is for oneDNN's bf16 GEMMs: on an AVX2 context of the same CPU the copies are
// fp32 and kFp32CopyLimit decides alone.
TEST(QuantPrefill, TheVnniLimitNeedsAnAvx512Context) {
    kernels::KernelContext ctx;
    ctx.isa = kernels::Isa::kAvx2;
    if (!kernels::QuantLinear::has_fast_path(ctx)) GTEST_SKIP() << "no AVX2 QuantLinear path";
    ModelLoadOptions o;
    o.ctx = ctx;
    o.available_memory = uint64_t{1} << 40;
    EXPECT_FALSE(kernels::QuantLinear::has_vnni_path(ctx));
    // 0.6 GiB of bf16 copies with the head (over the VNNI rule's 512 MiB), 683 MiB of fp32
    // ones (the layers', under kFp32CopyLimit).
    auto mid = LlamaModel::plan_weights(llama_shape(12, 896, 2, 4864, 151936), o);
    ASSERT_TRUE(mid.ok()) << mid.error().message();
    EXPECT_FALSE(mid->prefill_quant) << mid->prefill_choice;
}

// A decode step's revived rows stay on the blocks up to kQuantMaxRowsWide where prefill runs
// on them or on our AVX2 fp32 GEMM; up to kQuantMaxRowsAmx beside our AMX GEMM, and up to
// kQuantMaxRows beside oneDNN's.
TEST(QuantPrefill, RevivedRowsStayOnTheBlocksWhereTheyAreFaster) {
    const std::string path = write_q8_model("wide");
    kernels::KernelContext ctx;
    ctx.isa = kernels::isa_from_env().value();
    if (!kernels::QuantLinear::has_fast_path(ctx)) GTEST_SKIP() << "no QuantLinear fast path";
    ModelLoadOptions o;
    o.ctx = ctx;
    o.ctx.n_threads = 1;
    o.prefill_weights = PrefillWeights::kCopy;
    auto copy = LlamaModel::load(path, o);
    ASSERT_TRUE(copy.ok()) << copy.error().message();
    // The backend the gate|up GEMM gets ([2 n_ff, n_embd]; ours on AMX or AVX2, else oneDNN).
    const ModelConfig& c = (*copy)->config();
    const std::vector<float> w(static_cast<size_t>(2 * c.n_ff * c.n_embd), 0.5f);
    const auto gemm =
        kernels::PackedLinear::create(o.ctx, w.data(), 2 * c.n_ff, c.n_embd, nullptr, o.precision);
    ASSERT_TRUE(gemm.ok()) << gemm.error().message();
    EXPECT_EQ((*copy)->quant_max_rows(),
              gemm->backend() == kernels::GemmBackend::kAvx2  ? kQuantMaxRowsWide
              : gemm->backend() == kernels::GemmBackend::kAmx ? kQuantMaxRowsAmx
                                                              : kQuantMaxRows);
    o.prefill_weights = PrefillWeights::kQuant;
    auto quant = LlamaModel::load(path, o);
    ASSERT_TRUE(quant.ok()) << quant.error().message();
    EXPECT_EQ((*quant)->quant_max_rows(), kQuantMaxRowsWide);
}

// On AMX tiles every call of a prompt step of kTileMinRows tokens or more takes the tiles: the
// last layer's single row (last_row_out) gets the whole layer's h bit for bit, as its Wo and
// FFN calls of one row run on the tiles too. A decode step's 64 or more rows (LazyLLM's
// revivals) run on the tiles as well: bit for bit the same rows as a prompt step.
TEST(QuantPrefill, EveryCallOfAStepTakesTheSameKernels) {
    ModelLoadOptions o;
    o.ctx.isa = kernels::isa_from_env().value();
    o.ctx.n_threads = 2;
    if (!kernels::QuantLinear::has_tile_path(o.ctx)) GTEST_SKIP() << "no AMX tiles";
    o.prefill_weights = PrefillWeights::kQuant;
    auto loaded = LlamaModel::load(write_q8_model("tile_steps"), o);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    const LlamaModel& model = **loaded;
    const ModelConfig& cfg = model.config();
    const int64_t E = cfg.n_embd, n = kernels::kTileMinRows + 36;
    std::vector<int32_t> ids(n), pos(n);
    for (int64_t i = 0; i < n; ++i) {
        ids[i] = static_cast<int32_t>((i * 37 + 5) % cfg.n_vocab);
        pos[i] = static_cast<int32_t>(i);
    }
    std::vector<float> h0(static_cast<size_t>(n * E));
    ASSERT_TRUE(model.embed(ids.data(), n, h0.data()).ok());
    const auto run = [&](bool prompt, int64_t step_rows, bool last_row_out) {
        KvCache kv(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, model.kv_type());
        ForwardScratch s;
        std::vector<float> h = h0;
        LayerRun r{h.data(), pos.data(), n, nullptr, n, 0, cfg.n_layer, nullptr};
        r.prompt = prompt;
        r.step_rows = step_rows;
        r.last_row_out = last_row_out;
        model.forward_layers(r, kv, s);
        return h;
    };
    const std::vector<float> whole = run(true, n, false);
    const std::vector<float> last = run(true, n, true);
    EXPECT_EQ(
        0, std::memcmp(whole.data() + (n - 1) * E, last.data() + (n - 1) * E, sizeof(float) * E));
    const std::vector<float> revived = run(false, 1, false);
    EXPECT_EQ(0, std::memcmp(whole.data(), revived.data(), sizeof(float) * n * E));
}

// Copies that cannot fit in the memory available are refused with the sizes, naming the way
// out.
TEST(QuantPrefill, CopiesOverTheMemoryAreRefused) {
    const std::string path = write_q8_model("too_big");
    ModelLoadOptions o;
    o.ctx.isa = kernels::isa_from_env().value();
    o.prefill_weights = PrefillWeights::kCopy;
    o.available_memory = 1024;
    auto m = LlamaModel::load(path, o);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().code(), ErrorCode::kOutOfRange);
    EXPECT_NE(m.error().message().find("more than the 0 MiB of memory available"),
              std::string::npos)
        << m.error().message();
}

// kQuant where there are no quantized weights is an error that says why.
TEST(QuantPrefill, RefusedOnTheExactPath) {
    const std::string path = write_q8_model("refused");
    ModelLoadOptions o;
    o.ctx.isa = kernels::isa_from_env().value();
    o.precision = kernels::GemmPrecision::kF32;
    o.prefill_weights = PrefillWeights::kQuant;
    auto m = LlamaModel::load(path, o);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().code(), ErrorCode::kUnsupported);
    EXPECT_NE(m.error().message().find("precision f32"), std::string::npos) << m.error().message();
    o.precision = kernels::GemmPrecision::kAuto;
    o.quantized_decode = false;
    m = LlamaModel::load(path, o);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.error().message().find("decode weights 'gemm'"), std::string::npos)
        << m.error().message();
}

}  // namespace
}  // namespace lazyllm
