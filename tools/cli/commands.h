// Subcommands of the lazyllm CLI. Each registers its flags on a CLI11 subcommand and returns
// the function that runs it.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace lazyllm::cli {

using Runner = std::function<int()>;

Runner add_info(CLI::App& app);
Runner add_tokenize(CLI::App& app);
Runner add_run(CLI::App& app);
Runner add_bench(CLI::App& app);
Runner add_eval(CLI::App& app);
Runner add_tune(CLI::App& app);
Runner add_serve(CLI::App& app);  // tools/server/cmd_serve.cpp

}  // namespace lazyllm::cli
