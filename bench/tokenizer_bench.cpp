// Tokenizer throughput on the default model's vocabulary (SmolLM2, byte-level BPE, 49k merges):
// encoding ~1 MB of English text on one thread, and decoding the ids back. Reports bytes/s of
// text. Target: >= 5 MB/s encode on one core.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "lazyllm/gguf.h"
#include "lazyllm/tokenizer.h"

namespace lazyllm {
namespace {

// Same lookup as scripts/fetch_model.py and tests/support/model_path.h.
std::string default_model_path() {
    constexpr const char* kFile = "SmolLM2-135M-Instruct.Q4_1.gguf";
    if (const char* p = std::getenv("LAZYLLM_MODEL")) return p;
    std::filesystem::path dir;
    if (const char* d = std::getenv("LAZYLLM_MODEL_DIR")) {
        dir = d;
    } else if (const char* x = std::getenv("XDG_CACHE_HOME")) {
        dir = std::filesystem::path(x) / "lazyllm" / "models";
    } else if (const char* h = std::getenv("HOME")) {
        dir = std::filesystem::path(h) / ".cache" / "lazyllm" / "models";
    } else {
        return {};
    }
    return (dir / kFile).string();
}

// ~1 MB of English prose: sentences drawn with a fixed seed, with paragraph breaks, so the
// word sequence does not repeat with a short period.
std::string english_text(size_t bytes) {
    static constexpr const char* kSentences[] = {
        "The committee met on Tuesday to review the budget for the coming year.",
        "She walked along the river, watching the light change on the water.",
        "In 1865, the railway finally reached the small town at the foot of the hills.",
        "Researchers found that the new method reduced errors by nearly 40 percent.",
        "He couldn't remember where he'd left the keys, so he searched every drawer twice.",
        "Most of the questions were easy, but the last one took almost an hour.",
        "The library's collection includes rare maps, letters, and early photographs.",
        "When the storm passed, the children ran outside to look for fallen branches.",
        "Prices rose sharply in March, then settled as supply caught up with demand.",
        "A good explanation starts with what the reader already knows.",
        "They're planning to open a second store downtown before the end of summer.",
        "The engine starts slowly in cold weather, which is normal for older models.",
        "Our results suggest that smaller models can match larger ones on simple tasks.",
        "Please send the signed forms back by Friday, or call us if you have questions.",
        "Across the valley, the bells of the old church rang out at noon.",
        "Learning a language takes patience, practice, and a willingness to make mistakes.",
        "The recipe calls for two cups of flour, one egg, and a pinch of salt.",
        "Historians still disagree about the causes of the conflict.",
        "If the test fails again, we'll roll back the change and investigate further.",
        "The museum is closed on Mondays but stays open late on Thursday evenings.",
    };
    constexpr size_t kN = sizeof(kSentences) / sizeof(kSentences[0]);
    std::mt19937 rng(1234);
    std::string text;
    text.reserve(bytes + 256);
    int in_paragraph = 0;
    while (text.size() < bytes) {
        text += kSentences[rng() % kN];
        if (++in_paragraph == 6) {
            text += "\n\n";
            in_paragraph = 0;
        } else {
            text += ' ';
        }
    }
    return text;
}

struct Fixture {
    GgufFile gguf;
    Tokenizer tok;
    std::string text;
    std::vector<TokenId> ids;
    std::string error;
};

const Fixture& fixture() {
    static const Fixture* f = [] {
        auto* fx = new Fixture;
        const std::string path = default_model_path();
        if (path.empty() || !std::filesystem::exists(path)) {
            fx->error = "default model not found (" + path + "); run scripts/fetch_model.py";
            return fx;
        }
        auto gguf = GgufFile::open(path);
        if (!gguf.ok()) {
            fx->error = gguf.error().message();
            return fx;
        }
        fx->gguf = std::move(gguf).value();
        auto tok = Tokenizer::from_gguf(fx->gguf);
        if (!tok.ok()) {
            fx->error = tok.error().message();
            return fx;
        }
        fx->tok = std::move(tok).value();
        fx->text = english_text(1 << 20);
        fx->ids = fx->tok.encode(fx->text);
        return fx;
    }();
    return *f;
}

void BM_TokenizerEncodeEnglish1MB(benchmark::State& state) {
    const Fixture& fx = fixture();
    if (!fx.error.empty()) {
        state.SkipWithError(fx.error.c_str());
        return;
    }
    size_t n_tokens = 0;
    for (auto _ : state) {
        std::vector<TokenId> ids = fx.tok.encode(fx.text);
        n_tokens = ids.size();
        benchmark::DoNotOptimize(ids.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * fx.text.size()));
    state.counters["tokens"] = static_cast<double>(n_tokens);
    state.counters["tokens/s"] = benchmark::Counter(
        static_cast<double>(n_tokens * state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TokenizerEncodeEnglish1MB)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_TokenizerDecodeEnglish1MB(benchmark::State& state) {
    const Fixture& fx = fixture();
    if (!fx.error.empty()) {
        state.SkipWithError(fx.error.c_str());
        return;
    }
    for (auto _ : state) {
        std::string text = fx.tok.decode(fx.ids);
        benchmark::DoNotOptimize(text.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * fx.text.size()));
}
BENCHMARK(BM_TokenizerDecodeEnglish1MB)->Unit(benchmark::kMillisecond);

void BM_TokenizerLoad(benchmark::State& state) {
    const Fixture& fx = fixture();
    if (!fx.error.empty()) {
        state.SkipWithError(fx.error.c_str());
        return;
    }
    for (auto _ : state) {
        auto tok = Tokenizer::from_gguf(fx.gguf);
        benchmark::DoNotOptimize(tok.ok());
    }
}
BENCHMARK(BM_TokenizerLoad)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lazyllm
