// lazyllm: one CLI over the library. `lazyllm --help` lists the subcommands.
#include <cstdio>
#include <map>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"

int main(int argc, char** argv) {
    using namespace lazyllm::cli;
    CLI::App app{"lazyllm: fast time-to-first-token for long prompts (LazyLLM dynamic token pruning)"};
    app.set_version_flag("--version", std::string(LAZYLLM_VERSION));
    app.require_subcommand(1);
    std::map<CLI::App*, Runner> runners;
    std::string names;  // "info, tokenize, ..."
    auto add = [&](const char* name, const char* desc, Runner (*fn)(CLI::App&)) {
        CLI::App* sub = app.add_subcommand(name, desc);
        runners[sub] = fn(*sub);
        names += std::string(names.empty() ? "" : ", ") + name;
    };
    add("info", "Show a GGUF model's architecture, hyper-parameters, tokenizer and tensors", add_info);
    add("tokenize", "Print the token ids of a text", add_tokenize);
    add("run", "Generate from a prompt (full or pruned prefill), streaming to stdout", add_run);
    add("bench", "Prefill and decode speed per prompt length and policy (llama-bench style)", add_bench);
    add("eval", "Accuracy, TTFT speedup and % computed per pruning policy; --fidelity", add_eval);
    add("tune", "Search the fastest pruning schedule that keeps a target accuracy", add_tune);
    add("serve", "OpenAI-compatible HTTP server with per-request pruning and a multi-turn cache", add_serve);
    // The first word names the subcommand (the app's own flags, --help and --version, start
    // with '-'); CLI11 would only say that one is required.
    const auto is_subcommand = [&](const char* word) {
        for (const auto& [sub, run] : runners) {
            if (sub->check_name(word)) return true;
        }
        return false;
    };
    if (argc > 1 && argv[1][0] != '-' && !is_subcommand(argv[1])) {
        std::fprintf(stderr, "lazyllm: error: unknown subcommand '%s' (subcommands: %s)\n", argv[1],
                     names.c_str());
        return kExitUsage;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : kExitUsage;
    }
    for (auto& [sub, run] : runners) {
        if (!sub->parsed()) continue;
        try {
            return run();
        } catch (const std::bad_alloc&) {
            // A model whose sizes are within every bound and still need more memory than there
            // is (a context of 100M tokens, a huge metadata array): an error, not an abort.
            std::fprintf(stderr,
                         "lazyllm: error: out of memory (the model's sizes, -c or the prompt need "
                         "more than this machine has)\n");
            return kExitFailure;
        }
    }
    return kExitUsage;
}
