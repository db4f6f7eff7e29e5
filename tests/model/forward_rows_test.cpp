// The engine's forward on row subsets (the weights a step's rows run on, indexed key sets,
// split blocks, fused row hooks, the last row alone, a cut's rows) against the same forward on
// whole blocks, bit for bit, on tiny random GGUF models.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>

#include "model/forward_check.h"
#include "model/llama_model.h"
#include "support/cpu.h"
#include "support/kv_rows.h"
#include "support/tiny_model.h"

namespace lazyllm {
namespace {

using model_test::load;
using model_test::random_ids;
using model_test::temp_path;


// A step through every layer of `m`: the rows h0 ([n, n_embd], positions 0..n-1) as a step of
// `step_rows` new tokens (0: n) that are prompt text or not (LayerRun), and the last row's
// logits, with a KV cache of `kv_type` (default: the model's).
struct StepOut {
    std::vector<float> h, logits;
};
StepOut run_step(const LlamaModel& m, const std::vector<float>& h0, int64_t step_rows, bool prompt,
                 std::optional<kernels::KvType> kv_type = std::nullopt) {
    const ModelConfig& cfg = m.config();
    const auto n = static_cast<int64_t>(h0.size()) / cfg.n_embd;
    std::vector<int32_t> pos(n);
    std::iota(pos.begin(), pos.end(), 0);
    StepOut o{h0, std::vector<float>(cfg.n_vocab)};
    KvCache kv(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, kv_type.value_or(m.kv_type()));
    ForwardScratch s;
    LayerRun r{o.h.data(), pos.data(), n, nullptr, n, 0, cfg.n_layer, nullptr};
    r.step_rows = step_rows;
    r.prompt = prompt;
    m.forward_layers(r, kv, s);
    m.logits(o.h.data() + (n - 1) * cfg.n_embd, step_rows > 0 ? step_rows : n, prompt,
             o.logits.data(), s);
    return o;
}

// The embeddings of n random ids.
std::vector<float> random_rows(const LlamaModel& m, int n, uint32_t seed) {
    const auto ids = random_ids(n, m.config().n_vocab, seed);
    std::vector<float> h(static_cast<size_t>(n) * m.config().n_embd);
    EXPECT_TRUE(m.embed(ids.data(), n, h.data()).ok());
    return h;
}

// LayerRun::step_rows picks the weights: a few rows of a step with many new tokens (a short
// stage of a prefill) run on the GEMM weights, bit for bit what the fp32 model computes; the
// same rows as a decode step (at most kQuantMaxRows new tokens) run on the quantized ones.
TEST(ForwardTest, StepRowsChooseTheWeights) {
    kernels::KernelContext ctx;
    ctx.isa = testing::engine_isa();
    if (!kernels::QuantLinear::has_fast_path(ctx)) GTEST_SKIP() << "no QuantLinear fast path";
    if (testing::auto_precision_is_bf16()) GTEST_SKIP() << "bf16 GEMMs: not the fp32 model's sums";
    testing::TinyModelSpec spec;
    auto model = load(spec, temp_path("step_rows_auto"), kernels::GemmPrecision::kAuto);
    auto exact = load(spec, temp_path("step_rows_f32"), kernels::GemmPrecision::kF32);
    ASSERT_NE(model, nullptr);
    ASSERT_NE(exact, nullptr);
    ASSERT_TRUE(model->quantized_decode());
    const std::vector<float> h0 = random_rows(*model, 5, 21);
    // (Precision auto may keep an f16 KV cache where f32 does not: the same one for both.)
    const std::vector<float> want = run_step(*exact, h0, 0, false, model->kv_type()).h;
    EXPECT_EQ(run_step(*model, h0, 100, false).h, want)
        << "a long step's rows run on the GEMM weights";
    const std::vector<float> decode = run_step(*model, h0, 0, false).h;
    EXPECT_NE(decode, want) << "a decode step's rows run on the quantized weights";
    for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(decode[i], want[i], 5e-2f * (1.0f + std::abs(want[i]))) << i;
    }
}

// The KV cache type: f32 on the exact path (precision f32 with the copies), f16 for precision
// auto on every ISA and for the quantized prefill.
TEST(ForwardTest, KvCacheTypeFollowsPrecision) {
    testing::TinyModelSpec spec;
    auto exact = load(spec, temp_path("kv_type_f32"), kernels::GemmPrecision::kF32);
    auto model = load(spec, temp_path("kv_type_auto"), kernels::GemmPrecision::kAuto);
    ASSERT_NE(exact, nullptr);
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(exact->kv_type(), kernels::KvType::kF32);
    EXPECT_EQ(model->kv_type(), kernels::KvType::kF16);  // on every ISA
    auto quant = load(spec, temp_path("kv_type_quant"), kernels::GemmPrecision::kAuto, 2,
                      PrefillWeights::kQuant);
    ASSERT_NE(quant, nullptr);
    EXPECT_EQ(quant->kv_type(), kernels::KvType::kF16);
}

// A decode-sized step of prompt tokens (LayerRun::prompt: a new turn, the rest of a cached
// prompt) runs on the prefill weights as a long step does, bit for bit, and its logits too; a
// step of generated tokens of the same size does not. Any precision.
TEST(ForwardTest, PromptStepsRunOnThePrefillWeights) {
    kernels::KernelContext ctx;
    ctx.isa = testing::engine_isa();
    if (!kernels::QuantLinear::has_fast_path(ctx)) GTEST_SKIP() << "no QuantLinear fast path";
    testing::TinyModelSpec spec;
    auto model = load(spec, temp_path("prompt_steps"), kernels::GemmPrecision::kAuto);
    ASSERT_NE(model, nullptr);
    ASSERT_TRUE(model->quantized_decode());
    const std::vector<float> h0 = random_rows(*model, 5, 22);
    const StepOut long_step = run_step(*model, h0, 100, false);
    const StepOut prompt = run_step(*model, h0, 0, true);
    const StepOut generated = run_step(*model, h0, 0, false);
    EXPECT_EQ(prompt.h, long_step.h);
    EXPECT_EQ(prompt.logits, long_step.logits);
    EXPECT_NE(generated.h, long_step.h) << "a decode step's rows run on the quantized weights";
}

// A key set given by row index (a pruned step reads S straight from the cache) that happens to
// be the whole prefix gives bit for bit the prefix run, for both cache types and for prefill
// and decode shapes.
TEST(ForwardTest, IndexedKeySetEqualsPrefix) {
    testing::TinyModelSpec spec;
    spec.n_head = 6;
    spec.n_head_kv = 2;
    spec.n_embd = 16 * spec.n_head;
    auto model = load(spec, temp_path("indexed"), kernels::GemmPrecision::kF32);
    ASSERT_NE(model, nullptr);
    const ModelConfig& cfg = model->config();
    const int n = 30;
    const auto ids = random_ids(n, cfg.n_vocab, 11);
    std::vector<int32_t> pos(n);
    std::iota(pos.begin(), pos.end(), 0);
    for (kernels::KvType type : {kernels::KvType::kF32, kernels::KvType::kF16}) {
        ForwardScratch s;
        KvCache kv1(cfg.n_layer, 32, cfg.n_head_kv, cfg.head_dim, type);
        KvCache kv2(cfg.n_layer, 32, cfg.n_head_kv, cfg.head_dim, type);
        std::vector<float> h1(static_cast<size_t>(n) * cfg.n_embd), h2(h1.size());
        ASSERT_TRUE(model->embed(ids.data(), n, h1.data()).ok());
        h2 = h1;
        // Prefill of n - 1 rows, then one decode row.
        LayerRun a1{h1.data(), pos.data(), n - 1, nullptr, n - 1, 0, cfg.n_layer, nullptr};
        LayerRun a2{h2.data(), pos.data(), n - 1, pos.data(), n - 1, 0, cfg.n_layer, nullptr};
        model->forward_layers(a1, kv1, s);
        model->forward_layers(a2, kv2, s);
        const int64_t last = static_cast<int64_t>(n - 1) * cfg.n_embd;
        const int32_t* p_last = pos.data() + n - 1;
        LayerRun b1{h1.data() + last, p_last, 1, nullptr, n, 0, cfg.n_layer, nullptr};
        LayerRun b2{h2.data() + last, p_last, 1, pos.data(), n, 0, cfg.n_layer, nullptr};
        model->forward_layers(b1, kv1, s);
        model->forward_layers(b2, kv2, s);
        EXPECT_EQ(h1, h2) << "kv type " << static_cast<int>(type);
        EXPECT_EQ(kv1.type(), type);
        EXPECT_EQ(kv1.bytes(), 2u * cfg.n_layer * 32 * cfg.n_head_kv * cfg.head_dim *
                                   kernels::kv_type_size(type));
        for (int il = 0; il < cfg.n_layer; ++il) {
            EXPECT_TRUE(testing::same_kv_rows(kv1, kv2, il, n));
        }
    }
}

// Rows handed over as any subset with their own positions: a block computed in two halves
// (first rows, then the rest attending to the cache) equals the block computed at once.
TEST(ForwardTest, SplitBlockEqualsWholeBlock) {
    testing::TinyModelSpec spec;
    auto model = load(spec, temp_path("split"), kernels::GemmPrecision::kF32);
    ASSERT_NE(model, nullptr);
    const ModelConfig& cfg = model->config();
    const int n = 20;
    const auto ids = random_ids(n, cfg.n_vocab, 3);
    std::vector<int32_t> pos(n);
    std::iota(pos.begin(), pos.end(), 0);
    ForwardScratch s;
    KvCache kv1(cfg.n_layer, 32, cfg.n_head_kv, cfg.head_dim),
        kv2(cfg.n_layer, 32, cfg.n_head_kv, cfg.head_dim);
    std::vector<float> h1(static_cast<size_t>(n) * cfg.n_embd), h2(h1.size());
    ASSERT_TRUE(model->embed(ids.data(), n, h1.data()).ok());
    h2 = h1;
    LayerRun r{h1.data(), pos.data(), n, nullptr, n, 0, cfg.n_layer, nullptr};
    model->forward_layers(r, kv1, s);
    LayerRun a{h2.data(), pos.data(), 12, nullptr, 12, 0, cfg.n_layer, nullptr};
    model->forward_layers(a, kv2, s);
    LayerRun b{h2.data() + 12 * cfg.n_embd, pos.data() + 12, n - 12, nullptr, n, 0, cfg.n_layer, nullptr};
    model->forward_layers(b, kv2, s);
    for (size_t i = 0; i < h1.size(); ++i) ASSERT_NEAR(h1[i], h2[i], 1e-4f * (1.0f + std::abs(h1[i]))) << i;
}

// The bf16 path's row hooks (RoPE and the K/V store in the qkv GEMM, the norms in the attn_out
// and down GEMMs, and gemma3's post-norms there) against the separate passes, bit for bit. At 300
// rows one thread runs whole-row work items (hooks on); three threads would get fewer than 128 rows
// each and split the columns instead (hooks off: the profile shows separate RoPE passes); the
// GEMMs' results do not depend on that split. Then the hooked run in two layer ranges (the next
// layer's norm is not carried across forward_layers calls), for llama (RoPE pairs), qwen2 (NeoX
// RoPE, q/k/v biases) and gemma3 (QK-norm; post-norms on the Wo and down rows). Only the AMX GEMM
// has hooks: where bf16 GEMMs run on oneDNN (AVX-512-BF16 without AMX) both runs take the separate
// passes, and the equalities still hold.
TEST(ForwardTest, Bf16RowHooksEqualSeparatePasses) {
    if (!testing::cpu_has_bf16_gemm()) GTEST_SKIP() << "no bf16 GEMM on this CPU";
    const bool hooks = testing::amx_gemm_here();
    for (const char* arch : {"llama", "qwen2", "gemma3"}) {
        testing::TinyModelSpec spec;
        spec.arch = arch;
        spec.n_layer = 3;
        spec.n_ctx = 512;
        const std::string tag = std::string("hooks_") + arch;
        auto one = load(spec, temp_path(tag + "1"), kernels::GemmPrecision::kBf16, 1);
        auto two = load(spec, temp_path(tag + "2"), kernels::GemmPrecision::kBf16, 3);
        ASSERT_NE(one, nullptr);
        ASSERT_NE(two, nullptr);
        const ModelConfig& cfg = one->config();
        const int n = 300;
        const auto ids = random_ids(n, cfg.n_vocab, 5);
        std::vector<int32_t> pos(n);
        std::iota(pos.begin(), pos.end(), 0);
        const kernels::KvType type = kernels::KvType::kF16;
        KvCache kv1(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, type);
        KvCache kv2(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, type);
        KvCache kv3(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, type);
        std::vector<float> h1(static_cast<size_t>(n) * cfg.n_embd);
        ASSERT_TRUE(one->embed(ids.data(), n, h1.data()).ok());
        std::vector<float> h2 = h1, h3 = h1;
        ForwardScratch s1, s2, s3;
        LayerRun r1{h1.data(), pos.data(), n, nullptr, n, 0, cfg.n_layer, nullptr};
        LayerRun r2{h2.data(), pos.data(), n, nullptr, n, 0, cfg.n_layer, nullptr};
        Profile p1, p2;
        one->forward_layers(r1, kv1, s1, &p1);
        two->forward_layers(r2, kv2, s2, &p2);
        // With the hooks every norm but layer 0's attention norm runs inside a GEMM.
        const size_t rope = static_cast<size_t>(OpKind::kRope);
        const size_t norms = static_cast<size_t>(OpKind::kRmsNorm);
        if (hooks) {
            EXPECT_EQ(p1.calls[rope], 0) << arch << ": hooks on";
            EXPECT_EQ(p1.calls[norms], 1) << arch << ": hooks on";
        } else {
            EXPECT_GT(p1.calls[rope], 0) << arch << ": no AMX hooks";
            EXPECT_GT(p1.calls[norms], 1) << arch << ": no AMX hooks";
        }
        EXPECT_GT(p2.calls[rope], 0) << arch << ": hooks off";
        EXPECT_GT(p2.calls[norms], 1) << arch << ": hooks off";
        EXPECT_EQ(h1, h2) << arch;
        LayerRun a{h3.data(), pos.data(), n, nullptr, n, 0, 1, nullptr};
        LayerRun b{h3.data(), pos.data(), n, nullptr, n, 1, cfg.n_layer, nullptr};
        one->forward_layers(a, kv3, s3);
        one->forward_layers(b, kv3, s3);
        EXPECT_EQ(h1, h3) << arch;
        for (int il = 0; il < cfg.n_layer; ++il) {
            EXPECT_TRUE(testing::same_kv_rows(kv1, kv2, il, n)) << arch << il;
            EXPECT_TRUE(testing::same_kv_rows(kv1, kv3, il, n)) << arch << il;
        }
    }
}

// Gemma 3's post-norm hooks on the rows a cut returns (TailRows: their own h, not the run's):
// 300 kept rows of 600 run the Wo and down hooks on one thread and the separate blocked passes
// on three (fewer than 128 rows each: the AMX GEMM splits the columns), the same bits.
TEST(ForwardTest, Bf16PostNormHooksOnCutRows) {
    if (!testing::cpu_has_bf16_gemm()) GTEST_SKIP() << "no bf16 GEMM on this CPU";
    testing::TinyModelSpec spec;
    spec.arch = "gemma3";
    spec.n_layer = 3;
    spec.n_ctx = 1024;
    auto one = load(spec, temp_path("postnorm_cut1"), kernels::GemmPrecision::kBf16, 1);
    auto three = load(spec, temp_path("postnorm_cut3"), kernels::GemmPrecision::kBf16, 3);
    ASSERT_NE(one, nullptr);
    ASSERT_NE(three, nullptr);
    const ModelConfig& cfg = one->config();
    const int64_t E = cfg.n_embd, Q = cfg.n_embd_q();
    const int n = 600;
    const auto ids = random_ids(n, cfg.n_vocab, 17);
    std::vector<int32_t> pos(n);
    std::iota(pos.begin(), pos.end(), 0);
    std::vector<int32_t> kept_rows, kept_pos;
    for (int i = 1; i < n; i += 2) {  // every odd row: the last one included
        kept_rows.push_back(i);
        kept_pos.push_back(pos[i]);
    }
    const auto run = [&](const LlamaModel& m, std::vector<float>& tail_h, KvCache& kv) {
        std::vector<float> h(static_cast<size_t>(n) * E), tail_q;
        ASSERT_TRUE(m.embed(ids.data(), n, h.data()).ok());
        ForwardScratch s;
        LayerRun r{h.data(), pos.data(), n, nullptr, n, 0, 2, nullptr};
        r.cut = [&](const float* qkv, int64_t ld) {
            tail_h.clear();
            for (int32_t i : kept_rows) {
                tail_h.insert(tail_h.end(), &h[i * E], &h[(i + 1) * E]);
                tail_q.insert(tail_q.end(), qkv + i * ld, qkv + i * ld + Q);
            }
            return TailRows{tail_h.data(), tail_q.data(), Q, kept_pos.data(),
                            static_cast<int64_t>(kept_pos.size())};
        };
        m.forward_layers(r, kv, s);
    };
    const kernels::KvType type = one->kv_type();
    KvCache kv1(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, type);
    KvCache kv3(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, type);
    std::vector<float> tail1, tail3;
    run(*one, tail1, kv1);
    run(*three, tail3, kv3);
    ASSERT_EQ(tail1.size(), kept_rows.size() * E);
    EXPECT_EQ(tail1, tail3);
    for (int il = 0; il < 2; ++il) EXPECT_TRUE(testing::same_kv_rows(kv1, kv3, il, n)) << il;
    // And the kept rows are those of the uncut layers (another row count: bf16 rounding only).
    std::vector<float> h_all(static_cast<size_t>(n) * E);
    ASSERT_TRUE(one->embed(ids.data(), n, h_all.data()).ok());
    KvCache kv_all(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, type);
    ForwardScratch s;
    LayerRun all{h_all.data(), pos.data(), n, nullptr, n, 0, 2, nullptr};
    one->forward_layers(all, kv_all, s);
    for (size_t k = 0; k < kept_rows.size(); ++k) {
        for (int64_t e = 0; e < E; ++e) {
            const float want = h_all[kept_rows[k] * E + e];
            ASSERT_NEAR(tail1[k * E + e], want, 2e-2f * (1.0f + std::abs(want))) << kept_rows[k];
        }
    }
}

// LayerRun::last_row_out: the last layer stores every row's K/V (bit for bit those of the
// whole layer) and leaves the other rows' h at that layer's input (bit for bit a run that
// stops one layer earlier), while the last row's h matches the whole layer's. 5 rows take
// the quantized decode weights where VNNI is (bf16), 300 rows the AMX GEMMs.
TEST(ForwardTest, LastRowOutComputesOnlyTheLastRow) {
    std::vector<kernels::GemmPrecision> precisions = {kernels::GemmPrecision::kF32};
    if (testing::cpu_has_bf16_gemm()) precisions.push_back(kernels::GemmPrecision::kBf16);
    for (const kernels::GemmPrecision precision : precisions) {
        const bool bf16 = precision == kernels::GemmPrecision::kBf16;
        testing::TinyModelSpec spec;
        spec.n_layer = 3;
        spec.n_ctx = 512;
        auto model =
            load(spec, temp_path(std::string("last_row_") + (bf16 ? "bf16" : "f32")), precision);
        ASSERT_NE(model, nullptr);
        const ModelConfig& cfg = model->config();
        const int64_t E = cfg.n_embd;
        for (const int n : {5, 37, 300}) {
            const std::string what = std::string(bf16 ? "bf16" : "f32") + " n=" + std::to_string(n);
            const auto ids = random_ids(n, cfg.n_vocab, 11);
            std::vector<int32_t> pos(n);
            std::iota(pos.begin(), pos.end(), 0);
            const kernels::KvType type = model->kv_type();
            KvCache kv_all(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, type);
            KvCache kv_last(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, type);
            KvCache kv_prefix(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, type);
            std::vector<float> h_all(static_cast<size_t>(n) * E);
            ASSERT_TRUE(model->embed(ids.data(), n, h_all.data()).ok());
            std::vector<float> h_last = h_all, h_prefix = h_all;
            ForwardScratch s;
            LayerRun all{h_all.data(), pos.data(), n, nullptr, n, 0, cfg.n_layer, nullptr};
            model->forward_layers(all, kv_all, s);
            LayerRun last = all;
            last.h = h_last.data();
            last.last_row_out = true;
            model->forward_layers(last, kv_last, s);
            LayerRun prefix = all;
            prefix.h = h_prefix.data();
            prefix.il_end = cfg.n_layer - 1;
            model->forward_layers(prefix, kv_prefix, s);

            for (int il = 0; il < cfg.n_layer; ++il) {
                EXPECT_TRUE(testing::same_kv_rows(kv_all, kv_last, il, n))
                    << what << " layer " << il;
            }
            EXPECT_EQ(0, std::memcmp(h_last.data(), h_prefix.data(), sizeof(float) * (n - 1) * E))
                << what;
            EXPECT_NE(0, std::memcmp(h_last.data() + (n - 1) * E, h_prefix.data() + (n - 1) * E,
                                     sizeof(float) * E))
                << what;
            // One query row may take another attention path than many (rounding only).
            const float tol = bf16 ? 2e-2f : 1e-4f;
            for (int64_t i = 0; i < E; ++i) {
                const float want = h_all[(n - 1) * E + i];
                ASSERT_NEAR(h_last[(n - 1) * E + i], want, tol * (1.0f + std::abs(want)))
                    << what << " " << i;
            }
        }
    }
}

// LayerRun::cut (a LazyLLM boundary inside the layer before it): every row stores its K/V at
// the cut layer, exactly as without the cut; the rows the cut returns finish that layer as in
// a run over all rows; the others stay at the layer's input. Rows that stopped there (their
// input and query saved by the cut, as the Aux slots do) finish it later in a call over fewer
// rows than the cut returns (a decode step reviving them): the path and buffers are chosen
// again for the larger count. With the default precision where QuantLinear has a fast path, a
// decode step's rows stay on the quantized weights up to quant_max_rows() and go to the GEMMs
// beyond (n = 800 revives 533 rows).
TEST(ForwardTest, CutRunsTheRestOfTheLayerOnTheRowsItReturns) {
    std::vector<kernels::GemmPrecision> precisions = {kernels::GemmPrecision::kF32};
    if (testing::cpu_has_bf16_gemm()) precisions.push_back(kernels::GemmPrecision::kBf16);
    kernels::KernelContext ctx;
    ctx.isa = testing::engine_isa();
    if (kernels::QuantLinear::has_fast_path(ctx)) precisions.push_back(kernels::GemmPrecision::kAuto);
    for (const kernels::GemmPrecision precision : precisions) {
        testing::TinyModelSpec spec;
        spec.n_layer = 3;
        spec.n_ctx = 1024;
        const std::string name = precision == kernels::GemmPrecision::kAuto   ? "auto"
                                 : precision == kernels::GemmPrecision::kBf16 ? "bf16"
                                                                              : "f32";
        auto model = load(spec, temp_path("cut_" + name), precision);
        ASSERT_NE(model, nullptr);
        const bool bf16 = model->gemm_bf16();
        if (precision == kernels::GemmPrecision::kAuto) {
            ASSERT_TRUE(model->quantized_decode());
        }
        const ModelConfig& cfg = model->config();
        const int64_t E = cfg.n_embd, Q = cfg.n_embd_q();
        const kernels::KvType type = model->kv_type();
        const float tol = bf16 ? 2e-2f : 1e-4f;  // another row count, another rounding only
        for (const int n : {23, 300, 800}) {
            const std::string what = name + " n=" + std::to_string(n);
            const auto ids = random_ids(n, cfg.n_vocab, 13);
            std::vector<int32_t> pos(n);
            std::iota(pos.begin(), pos.end(), 0);
            std::vector<float> h_all(static_cast<size_t>(n) * E);
            ASSERT_TRUE(model->embed(ids.data(), n, h_all.data()).ok());
            std::vector<float> h_in = h_all, h_cut = h_all;
            ForwardScratch s;
            // Reference: layers 0 and 1 on every row, and layer 0 alone (layer 1's input).
            KvCache kv_all(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, type);
            KvCache kv_in(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, type);
            LayerRun all{h_all.data(), pos.data(), n, nullptr, n, 0, 2, nullptr};
            model->forward_layers(all, kv_all, s);
            LayerRun in = all;
            in.h = h_in.data();
            in.il_end = 1;
            model->forward_layers(in, kv_in, s);

            // Keep every third row and the last; save every row's input and query at layer 1.
            std::vector<int32_t> kept_rows, kept_pos, cut_rows;
            for (int i = 0; i < n; ++i) {
                (i % 3 == 0 || i == n - 1 ? kept_rows : cut_rows).push_back(i);
            }
            for (int32_t i : kept_rows) kept_pos.push_back(pos[i]);
            std::vector<float> saved_h(static_cast<size_t>(n) * E), saved_q(static_cast<size_t>(n) * Q);
            std::vector<float> tail_h, tail_q;
            int calls = 0;
            KvCache kv_cut(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, type);
            LayerRun cut = all;
            cut.h = h_cut.data();
            cut.cut = [&](const float* qkv, int64_t ld) {
                ++calls;
                for (int i = 0; i < n; ++i) {
                    std::memcpy(&saved_h[i * E], &h_cut[i * E], sizeof(float) * E);
                    std::memcpy(&saved_q[i * Q], qkv + i * ld, sizeof(float) * Q);
                }
                tail_h.clear();
                tail_q.clear();
                for (int32_t i : kept_rows) {
                    tail_h.insert(tail_h.end(), &saved_h[i * E], &saved_h[(i + 1) * E]);
                    tail_q.insert(tail_q.end(), &saved_q[i * Q], &saved_q[(i + 1) * Q]);
                }
                return TailRows{tail_h.data(), tail_q.data(), Q, kept_pos.data(),
                                static_cast<int64_t>(kept_pos.size())};
            };
            model->forward_layers(cut, kv_cut, s);
            ASSERT_EQ(calls, 1) << what;
            for (int il = 0; il < 2; ++il) {
                EXPECT_TRUE(testing::same_kv_rows(kv_all, kv_cut, il, n))
                    << what << " layer " << il;
            }
            EXPECT_EQ(h_cut, h_in) << what << ": the run's own rows stay at layer 1's input";
            EXPECT_EQ(saved_h, h_in) << what;
            for (size_t k = 0; k < kept_rows.size(); ++k) {
                for (int64_t e = 0; e < E; ++e) {
                    const float want = h_all[kept_rows[k] * E + e];
                    ASSERT_NEAR(tail_h[k * E + e], want, tol * (1.0f + std::abs(want)))
                        << what << " kept row " << kept_rows[k];
                }
            }

            // Later: a call over the last row alone, at layer 1 only, whose cut brings in the
            // rows that stopped there (more rows than the call has), over the same keys.
            std::vector<int32_t> revive_pos;
            std::vector<float> rev_h, rev_q;
            for (int32_t i : cut_rows) {
                revive_pos.push_back(pos[i]);
                rev_h.insert(rev_h.end(), &saved_h[i * E], &saved_h[(i + 1) * E]);
                rev_q.insert(rev_q.end(), &saved_q[i * Q], &saved_q[(i + 1) * Q]);
            }
            // The same later call as a prompt step (prefill weights), on a copy of the cache.
            KvCache kv_prompt(cfg.n_layer, n, cfg.n_head_kv, cfg.head_dim, type);
            for (int il = 0; il < 2; ++il) {
                testing::copy_kv_rows(kv_prompt, kv_cut, il, n);
            }
            std::vector<float> rev_h_prompt = rev_h;
            std::vector<float> h_last(&h_in[(n - 1) * E], &h_in[n * E]);
            std::vector<float> h_last_prompt = h_last;
            LayerRun later{h_last.data(), pos.data() + n - 1, 1, nullptr, n, 1, 2, nullptr};
            later.cut = [&](const float*, int64_t) {
                return TailRows{rev_h.data(), rev_q.data(), Q, revive_pos.data(),
                                static_cast<int64_t>(revive_pos.size())};
            };
            model->forward_layers(later, kv_cut, s);
            // The quantized path rounds the activations to int8 per block of 32: errors of
            // 2.4e-3 here, where the GEMMs' are 0 (fp32, the same sums in another grouping).
            const bool later_quant = model->quantized_decode() &&
                                     static_cast<int64_t>(cut_rows.size()) <= model->quant_max_rows();
            const float later_tol = later_quant ? 1e-2f : tol;
            for (size_t k = 0; k < cut_rows.size(); ++k) {
                for (int64_t e = 0; e < E; ++e) {
                    const float want = h_all[cut_rows[k] * E + e];
                    const float err = std::abs(rev_h[k * E + e] - want) / (1.0f + std::abs(want));
                    ASSERT_LE(err, later_tol) << what << " revived row " << cut_rows[k];
                }
            }
            // Which weights ran shows against the prompt step, which runs on the GEMMs: other
            // values on the quantized path, the same bits on the GEMMs.
            LayerRun later_prompt = later;
            later_prompt.h = h_last_prompt.data();
            later_prompt.prompt = true;
            later_prompt.cut = [&](const float*, int64_t) {
                return TailRows{rev_h_prompt.data(), rev_q.data(), Q, revive_pos.data(),
                                static_cast<int64_t>(revive_pos.size())};
            };
            model->forward_layers(later_prompt, kv_prompt, s);
            if (later_quant) {
                EXPECT_NE(rev_h, rev_h_prompt) << what;
            } else {
                EXPECT_EQ(rev_h, rev_h_prompt) << what;
            }
        }
    }
}

}  // namespace
}  // namespace lazyllm
