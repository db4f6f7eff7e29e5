// Session::truncate (the server's multi-turn cache, include/lazyllm/conversation.h): forgetting
// the tokens past n and stepping on gives what a session that never saw them gives, bit for bit
// on the full path; with LazyLLM the invariants (check_invariants) hold across truncations at
// random points, including inside pruned regions whose tokens wait in Aux slots. On the GGUF's
// own blocks (the int8 prefill) a prompt's logits do not depend on how it is split into steps.
// A session created on a finished one's buffers (Session::create's donor, Engine::generate's
// reuse) gives a fresh session's bits under every policy pair, with the KV cache taken where
// its shape matches and made anew where not.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "lazyllm/gguf.h"
#include "model/llama_model.h"
#include "runtime/session.h"
#include "runtime/session_fixture.h"

namespace lazyllm {
namespace {

using testing::ids_for;

std::unique_ptr<LlamaModel> tiny_model(int n_layer, const std::string& tag) {
    return testing::tiny_session_model(n_layer, "truncate_" + tag, /*seed=*/11);
}

std::vector<float> step(Session& s, const std::vector<int32_t>& ids, int n_vocab,
                        StepTokens kind = StepTokens::kGenerated) {
    std::vector<float> logits(static_cast<size_t>(n_vocab));
    auto st = s.step(ids, logits.data(), kind);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message());
    return logits;
}

TEST(SessionTruncate, FullPathEqualsASessionThatNeverSawTheTail) {
    auto model = tiny_model(4, "full");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab;
    SessionOptions o;
    o.n_ctx = 96;
    o.check_invariants = true;
    const auto prompt = ids_for(30, V, 1), tail = ids_for(9, V, 2), other = ids_for(7, V, 3);
    auto a = Session::create(*model, o).value();
    step(a, prompt, V);
    step(a, tail, V);
    a.truncate(30);
    EXPECT_EQ(a.n_past(), 30);
    EXPECT_EQ(a.tokens(), prompt);
    const auto la = step(a, other, V);
    auto b = Session::create(*model, o).value();
    step(b, prompt, V);
    const auto lb = step(b, other, V);
    ASSERT_EQ(0, std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)));
    // To zero: the next step is a prefill again.
    a.truncate(0);
    EXPECT_EQ(a.n_past(), 0);
    const auto l0 = step(a, prompt, V);
    auto c = Session::create(*model, o).value();
    const auto lc = step(c, prompt, V);
    ASSERT_EQ(0, std::memcmp(l0.data(), lc.data(), l0.size() * sizeof(float)));
    EXPECT_DOUBLE_EQ(a.prompt_fraction_computed(), 1.0);
}

TEST(SessionTruncate, LazyInvariantsHoldAcrossTruncations) {
    auto model = tiny_model(8, "lazy");
    ASSERT_NE(model, nullptr);
    const int L = model->config().n_layer;
    const int V = model->config().n_vocab;
    std::mt19937 rng(7);
    for (int trial = 0; trial < 20; ++trial) {
        SessionOptions o;
        o.n_ctx = 256;
        o.policy = prune::Policy::kLazy;
        o.schedule.boundaries = {2, 4, 6};
        o.schedule.keep = {0.6f, 0.35f, 0.2f};
        o.schedule.prune_decode = trial % 2 == 0;
        o.schedule.keep_first = static_cast<int>(rng() % 3);
        o.check_invariants = true;  // a broken invariant aborts the step
        auto s = Session::create(*model, o).value();
        step(s, ids_for(20 + static_cast<int>(rng() % 40), V, static_cast<uint32_t>(trial)), V);
        for (int turn = 0; turn < 4; ++turn) {
            for (int k = 0; k < 3; ++k) step(s, ids_for(1, V, static_cast<uint32_t>(100 * trial + k)), V);
            const int64_t n = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(s.n_past()));
            s.truncate(n);
            ASSERT_EQ(s.n_past(), n);
            ASSERT_EQ(static_cast<int64_t>(s.tokens().size()), n);
            for (int64_t t = n; t < s.n_ctx(); ++t) ASSERT_EQ(s.depth()[t], 0) << t;
            step(s, ids_for(2 + static_cast<int>(rng() % 12), V, static_cast<uint32_t>(1000 * trial + turn)), V);
            EXPECT_EQ(s.depth()[s.n_past() - 1], L);
            EXPECT_LE(s.prompt_fraction_computed(), 1.0);
        }
    }
}

