// The `lazyllm` binary on bad input: clear messages naming the thing at fault, exit code 2 for
// usage errors and 1 for bad files; never a crash. Uses tiny GGUF models (no network).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/model_path.h"
#include "support/tiny_model.h"
#include "tools/cli_runner.h"

namespace {

using lazyllm::testing::CliRun;
using lazyllm::testing::contains;
using lazyllm::testing::run_cli;

std::string tiny_model_file() {
    static const std::string path = lazyllm::testing::write_cli_tiny_model("lazyllm_cli_tiny.gguf", 64);
    return path;
}

// `args` is refused as a usage error (exit 2) whose message holds `needle`.
void expect_usage_error(const std::string& args, const std::string& needle) {
    const CliRun r = run_cli(args);
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, needle)) << args << "\n" << r.out;
}

TEST(CliTest, HelpListsSubcommands) {
    const CliRun r = run_cli("--help");
    EXPECT_EQ(r.rc, 0);
    for (const char* sub : {"info", "tokenize", "run"}) EXPECT_TRUE(contains(r.out, sub)) << sub;
}

TEST(CliTest, UnknownSubcommandIsNamed) {
    const CliRun r = run_cli("foo -p hi");
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(contains(r.out,
                         "lazyllm: error: unknown subcommand 'foo' (subcommands: info, "
                         "tokenize, run, bench, eval, tune, serve)"))
        << r.out;
    EXPECT_EQ(run_cli("--version").rc, 0);
    EXPECT_EQ(run_cli("").rc, 2);  // none: CLI11's "A subcommand is required"
}

// eval --help documents the forms of --policies that docs/evaluation.md does.
TEST(CliTest, EvalHelpNamesPolicyAtFile) {
    const CliRun r = run_cli("eval --help");
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "POLICY@FILE")) << r.out;
}

TEST(CliTest, UnknownFlagIsAUsageError) {
    const CliRun r = run_cli("run --no-such-flag");
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(contains(r.out, "--no-such-flag")) << r.out;
}

TEST(CliTest, MissingModelFileIsNamed) {
    const CliRun r = run_cli("run -m /nonexistent/x.gguf -p hi");
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_TRUE(contains(r.out, "/nonexistent/x.gguf")) << r.out;
}

TEST(CliTest, EmptyPromptAndZeroTokensAreUsageErrors) {
    const std::string m = tiny_model_file();
    expect_usage_error("run -m " + m + " -p ''", "empty");
    expect_usage_error("run -m " + m + " -p hello -n 0", "-n");
    expect_usage_error("run -m " + m + " -p hello --top-p 1.5", "top_p");
    expect_usage_error("run -m " + m + " -p hello -n 2 --lazy-layers 3,1 --lazy-keep 0.5,0.2",
                       "allows at most 1 boundaries");
    CliRun r = run_cli("run -m " + m);
    EXPECT_EQ(r.rc, 2) << r.out;
}

// llama.cpp's one-dash flags (CLI11 would read "-ngl" as "-n gl"), empty values (they would
// read as the flag not given: another model, or no pruning), and combinations that would
// silently do something else are named.
TEST(CliTest, LlamaCppFlagsEmptyValuesAndContradictionsAreNamed) {
    const std::string m = tiny_model_file();
    expect_usage_error("run -m " + m + " -p hi -ngl 99", "unknown option '-ngl' (llama.cpp's");
    expect_usage_error("run -m " + m + " -p hi -fa", "unknown option '-fa'");
    expect_usage_error("serve -m " + m + " -np=4", "unknown option '-np' (llama.cpp's --parallel");
    expect_usage_error("run -m '' -p hi", "--model: must not be empty");
    expect_usage_error("bench -m '' -p 8", "--model: must not be empty");
    expect_usage_error("run -m " + m + " -p hi --lazy-keep ''", "--lazy-keep: must not be empty");
    expect_usage_error("run -m " + m + " -p hi --schedule ''", "--schedule: must not be empty");
    // Seeds are unsigned: a negative one is refused (it was taken, wrapped around).
    expect_usage_error("run -m " + m + " -p hi --prune-seed -3",
                       "--prune-seed: must be >= 0, got -3");
    expect_usage_error("eval -m " + m + " --seed -5", "--seed: must be >= 0, got -5");
    // An empty key (an unset variable) once started a server open to anyone (-c 1, which serve
    // refuses before it listens, keeps a regression from serving forever).
    expect_usage_error("serve -m " + m + " --api-key '' -c 1", "--api-key: must not be empty");
    expect_usage_error("run -m " + m + " -p hi --compare --policy full",
                       "--policy full leaves nothing to compare");
    expect_usage_error("info " + m + " -m " + m + "x", "two models given");
    expect_usage_error("run -m " + m + " -p hi --lazy-verify-margin -1",
                       "--lazy-verify-margin: must be >= 0, got -1");
    expect_usage_error("run -m " + m + " -p hi --lazy-decode on --lazy-revive-max 99999999999",
                       "99999999999 is over the largest bound");
}

