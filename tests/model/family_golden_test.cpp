// Each model family the engine targets against HF transformers: tiny random-weight checkpoints
// of Llama 3.2 (rope_freqs), Mistral v0.3, Qwen2.5 (QKV bias), Qwen3 (QK norm), Phi-3 (fused
// QKV and gate|up) and Gemma 3 (sliding window, 5 local : 1 global), converted by llama.cpp's
// own convert_hf_to_gguf.py. The GGUFs and the reference dumps are committed
// (tests/golden/families/, made by scripts/golden_families.py; docs/golden.md, Model
// families), so this suite needs no Python and no download.
//
// The GGUF holds the reference's weights bit for bit (the script checks it), and the engine
// runs its exact path (fp32 GEMMs, fp32 KV cache, no quantized decode), so the differences are
// summation order and fp32 rounding only: below 1e-6 of the largest |value| on these sizes
// (measured 9e-6 to 1.8e-5 on logits up to ~36, AVX2 and scalar).
// Tolerance: 1e-4 x max(1, max |reference value|), per sequence for the logits and per layer and
// sequence for the hidden states. A wrong architecture detail (a missing norm, the wrong rope base
// or window, biases, row order) moves values by a sizeable fraction of that scale.
//
// Each layer runs as its own forward_layers call, so the residual stream after every layer is
// compared with transformers' at the stored positions; a failure names the first layer that
// differs. A family whose GGUF the engine does not load fails with the loader's error.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "model/llama_model.h"
#include "support/cpu.h"

namespace lazyllm {
namespace {

constexpr double kRelTol = 1e-4;

std::string family_dir() { return std::string(LAZYLLM_TEST_GOLDEN_DIR) + "/families"; }

nlohmann::json golden(const std::string& family) {
    std::ifstream in(family_dir() + "/" + family + ".json");
    EXPECT_TRUE(in.good()) << "missing " << family_dir() << "/" << family << ".json";
    return in.good() ? nlohmann::json::parse(in) : nlohmann::json();
}

double max_abs(const std::vector<double>& v) {
    double m = 0;
    for (double x : v) m = std::max(m, std::abs(x));
    return m;
}

double logsumexp(const float* v, int n) {
    const double mx = *std::max_element(v, v + n);
    double z = 0;
    for (int i = 0; i < n; ++i) z += std::exp(static_cast<double>(v[i]) - mx);
    return mx + std::log(z);
}

// The engine's outputs for one sequence: the residual stream after the embedding and after
// each layer at the stored positions, and the logits at every position.
struct EngineRun {
    std::vector<std::vector<std::vector<float>>> layers;  // [n_layer][n_positions][n_embd]
    std::vector<std::vector<float>> embd;                 // [n_positions][n_embd]
    std::vector<float> logits;                            // [n_tokens, n_vocab]
};

EngineRun run_sequence(const LlamaModel& m, const std::vector<int32_t>& ids,
                       const std::vector<int>& positions) {
    const ModelConfig& c = m.config();
    const int64_t n = static_cast<int64_t>(ids.size());
    const size_t E = static_cast<size_t>(c.n_embd);
    KvCache kv(c.n_layer, n, c.n_head_kv, c.head_dim, kernels::KvType::kF32);
    ForwardScratch s;
    std::vector<float> h(static_cast<size_t>(n) * E);  // [n, n_embd]
    std::vector<int32_t> pos(n);
    std::iota(pos.begin(), pos.end(), 0);
    EngineRun r;
    auto rows = [&] {
        std::vector<std::vector<float>> out;
        for (int p : positions) out.emplace_back(h.begin() + p * E, h.begin() + (p + 1) * E);
        return out;
    };
    EXPECT_TRUE(m.embed(ids.data(), n, h.data()).ok());
    r.embd = rows();
    for (int il = 0; il < c.n_layer; ++il) {
        LayerRun run{h.data(), pos.data(), n, nullptr, n, il, il + 1, nullptr};
        m.forward_layers(run, kv, s);
        r.layers.push_back(rows());
    }
    r.logits.resize(static_cast<size_t>(n) * c.n_vocab);
    for (int64_t p = 0; p < n; ++p) {
        m.logits(h.data() + p * E, n, false, r.logits.data() + p * c.n_vocab, s);
    }
    return r;
}

// Largest |got - want| over rows of the same shape, and where.
struct Diff {
    double max = 0, scale = 1;  // scale: max(1, max |want|)
    int row = -1;
    bool within() const { return max <= kRelTol * scale; }
};

Diff compare_rows(const std::vector<std::vector<float>>& got, const nlohmann::json& want) {
    Diff d;
    for (size_t i = 0; i < got.size(); ++i) {
        const auto w = want[i].get<std::vector<double>>();
        d.scale = std::max(d.scale, max_abs(w));
        for (size_t k = 0; k < w.size(); ++k) {
            const double e = std::abs(got[i][k] - w[k]);
            if (e > d.max) d.max = e, d.row = static_cast<int>(i);
        }
    }
    return d;
}

class FamilyGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilyGolden, MatchesTransformers) {
    const std::string family = GetParam();
    const nlohmann::json g = golden(family);
    ASSERT_FALSE(g.is_null());
    const std::string path = family_dir() + "/" + g["gguf"]["file"].get<std::string>();
    ASSERT_TRUE(std::filesystem::exists(path)) << "missing " << path;
    ASSERT_EQ(std::filesystem::file_size(path), g["gguf"]["bytes"].get<uintmax_t>())
        << path << " is not the file " << family << ".json was made from";

