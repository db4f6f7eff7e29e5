// Runs the built `lazyllm` binary (LAZYLLM_CLI) for the CLI tests and captures its output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "support/tiny_model.h"

namespace lazyllm::testing {

struct CliRun {
    int rc = -1;
    std::string out;  // stdout (and stderr when merged)
};

inline CliRun run_cli(const std::string& args, bool merge_stderr = true) {
    CliRun r;
    const std::string cmd =
        std::string(LAZYLLM_CLI) + " " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    std::array<char, 4096> buf{};
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = pclose(p);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

// Writes a tiny random llama model with context n_ctx into the test temp folder as `file` and
// returns its path (callers keep it in a function-local static: written once per binary).
inline std::string write_cli_tiny_model(const std::string& file, int n_ctx) {
    const std::string p = ::testing::TempDir() + file;
    TinyModelSpec spec;
    spec.n_ctx = n_ctx;
    EXPECT_TRUE(write_tiny_model(spec, p).ok());
    return p;
}

}  // namespace lazyllm::testing
