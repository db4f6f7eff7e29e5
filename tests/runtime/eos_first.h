// Tiny engines shared by the runtime tests: prompts of plain ids, and a model whose
// end-of-generation token is the one greedy decoding picks first.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "lazyllm/engine.h"
#include "lazyllm/gguf.h"
#include "support/tiny_model.h"

namespace lazyllm {

inline std::vector<TokenId> prompt_ids(int n, int n_vocab) {
    std::vector<TokenId> ids(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = (7 * i + 3) % n_vocab;
    return ids;
}

// A tiny model `spec` written to the test temp folder as `name`, loaded with n_threads; null
// when either fails.
inline std::unique_ptr<Engine> load_tiny_engine(const std::string& name,
                                                const testing::TinyModelSpec& spec,
                                                int n_threads = 2) {
    const std::string path = ::testing::TempDir() + name;
    if (!testing::write_tiny_model(spec, path).ok()) return nullptr;
    EngineOptions eo;
    eo.model_path = path;
    eo.n_threads = n_threads;
    auto e = Engine::load(eo);
    return e.ok() ? std::move(*e) : nullptr;
}

// A tiny model whose EOS is the token greedy decoding picks first after prompt_ids(12).
struct EosFirst {
    std::unique_ptr<Engine> engine;
    std::vector<TokenId> prompt;
    TokenId eos = -1;
};

inline EosFirst eos_first_model(const std::string& name) {
    testing::TinyModelSpec spec;
    spec.n_layer = 2;
    spec.seed = 5;
    EosFirst m;
    const std::string plain = ::testing::TempDir() + name + "_plain.gguf";
    if (!testing::write_tiny_model(spec, plain).ok()) return m;
    EngineOptions eo;
    eo.model_path = plain;
    eo.n_threads = 1;
    auto e0 = Engine::load(eo);
    if (!e0.ok()) return m;
    m.prompt = prompt_ids(12, (*e0)->summary().n_vocab);
    RunOptions ro;
    ro.max_new_tokens = 1;
    ro.ignore_eos = true;
    auto g0 = (*e0)->generate(m.prompt, ro);
    if (!g0.ok() || g0->tokens.size() != 1u) return m;
    GgufWriter w = testing::tiny_model_writer(spec);
    w.set_uint32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(g0->tokens[0]));
    eo.model_path = ::testing::TempDir() + name + ".gguf";
    if (!w.write(eo.model_path).ok()) return m;
    auto e = Engine::load(eo);
    if (!e.ok()) return m;
    m.engine = std::move(*e);
    m.eos = g0->tokens[0];
    return m;
}

}  // namespace lazyllm