    ModelLoadOptions o;
    o.ctx.isa = testing::engine_isa();
    o.ctx.n_threads = 2;
    o.precision = kernels::GemmPrecision::kF32;
    o.quantized_decode = false;
    auto loaded = LlamaModel::load(path, o);
    ASSERT_TRUE(loaded.ok()) << family << " (" << g["real_model"].get<std::string>()
                             << "): " << loaded.error().message();
    const LlamaModel& m = **loaded;
    const ModelConfig& c = m.config();
    ASSERT_EQ(c.n_layer, g["n_layer"].get<int>());
    ASSERT_EQ(c.n_embd, g["n_embd"].get<int>());
    ASSERT_EQ(c.n_vocab, g["n_vocab"].get<int>());

    for (const auto& seq : g["sequences"]) {
        const std::string name = family + "/" + seq["name"].get<std::string>();
        const auto ids = seq["ids"].get<std::vector<int32_t>>();
        const auto& hid = seq["hidden"];
        const auto hid_pos = hid["positions"].get<std::vector<int>>();
        const EngineRun r = run_sequence(m, ids, hid_pos);

        // Layers in order: the first one outside the tolerance is where the bug is.
        int first_bad = -1;
        for (int il = 0; il < c.n_layer && first_bad < 0; ++il) {
            const Diff d = compare_rows(r.layers[il], hid["layers"][il]);
            if (d.within()) continue;
            first_bad = il;
            std::string why = fmt::format(
                "{}: layer {} is the first layer that differs: max |h - transformers| {:.3g} at "
                "pos {} (tolerance {:.3g})",
                name, il, d.max, hid_pos[d.row], kRelTol * d.scale);
            if (il == 1) why += "; layer 0 matches";
            if (il > 1) why += fmt::format("; layers 0-{} match", il - 1);
            const Diff e = compare_rows(r.embd, hid["embd"]);
            if (il == 0 && !e.within()) {
                why += fmt::format(
                    "; embed() output differs by {:.3g} too (transformers' Gemma embedding "
                    "includes the sqrt(n_embd) scale; an engine may apply it after embed())",
                    e.max);
            }
            ADD_FAILURE() << why;
        }

        // Logits: logsumexp and the top-k at every position, full rows at some.
        const auto& lg = seq["logits"];
        double scale = 1;
        for (const char* key : {"top_logits", "full"}) {
            for (const auto& row : lg[key]) {
                scale = std::max(scale, max_abs(row.get<std::vector<double>>()));
            }
        }
        const double tol = kRelTol * scale;
        double worst = 0;
        int worst_pos = -1;
        auto note = [&](double e, int p) {
            if (e > worst) worst = e, worst_pos = p;
        };
        const auto lse = lg["logsumexp"].get<std::vector<double>>();
        int argmax_bad = 0, first_argmax_bad = -1;
        for (size_t p = 0; p < ids.size(); ++p) {
            const float* row = r.logits.data() + p * c.n_vocab;
            note(std::abs(logsumexp(row, c.n_vocab) - lse[p]), static_cast<int>(p));
            const auto top_ids = lg["top_ids"][p].get<std::vector<int>>();
            const auto top = lg["top_logits"][p].get<std::vector<double>>();
            for (size_t k = 0; k < top.size(); ++k) {
                note(std::abs(row[top_ids[k]] - top[k]), static_cast<int>(p));
            }
            const auto argmax = std::max_element(row, row + c.n_vocab) - row;
            if (top[0] - top[1] > tol && argmax != top_ids[0]) {
                if (argmax_bad++ == 0) first_argmax_bad = static_cast<int>(p);
            }
        }
        EXPECT_EQ(argmax_bad, 0) << name << ": argmax differs from transformers' at " << argmax_bad
                                 << " positions, the first at pos " << first_argmax_bad;
        const auto full_pos = lg["full_positions"].get<std::vector<int>>();
        for (size_t i = 0; i < full_pos.size(); ++i) {
            const auto want = lg["full"][i].get<std::vector<double>>();
            const float* row = r.logits.data() + static_cast<size_t>(full_pos[i]) * c.n_vocab;
            for (int v = 0; v < c.n_vocab; ++v) note(std::abs(row[v] - want[v]), full_pos[i]);
        }
        EXPECT_LE(worst, tol) << name << ": max |logit - transformers| at pos " << worst_pos
                              << (first_bad < 0 ? "; every layer's output matches, so the final "
                                                  "norm or the LM head differs"
                                                : "");
        std::printf("[%s] %zu tokens: max |logit diff| %.2e (tolerance %.2e)\n", name.c_str(),
                    ids.size(), worst, tol);
    }
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyGolden,
                         ::testing::Values("llama3", "mistral", "qwen2", "qwen3", "phi3", "gemma3"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             return info.param;
                         });

}  // namespace
}  // namespace lazyllm