// A prompt that does not fit: the message offers only the ways out that exist.
TEST(CliTest, ContextErrorsOfferWhatWouldFit) {
    const std::string m = tiny_model_file();  // 64 tokens of context
    CliRun r = run_cli("run -m " + m + " -p 'the quick brown fox' -c 3 -n 1");
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(contains(r.out, "--truncate-middle")) << r.out;
    EXPECT_FALSE(contains(r.out, "smaller -n")) << r.out;  // -n 1 is the least
    r = run_cli("run -m " + m + " -p 'the quick brown fox' -c 3 -n 4");
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(contains(r.out, "the prompt has")) << r.out;  // not only -n's fault
    r = run_cli("run -m " + m + " -p hi -n 64");
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(contains(r.out, "-n 64 does not fit the context of 64")) << r.out;
    EXPECT_FALSE(contains(r.out, "larger -c")) << r.out;  // no -c given
}

TEST(CliTest, PromptOverTheContextIsRefusedOrTruncatedOnRequest) {
    const std::string m = tiny_model_file();
    const std::string prompt_file = ::testing::TempDir() + "lazyllm_cli_long.txt";
    {
        std::ofstream f(prompt_file);
        for (int i = 0; i < 200; ++i) f << "the quick brown fox ";
    }
    CliRun r = run_cli("run -m " + m + " -f " + prompt_file + " -n 4");
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(contains(r.out, "context")) << r.out;
    r = run_cli("run -m " + m + " -f " + prompt_file + " -n 4 --truncate-middle --json");
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "truncated in the middle")) << r.out;
    EXPECT_TRUE(contains(r.out, "\"n_prompt\": 60")) << r.out;
}

TEST(CliTest, RunJsonCarriesTheMetrics) {
    const std::string m = tiny_model_file();
    const CliRun r = run_cli("run -m " + m +
                             " -p 'hello world, hello world' -n 3 --ignore-eos --lazy "
                             "--lazy-layers 1 --lazy-keep 0.5 --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    for (const char* key : {"\"ttft_ms\"", "\"pct_computed\"", "\"prefill_rows_per_layer\"",
                            "\"revivals_per_step\"", "\"n_gen\": 3", "\"policy\": \"lazy\""}) {
        EXPECT_TRUE(contains(r.out, key)) << key << "\n" << r.out;
    }
}

