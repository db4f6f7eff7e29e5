// lazyllm: one CLI over the library. `lazyllm --help` lists the subcommands.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"

namespace {

// llama.cpp's options spelled with one dash and several letters. CLI11 reads "-ngl" as "-n gl"
// (a short option and its value), which would fail naming the wrong flag, or run.
struct LlamaFlag {
    const char* flag;
    const char* note;
};
constexpr LlamaFlag kLlamaFlags[] = {
    {"-ngl", "--n-gpu-layers: lazyllm runs on the CPU"},
    {"-ngld", "--n-gpu-layers-draft: lazyllm runs on the CPU"},
    {"-fa", "--flash-attn: attention always runs in blocks here"},
    {"-cnv", "--conversation: here run --conversation (or -cnv after run)"},
    {"-no-cnv", "--no-conversation: run answers one prompt, as llama-completion"},
    {"-mli", "--multiline-input: in run --conversation a line ending in '\\' goes on"},
    {"-sys", "--system-prompt: here --system"},
    {"-tb", "--threads-batch: -t sets the threads of every step"},
    {"-ctk", "--cache-type-k: the K/V cache type is chosen per CPU"},
    {"-ctv", "--cache-type-v: the K/V cache type is chosen per CPU"},
    {"-ub", "--ubatch-size: a prompt step runs the whole prompt"},
    {"-np", "--parallel: here serve --parallel"},
    {"-cb", "--cont-batching: serve batches decode steps (--batch-decode)"},
    {"-nkvo", "--no-kv-offload: lazyllm runs on the CPU"},
    {"-sm", "--split-mode: lazyllm runs on the CPU"},
    {"-mg", "--main-gpu: lazyllm runs on the CPU"},
    {"-ts", "--tensor-split: lazyllm runs on the CPU"},
    {"-dev", "--device: lazyllm runs on the CPU"},
    {"-ot", "--override-tensor: lazyllm runs on the CPU"},
    {"-hf", "--hf-repo: models come from a file or by name (-m)"},
    {"-hfr", "--hf-repo: models come from a file or by name (-m)"},
    {"-hff", "--hf-file: models come from a file or by name (-m)"},
    {"-mu", "--model-url: models come from a file or by name (-m)"},
    {"-md", "--model-draft: no speculative decoding"},
    {"-st", "--single-turn: run answers one prompt"},
    {"-sp", "--special: tokenize --special shows special tokens' texts"},
    {"-co", "--color"},
    {"-lv", "--verbosity: -v where a subcommand has it"},
};

// The first llama.cpp multi-letter flag among the arguments (with or without "=value"), or none.
// A value spelled like one (`-p -fa`) is refused too; `--prompt=-fa` passes.
const LlamaFlag* llama_flag(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--") break;
        const std::string name = arg.substr(0, arg.find('='));
        for (const LlamaFlag& f : kLlamaFlags) {
            if (name == f.flag) return &f;
        }
    }
    return nullptr;
}

}  // namespace

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
    // --lazy (run, serve) is a flag whose preset follows an '=': "--lazy fast" would leave
    // "fast" as a stray word, which CLI11 names without saying why.
    const std::string sub = argc > 1 ? argv[1] : "";
    const bool has_lazy = sub == "run" || sub == "serve";
    for (int i = 2; has_lazy && i + 1 < argc; ++i) {
        const std::string arg = argv[i], next = argv[i + 1];
        if (arg == "--") break;
        if (arg == "--lazy" && (next == "fast" || next == "safe")) {
            std::fprintf(stderr, "lazyllm: error: --lazy takes its preset after '=': --lazy=%s\n",
                         next.c_str());
            return kExitUsage;
        }
    }
    // llama-cli's -cnv is run's --conversation (CLI11 would read it as -c nv).
    static char kConversation[] = "--conversation";
    for (int i = 2; sub == "run" && i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
        if (std::strcmp(argv[i], "-cnv") == 0) argv[i] = kConversation;
    }
    if (const LlamaFlag* f = llama_flag(argc, argv)) {
        std::fprintf(stderr,
                     "lazyllm: error: unknown option '%s' (llama.cpp's %s); see lazyllm %s "
                     "--help\n",
                     f->flag, f->note, argc > 1 && argv[1][0] != '-' ? argv[1] : "SUBCOMMAND");
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
            const int rc = run();
            // Output that could not be written (a full disk, a file system gone) is an error,
            // not a success with the text lost. (A closed pipe ends the process by SIGPIPE.)
            const bool flushed = std::fflush(stdout) == 0;
            const int err = errno;
            if (!flushed || std::ferror(stdout)) {
                std::fprintf(stderr, "lazyllm: error: cannot write to standard output%s%s\n",
                             flushed ? "" : ": ", flushed ? "" : std::strerror(err));
                return rc == 0 ? kExitFailure : rc;
            }
            return rc;
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
