// The smallest program on lazyllm's library (include/lazyllm/): load a GGUF model, answer one
// prompt with full prefill and then with LazyLLM under the model's safe preset (greedy both
// times), and print each answer with its time to first token.
//   lazyllm-simple MODEL.gguf "The capital of France is" [N_TOKENS]
//   lazyllm-simple MODEL.gguf @long_prompt.txt 32
// stdout: each answer after a "[full]" or "[lazy]" line; stderr: each run's figures.
// One run of each, full first (it also pages the weights in): `lazyllm run --compare` and
// `lazyllm bench` measure speedups.
#include <lazyllm/engine.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

// The prompt argument: the text itself, or after '@' the name of a file holding it.
bool read_prompt(const char* arg, std::string& text) {
    if (arg[0] != '@') {
        text = arg;
        return true;
    }
    std::ifstream in(arg + 1, std::ios::binary);
    std::ostringstream contents;
    contents << in.rdbuf();
    text = contents.str();
    return !in.bad() && in.is_open();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3 || argc > 4) {
        std::fprintf(stderr, "usage: %s MODEL.gguf PROMPT|@FILE [N_TOKENS]\n", argv[0]);
        return 2;
    }
    std::string text;
    if (!read_prompt(argv[2], text)) {
        std::fprintf(stderr, "error: cannot read the prompt file '%s'\n", argv[2] + 1);
        return 2;
    }
    long n_tokens = 32;
    if (argc == 4) {
        char* end = nullptr;
        n_tokens = std::strtol(argv[3], &end, 10);
        if (end == argv[3] || *end != '\0' || n_tokens < 1 || n_tokens > 4096) {
            std::fprintf(stderr, "error: N_TOKENS must be an integer in [1, 4096], got '%s'\n",
                         argv[3]);
            return 2;
        }
    }

    lazyllm::EngineOptions engine_options;
    engine_options.model_path = argv[1];
    lazyllm::Result<std::unique_ptr<lazyllm::Engine>> loaded =
        lazyllm::Engine::load(engine_options);
    if (!loaded) {
        std::fprintf(stderr, "error: %s\n", loaded.error().message().c_str());
        return 1;
    }
    const lazyllm::Engine& engine = **loaded;
    const std::vector<lazyllm::TokenId> prompt = engine.tokenizer().encode(text);

    lazyllm::RunOptions run;  // greedy: SamplingParams' temperature is 0
    run.max_new_tokens = static_cast<int>(n_tokens);
    for (const lazyllm::Policy policy : {lazyllm::Policy::kFull, lazyllm::Policy::kLazy}) {
        run.prune.policy = policy;  // kLazy with no schedule: the model's safe preset
        const std::string name(lazyllm::policy_name(policy));
        std::printf("[%s]\n", name.c_str());
        const lazyllm::Result<lazyllm::GenerateResult> result =
            engine.generate(prompt, run, [](std::string_view piece) {
                std::fwrite(piece.data(), 1, piece.size(), stdout);
                std::fflush(stdout);
                return true;
            });
        if (!result) {
            std::fprintf(stderr, "error: %s\n", result.error().message().c_str());
            return 1;
        }
        std::printf("\n");
        std::fprintf(stderr,
                     "%s: %lld prompt tokens, time to first token %.1f ms, %lld tokens "
                     "(%s), %.0f%% of the prompt's token-layers computed in prefill\n",
                     name.c_str(), static_cast<long long>(result->n_prompt), result->ttft_ms,
                     static_cast<long long>(result->n_gen), result->stop_reason.c_str(),
                     100.0 * result->prefill_fraction_computed);
    }
    return 0;
}