// PrefillWeights::kQuant with outlier channels in the normed inputs (each row's leave its
// int8 blocks, chosen from the row alone): a 40-token prompt in one step, in 25 + 15 (the rest
// of a prompt a cache held) and in 39 + 1 gives the same logits bit for bit. The last token as
// a generated one (a decode step: every channel rounded) does not, so the outliers matter here.
// Steps of 64 tokens or more, which on AMX run on bf16 tiles, do not depend on the split either
// (160 in one step, 64 + 96).
TEST(SessionTruncate, QuantPrefillLogitsDoNotDependOnTheSplit) {
    testing::TinyModelSpec spec;
    spec.n_layer = 3;
    spec.weight_type = GgmlType::Q8_0;
    spec.norm_outlier = 40.0f;
    const std::string path = ::testing::TempDir() + "lazyllm_session_quant_split.gguf";
    ASSERT_TRUE(testing::write_tiny_model(spec, path).ok());
    ModelLoadOptions lo;
    lo.ctx.isa = testing::model_load_isa();
    lo.ctx.n_threads = 2;
    lo.prefill_weights = PrefillWeights::kQuant;
    auto model = LlamaModel::load(path, lo);
    if (!model.ok()) GTEST_SKIP() << model.error().message();  // no QuantLinear path
    ASSERT_TRUE((*model)->prefill_quant());
    const int V = (*model)->config().n_vocab;
    SessionOptions o;
    o.n_ctx = 64;
    const auto prompt = ids_for(40, V, 21);
    const auto part = [&](int64_t a, int64_t b) {
        return std::vector<int32_t>(prompt.begin() + a, prompt.begin() + b);
    };
    auto whole = Session::create(**model, o).value();
    const auto want = step(whole, prompt, V, StepTokens::kPrompt);
    for (const int64_t cut : {25, 39}) {
        auto split = Session::create(**model, o).value();
        step(split, part(0, cut), V, StepTokens::kPrompt);
        const auto got = step(split, part(cut, 40), V, StepTokens::kPrompt);
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
            << "cut at " << cut;
    }
    auto decode = Session::create(**model, o).value();
    step(decode, part(0, 39), V, StepTokens::kPrompt);
    const auto rounded = step(decode, part(39, 40), V, StepTokens::kGenerated);
    EXPECT_NE(0, std::memcmp(rounded.data(), want.data(), want.size() * sizeof(float)));

    // Steps of kernels::kTileMinRows tokens or more (on AMX: bf16 tiles, every call of the
    // step, its last layer's single row included) give the same logits in any such split.
    o.n_ctx = 192;
    const auto longer = ids_for(160, V, 22);
    auto whole_long = Session::create(**model, o).value();
    const auto want_long = step(whole_long, longer, V, StepTokens::kPrompt);
    auto split_long = Session::create(**model, o).value();
    step(split_long, std::vector<int32_t>(longer.begin(), longer.begin() + 64), V,
         StepTokens::kPrompt);
    const auto got_long = step(split_long, std::vector<int32_t>(longer.begin() + 64, longer.end()),
                               V, StepTokens::kPrompt);
    EXPECT_EQ(0, std::memcmp(got_long.data(), want_long.data(), want_long.size() * sizeof(float)));
}

// The FFN of a step over LayerPass::kFfnChunkRows (256) rows runs in chunks on every pass that
// writes fp32 gate|up rows (here the fp32 GEMMs with SwiGLU, and Gemma 3's GeGLU) and inside
// forward_glu_bf16 on bf16 GEMMs: a 300-token prompt in one step gives the logits of the
// same prompt in steps of 100 and 200 (no chunks), bit for bit on our GEMMs; on oneDNN's
// within 2e-5 of the logits' range (its sums change with the rows of a call, chunked or not).
TEST(SessionTruncate, FfnChunksDoNotChangeAPromptsLogits) {
    for (const std::string arch : {"llama", "gemma3"}) {
        for (const auto precision : {kernels::GemmPrecision::kF32, kernels::GemmPrecision::kAuto}) {
            testing::TinyModelSpec spec;
            spec.arch = arch;
            spec.n_layer = 3;
            spec.n_ctx = 320;
            spec.weight_scale = 0.2f;
            const std::string tag =
                "ffn_chunks_" + arch + (precision == kernels::GemmPrecision::kF32 ? "_f32" : "");
            auto model = testing::load_session_model(spec, tag, precision);
            ASSERT_NE(model, nullptr);
            const int V = model->config().n_vocab;
            SessionOptions o;
            o.n_ctx = 320;
            const auto prompt = ids_for(300, V, 31);
            auto whole = Session::create(*model, o).value();
            const auto want = step(whole, prompt, V, StepTokens::kPrompt);
            auto split = Session::create(*model, o).value();
            step(split, std::vector<int32_t>(prompt.begin(), prompt.begin() + 100), V,
                 StepTokens::kPrompt);
            const auto got = step(split, std::vector<int32_t>(prompt.begin() + 100, prompt.end()),
                                  V, StepTokens::kPrompt);
            if (testing::gemms_row_invariant(*model, precision)) {
                ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
                    << tag;
                continue;
            }
            testing::expect_close(got.data(), want.data(), want.size(), tag);
        }
    }
}

