// Runs the built `lazyllm` binary (LAZYLLM_CLI) for the CLI tests and captures its output.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

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

// ctest runs each test in its own process, two at a time, and tests of one binary write the
// same temp files: each writes a file of its own and renames it into place (atomic), so a
// reader never sees one half written. `write(tmp)` writes the file and says whether it did.
template <typename Write>
inline std::string publish_temp_file(const std::string& file, Write&& write) {
    const std::string p = ::testing::TempDir() + file;
    const std::string tmp = p + "." + std::to_string(::getpid()) + ".tmp";
    EXPECT_TRUE(write(tmp)) << tmp;
    EXPECT_EQ(std::rename(tmp.c_str(), p.c_str()), 0) << p;
    return p;
}

// What interrupt_when saw: the command's exit code, stdout and stderr.
struct Interrupted {
    int rc = -1;
    std::string out, err;
};

// Runs `command` (a shell command line, `lazyllm` last in it) in the background with its stdout
// and stderr in files named $OUT and $ERR, waits (up to two minutes) until the shell condition
// `ready` holds (e.g. "grep -q seed $ERR"), then `delay_s` more, sends it SIGINT (Ctrl-C) and
// waits for it to end.
inline Interrupted interrupt_when(const std::string& command, const std::string& ready,
                                  const std::string& delay_s = "0") {
    static int calls = 0;
    const std::string base = ::testing::TempDir() + "lazyllm_interrupt." +
                             std::to_string(::getpid()) + "." + std::to_string(calls++);
    const std::string start = "OUT=" + base + ".out; ERR=" + base + ".err; " + command +
                              " >$OUT 2>$ERR & pid=$!; ";
    const std::string wait = "i=0; until " + ready +
                             "; do sleep 0.05; i=$((i+1)); [ $i -gt 2400 ] && break; done; ";
    const std::string script = start + wait + "sleep " + delay_s +
                               "; kill -INT $pid; wait $pid; echo $? > " + base + ".rc";
    Interrupted r;
    EXPECT_EQ(std::system(script.c_str()), 0) << script;
    const auto slurp = [](const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::remove(path.c_str());
        return text;
    };
    r.out = slurp(base + ".out");
    r.err = slurp(base + ".err");
    const std::string rc = slurp(base + ".rc");
    r.rc = rc.empty() ? -1 : std::stoi(rc);
    return r;
}

inline bool contains(const std::string& s, const std::string& what) {
    return s.find(what) != std::string::npos;
}

// Writes `bytes` as the test temp file `name` (publish_temp_file) and returns its path.
inline std::string write_temp_file(const std::string& name, const std::string& bytes) {
    return publish_temp_file(name, [&](const std::string& tmp) {
        std::ofstream out(tmp, std::ios::binary);
        out << bytes;
        return static_cast<bool>(out.flush());
    });
}

// Writes a tiny random llama model with context n_ctx into the test temp folder as `file` and
// returns its path (callers keep it in a function-local static: written once per process).
inline std::string write_cli_tiny_model(const std::string& file, int n_ctx) {
    TinyModelSpec spec;
    spec.n_ctx = n_ctx;
    return publish_temp_file(
        file, [&](const std::string& tmp) { return write_tiny_model(spec, tmp).ok(); });
}

}  // namespace lazyllm::testing