// --compare runs --compare-reps alternating rounds and reports each policy's fastest one;
// the flag alone, or a count below 1, is a usage error.
TEST(CliTest, CompareReportsTheFastestOfItsRounds) {
    const std::string m = tiny_model_file();
    const CliRun r =
        run_cli("run -m " + m +
                    " -p 'hello world, hello world' -n 2 --ignore-eos "
                    "--compare --compare-reps 2 --lazy-layers 1 --lazy-keep 0.5 --json",
                /*merge_stderr=*/false);
    ASSERT_EQ(r.rc, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["reps"], 2);
    for (const char* side : {"full", "pruned"}) {
        const auto runs = j[std::string(side) + "_ttft_ms_runs"].get<std::vector<double>>();
        ASSERT_EQ(runs.size(), 2u) << side;
        EXPECT_EQ(j[side]["ttft_ms"].get<double>(), *std::min_element(runs.begin(), runs.end()))
            << side;
    }
    EXPECT_DOUBLE_EQ(j["ttft_speedup"].get<double>(),
                     j["full"]["ttft_ms"].get<double>() / j["pruned"]["ttft_ms"].get<double>());
    const CliRun text = run_cli("run -m " + m +
                                " -p 'hello world, hello world' -n 2 --ignore-eos "
                                "--compare --lazy-layers 1 --lazy-keep 0.5");
    ASSERT_EQ(text.rc, 0) << text.out;
    EXPECT_TRUE(contains(text.out, "best of 3 alternating runs")) << text.out;
    EXPECT_TRUE(contains(text.out, "last token ms")) << text.out;  // the end-to-end latency
    EXPECT_FALSE(contains(text.out, "repairs in its first decode step")) << text.out;
    // With repair the table says why the policy's decode rate is low.
    const CliRun repair = run_cli("run -m " + m +
                                  " -p 'hello world, hello world' -n 3 --ignore-eos --compare "
                                  "--compare-reps 1 --lazy-layers 1 --lazy-keep 0.5 "
                                  "--lazy-decode off --lazy-repair on");
    ASSERT_EQ(repair.rc, 0) << repair.out;
    EXPECT_TRUE(contains(repair.out, "lazy repairs in its first decode step")) << repair.out;
    expect_usage_error("run -m " + m + " -p hi --compare-reps 2", "--compare");
    expect_usage_error("run -m " + m + " -p hi --compare --compare-reps 0", "--compare-reps");
}