// A GGUF with general.alignment 1 (tensors at odd addresses) gives the logits of the same
// weights aligned, bit for bit: the blocks are copied where the kernels cannot read them in
// place (QuantLinear's packing, dequantize_row_f32).
TEST(SessionTruncate, UnalignedTensorsGiveTheAlignedLogits) {
    for (const GgmlType type : {GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_1, GgmlType::Q4_K}) {
        testing::TinyModelSpec spec;
        spec.n_layer = 2;
        spec.n_embd = 256;  // a multiple of the K-quants' 256-element super-blocks
        spec.n_ff = 512;
        spec.weight_type = type;
        std::vector<std::vector<float>> logits;
        for (const uint32_t alignment : {32u, 1u}) {
            spec.alignment = alignment;
            const std::string tag = std::string("align_") + std::string(ggml_type_name(type)) +
                                    "_" + std::to_string(alignment);
            if (alignment == 1) {  // the case under test: some tensor at an odd offset
                const std::vector<uint8_t> bytes = testing::build_tiny_model(spec);
                auto file = GgufFile::from_memory(bytes.data(), bytes.size(), tag);
                ASSERT_TRUE(file.ok());
                bool odd = false;
                for (const GgufTensorInfo& t : file->tensors()) {
                    odd = odd || (file->data_offset() + t.offset) % 2 != 0;
                }
                ASSERT_TRUE(odd) << tag;
            }
            auto model = testing::load_session_model(spec, tag, kernels::GemmPrecision::kAuto);
            ASSERT_NE(model, nullptr) << tag;
            const int V = model->config().n_vocab;
            auto s = Session::create(*model, SessionOptions{}).value();
            step(s, ids_for(20, V, 5), V, StepTokens::kPrompt);
            logits.push_back(step(s, ids_for(1, V, 6), V));
        }
        ASSERT_EQ(0,
                  std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)))
            << ggml_type_name(type);
    }
}

// Prompt steps (the kind whose cuts give idle row buffers back, LayerPass::release_dead_rows)
// then greedy decode steps; every step's logits.
std::vector<std::vector<float>> prompt_then_decode(Session& s, const std::vector<int32_t>& prompt,
                                                   int n_decode, int n_vocab) {
    std::vector<std::vector<float>> out{step(s, prompt, n_vocab, StepTokens::kPrompt)};
    for (int i = 0; i < n_decode; ++i) {
        out.push_back(step(s, {testing::argmax(out.back())}, n_vocab));
    }
    return out;
}

TEST(SessionDonor, BuffersOfAFinishedSessionGiveAFreshSessionsBits) {
    const SessionOptions lazy = testing::lazy_options({2, 4}, {0.5f, 0.25f});
    SessionOptions full = lazy;  // n_ctx 128, the invariants checked
    full.policy = prune::Policy::kFull;
    full.schedule = {};
    const SessionOptions lazy_repair = [] {
        SessionOptions o = testing::lazy_options({2, 4}, {0.5f, 0.25f}, /*prune_decode=*/false);
        o.schedule.repair = true;
        return o;
    }();
    SessionOptions small = full;  // another cache size: the donor's KV cache is not taken
    small.n_ctx = 100;
    auto model = tiny_model(6, "donor");
    ASSERT_NE(model, nullptr);
    const int V = model->config().n_vocab;
    const auto prompt = ids_for(70, V, 3);
    const auto other = ids_for(90, V, 4);  // what the donor ran: other values in every buffer
    const std::vector<const SessionOptions*> all = {&full, &lazy, &lazy_repair, &small};
    for (const SessionOptions* first : all) {
        for (const SessionOptions* second : all) {
            auto fresh = Session::create(*model, *second).value();
            const auto want = prompt_then_decode(fresh, prompt, 4, V);
            auto donor = Session::create(*model, *first).value();
            (void)prompt_then_decode(donor, first == &small ? ids_for(60, V, 4) : other, 3, V);
            auto s = Session::create(*model, *second, &donor).value();
            EXPECT_EQ(s.n_ctx(), second->n_ctx);
            EXPECT_EQ(s.n_past(), 0);
            EXPECT_EQ(s.aux_bytes(), fresh.aux_bytes());
            const auto got = prompt_then_decode(s, prompt, 4, V);
            ASSERT_EQ(got.size(), want.size());
            for (size_t i = 0; i < got.size(); ++i) {
                ASSERT_EQ(
                    0, std::memcmp(got[i].data(), want[i].data(), want[i].size() * sizeof(float)))
                    << "step " << i << ", policy " << static_cast<int>(second->policy) << " on "
                    << static_cast<int>(first->policy) << "'s buffers, n_ctx " << second->n_ctx
                    << " after " << first->n_ctx;
            }
            EXPECT_DOUBLE_EQ(s.prompt_fraction_computed(), fresh.prompt_fraction_computed());
        }
    }
}

}  // namespace
}  // namespace lazyllm