TEST(CliTest, ScoreShapingFlagsReachTheScheduleOrNameTheFault) {
    const std::string m = tiny_model_file();
    CliRun r =
        run_cli("run -m " + m +
                " -p 'hello world, hello world' -n 2 --ignore-eos "
                "--lazy-layers 1 --lazy-keep 0.5 --lazy-score-layers 2 --lazy-score-pool 3 --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "score_layers=2 score_pool=3")) << r.out;
    expect_usage_error("run -m " + m + " -p hello -n 2 --lazy-layers 1 --lazy-keep 0.5 --lazy-score-pool 4",
                       "score_pool must be an odd number");
    expect_usage_error("run -m " + m + " -p hello --lazy-score-layers 0", "--lazy-score-layers");
}

TEST(CliTest, RepairReachesTheScheduleOrNamesTheFault) {
    const std::string m = tiny_model_file();
    CliRun r = run_cli("run -m " + m +
                       " -p 'hello world, hello world' -n 3 --ignore-eos "
                       "--lazy-layers 1 --lazy-keep 0.5 --lazy-decode off --lazy-repair on --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "prune_decode=false repair=true")) << r.out;
    expect_usage_error("run -m " + m +
                           " -p hello -n 2 --lazy-layers 1 --lazy-keep 0.5 "
                           "--lazy-repair on",
                       "prune_decode on");
    expect_usage_error("run -m " + m + " -p hello --lazy-repair yes", "--lazy-repair");
    // A margin no gap reaches: the first token is repaired before it and said so.
    r = run_cli(
        "run -m " + m +
            " -p 'hello world, hello world' -n 3 --ignore-eos --lazy-layers 1 --lazy-keep 0.5 "
            "--lazy-decode off --lazy-repair on --lazy-verify-margin 1000 --json",
        /*merge_stderr=*/false);
    ASSERT_EQ(r.rc, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(contains(j["schedule"].get<std::string>(), "repair=true verify_margin=1000"))
        << r.out;
    EXPECT_TRUE(j["first_token_verified"].get<bool>()) << r.out;
    const CliRun compare = run_cli("run -m " + m +
                                   " -p 'hello world, hello world' -n 3 --ignore-eos --compare "
                                   "--compare-reps 1 --lazy-layers 1 --lazy-keep 0.5 "
                                   "--lazy-decode off --lazy-repair on --lazy-verify-margin 1000");
    ASSERT_EQ(compare.rc, 0) << compare.out;
    EXPECT_TRUE(contains(compare.out, "found its first token a near tie")) << compare.out;
    EXPECT_TRUE(contains(compare.out, "answers identical")) << compare.out;
    expect_usage_error("run -m " + m +
                           " -p hello -n 2 --lazy-layers 1 --lazy-keep 0.5 --lazy-decode off "
                           "--lazy-verify-margin 0.5",
                       "needs repair");
    expect_usage_error("run -m " + m + " -p hello --lazy-verify-margin -1", "--lazy-verify-margin");
}

TEST(CliTest, ReviveMaxReachesTheScheduleOrNamesTheFault) {
    const std::string m = tiny_model_file();
    CliRun r = run_cli("run -m " + m +
                       " -p 'hello world, hello world' -n 2 --ignore-eos "
                       "--lazy-layers 1 --lazy-keep 0.5 --lazy-revive-max 3 --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "revive_max=3")) << r.out;
    r = run_cli("run -m " + m +
                " -p 'hello world, hello world' -n 2 --ignore-eos "
                "--lazy-layers 1 --lazy-keep 0.5 --lazy-revive-max all --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_FALSE(contains(r.out, "revive_max")) << r.out;
    for (const char* bad : {"-1", "x", "3x"}) {
        expect_usage_error("run -m " + m + " -p hello --lazy-revive-max " + std::string(bad),
                           "--lazy-revive-max");
    }
    r = run_cli("run -m " + m +
                " -p 'hello world, hello world' -n 2 --ignore-eos "
                "--lazy-layers 1 --lazy-keep 0.5 --lazy-revive-weight 0.25 --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "revive_weight=0.25")) << r.out;
    for (const char* bad : {"-0.5", "0", "1.5", "x", "nan"}) {
        expect_usage_error("run -m " + m + " -p hello --lazy-revive-weight " + std::string(bad),
                           "--lazy-revive-weight");
    }
}

// --lazy takes a preset (safe when bare); --policy lazy:fast names one too; a preset and an
// explicit schedule contradict each other; the window and floor reach the schedule.
TEST(CliTest, LazyPresetsAndTheirFlags) {
    const std::string m = tiny_model_file();
    const std::string p = "run -m " + m + " -p 'hello world, hello world' -n 2 --ignore-eos ";
    CliRun r = run_cli(p + "--lazy --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "keep_recent=")) << r.out;  // the generic safe preset
    EXPECT_TRUE(contains(r.out, "prune_decode=false")) << r.out;
    r = run_cli(p + "--lazy=fast --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_FALSE(contains(r.out, "keep_recent=")) << r.out;
    r = run_cli(p + "--policy lazy:fast --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_FALSE(contains(r.out, "keep_recent=")) << r.out;
    r = run_cli(p +
                "--lazy-layers 1 --lazy-keep 0.5 --lazy-keep-recent 3 --lazy-min-context 2 --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "keep_recent=3 min_context=2")) << r.out;
    expect_usage_error(p + "--lazy=quick", "--lazy");
    expect_usage_error(p + "--lazy=fast --lazy-layers 1 --lazy-keep 0.5", "preset");
    expect_usage_error(p + "--lazy=fast --policy lazy:safe", "contradicts");
    expect_usage_error(p + "--lazy-keep-recent -1", "--lazy-keep-recent");
    // A Gemma 3 whose only global layer is the last has nowhere to cut: the run is full's, and
    // says so.
    const std::string gemma = std::string(LAZYLLM_TEST_GOLDEN_DIR) + "/families/gemma3.gguf";
    r = run_cli("run -m " + gemma + " -p 'hello world' -n 2 --ignore-eos --lazy=fast");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "policy full")) << r.out;
    EXPECT_TRUE(contains(r.out, "fast preset has no layer to cut after")) << r.out;
}

TEST(CliTest, HostileModelFileGivesAnErrorNotACrash) {
    const std::string m = tiny_model_file();
    std::ifstream in(m, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string bad = ::testing::TempDir() + "lazyllm_cli_truncated.gguf";
    {
        std::ofstream out(bad, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
    }
    for (const char* sub : {"info", "run -p hi -m"}) {
        const CliRun r = run_cli(std::string(sub) + " " + bad);
        EXPECT_EQ(r.rc, 1) << sub << ": " << r.out;
        EXPECT_TRUE(contains(r.out, "error")) << r.out;
    }
}

TEST(CliTest, InfoAndTokenizeOnTinyModel) {
    const std::string m = tiny_model_file();
    CliRun r = run_cli("info " + m + " --tensors");
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "blk.0.attn_q.weight")) << r.out;
    EXPECT_TRUE(contains(r.out, "layers")) << r.out;
    r = run_cli("tokenize " + m + " 'hello'");
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "[")) << r.out;
    // A text that starts with the BOS token's text, and a BOS added: warned, as llama.cpp.
    const char* twice = "two BOS tokens: the text begins with <|im_start|>";
    r = run_cli("tokenize " + m + " --bos --special '<|im_start|>hello'");
    EXPECT_TRUE(r.rc == 0 && contains(r.out, "[1, 1, ") && contains(r.out, twice)) << r.out;
    r = run_cli("tokenize " + m + " --no-bos --special '<|im_start|>hello'");
    EXPECT_TRUE(r.rc == 0 && !contains(r.out, "two BOS")) << r.out;
}

// Matrices in the formats dequantized at load (Q3_K, IQ4_XS, IQ4_NL; token_embd too): info
// lists the type and loads the model, --check-tensors reads their scales, and run generates.
TEST(CliTest, InfoAndRunOnQ3KAndIq4XsAndIq4NlModels) {
    for (lazyllm::GgmlType type :
         {lazyllm::GgmlType::Q3_K, lazyllm::GgmlType::IQ4_XS, lazyllm::GgmlType::IQ4_NL}) {
        const std::string name(lazyllm::ggml_type_name(type));
        SCOPED_TRACE(name);
        lazyllm::testing::TinyModelSpec spec;
        spec.n_embd = 256;  // n_in of every matrix a multiple of the 256-element super-blocks
        spec.n_ff = 512;
        spec.n_layer = 1;
        spec.weight_type = type;
        const std::string m = ::testing::TempDir() + "lazyllm_cli_" + name + ".gguf";
        ASSERT_TRUE(lazyllm::testing::write_tiny_model(spec, m).ok());
        CliRun r = run_cli("info " + m + " --check-tensors");
        EXPECT_EQ(r.rc, 0) << r.out;
        EXPECT_TRUE(contains(r.out, name + " x")) << r.out;
        EXPECT_TRUE(contains(r.out, "layers")) << r.out;
        EXPECT_FALSE(contains(r.out, "not loadable")) << r.out;
        r = run_cli("run -m " + m + " -p hello -n 2 --check-tensors");
        EXPECT_EQ(r.rc, 0) << r.out;
    }
}

TEST(ModelCliTest, DefaultModelAnswers) {
    LAZYLLM_MODEL_OR_SKIP(path);
    const CliRun r =
        run_cli("run -m " + path + " --chat -p 'What is the capital of France?' -n 12");
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "Paris")) << r.out;
    EXPECT_TRUE(contains(r.out, "TTFT")) << r.out;
}

// Ctrl-C stops generating and keeps what was made: the JSON result says "interrupted" and the
// exit code is 130 (a second Ctrl-C would end the process at once).
TEST(ModelCliTest, CtrlCPrintsTheAnswerSoFar) {
    LAZYLLM_MODEL_OR_SKIP(path);
    // -n -1 with --ignore-eos runs to the 8k context: minutes of runway. The handler is set
    // after the seed line, before the first token.
    const lazyllm::testing::Interrupted r =
        lazyllm::testing::interrupt_when(std::string(LAZYLLM_CLI) + " run -m " + path +
                                             " -p 'Once upon a time' -n -1 --ignore-eos --json",
                                         "grep -q 'lazyllm: seed' $ERR", "0.5");
    ASSERT_EQ(r.rc, 130) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["stop_reason"], "interrupted") << r.out;
    EXPECT_GT(j["n_gen"].get<int>(), 0) << r.out;
    EXPECT_LT(j["n_gen"].get<int>(), 8000) << r.out;
}

// A France question as a chat, answered as JSON with `flags`: the run succeeds, names Paris
// and its JSON holds `needle` (which weights ran).
void expect_paris(const std::string& path, const std::string& flags, const std::string& needle,
                  const std::string& question = "What is the capital of France?") {
    const CliRun r =
        run_cli("run -m " + path + " --chat -p '" + question + "' -n 12 --json " + flags);
    ASSERT_EQ(r.rc, 0) << flags << ": " << r.out;
    EXPECT_TRUE(contains(r.out, needle)) << flags << ": " << r.out;
    EXPECT_TRUE(contains(r.out, "Paris")) << flags << ": " << r.out;
}

// Decode on the GGUF's 4-bit blocks (where the CPU has VNNI) or on the prefill GEMM's weights:
// both answer, and --json says which ran.
TEST(ModelCliTest, DecodeWeightsFlag) {
    LAZYLLM_MODEL_OR_SKIP(path);
    expect_paris(path, "--decode-weights gemm", "\"decode_weights\": \"gemm\"");
    expect_paris(path, "--decode-weights quant", "\"decode_weights\"");
    EXPECT_NE(run_cli("run -m " + path + " -p hi -n 1 --decode-weights int4").rc, 0);
}

// Prefill on the GGUF's blocks: it answers, --json and info say which weights ran, and a
// combination without quantized weights is refused by name.
// (int8 activations change prefill slightly, differently per ISA: on AVX-512 VNNI the 135M
// model's greedy answer to "What is the capital of France?" is "L'Etoile, la Marseillaise, ...",
// on AVX2 "The capital of France is Paris."; this question gets Paris on both. How far int8
// prefill moves answers is measured by `eval --fidelity`, docs/evaluation.md.)
TEST(ModelCliTest, PrefillWeightsFlag) {
    LAZYLLM_MODEL_OR_SKIP(path);
    const std::string question = "Name the capital city of France.";
    // (With AMX the choice goes on: "; prompts of 64 tokens or more on AMX bf16 tiles".)
    expect_paris(path, "--prefill-weights quant", "\"prefill_weights\": \"quant (asked)", question);
    expect_paris(path, "--prefill-weights quant", "\"gemm\": \"quant\"", question);
    expect_paris(path, "--prefill-weights copy", "\"prefill_weights\": \"copy (asked)\"");
    const CliRun info = run_cli("info " + path + " --prefill-weights quant");
    ASSERT_EQ(info.rc, 0) << info.out;
    EXPECT_TRUE(contains(info.out, "prefill       quant weights: quant (asked)")) << info.out;
    const CliRun exact =
        run_cli("run -m " + path + " -p hi -n 1 --prefill-weights quant --precision f32");
    EXPECT_NE(exact.rc, 0);
    EXPECT_TRUE(contains(exact.out, "precision f32 is exact")) << exact.out;
}

}  // namespace

namespace {

// tune's same-answers objective end to end on the default model, on a one-candidate space (a
// mild cut, layer 24 keeping 0.7) and a target any working run meets: the schedule file says
// which objective made it, and the summary counts the prompts answered as full answers them.
TEST(ModelCliTest, TuneKeepsFullsAnswers) {
    LAZYLLM_MODEL_OR_SKIP(path);
    const std::string out = ::testing::TempDir() + "lazyllm_cli_tune_answers.json";
    std::remove(out.c_str());
    const CliRun r = run_cli("tune -m " + path +
                             " --lengths 512 --depths 1 --first-boundaries 0.8 --max-boundaries 1 "
                             "--keep-grid 0.7 --target 0.01 --answer-tokens 16 "
                             "--lazy-min-context 256 -o " +
                             out);
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "objective answers: 6 prompts")) << r.out;
    EXPECT_TRUE(contains(r.out, "same 16-token answers as full on")) << r.out;
    EXPECT_TRUE(contains(r.out, "layers=24 keep=0.7")) << r.out;
    std::ifstream in(out);
    const auto meta = nlohmann::json::parse(in)["meta"];
    EXPECT_EQ(meta["objective"], "answers") << meta;
    EXPECT_EQ(meta["answer_tokens"], 16) << meta;
    expect_usage_error("tune -m " + path + " --objective speed", "--objective");
    // Under the safe preset's floor of 3072 tokens every schedule is full: nothing to calibrate.
    expect_usage_error("tune -m " + path + " --lengths 512 --depths 1 -o " + out,
                       "shorter than the context floor (min_context 3072)");
}

}  // namespace
