// `lazyllm bench` end to end on a tiny random model: jsonl rows parse and carry llama-bench's
// fields with sane values; markdown has the table; bad flags are usage errors (exit code 2).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/model_path.h"
#include "support/tiny_model.h"
#include "tools/cli_runner.h"

namespace {

using lazyllm::testing::CliRun;
using lazyllm::testing::contains;
using lazyllm::testing::run_cli;

std::string bench_model() {
    static const std::string path = lazyllm::testing::write_cli_tiny_model("lazyllm_bench_tiny.gguf", 128);
    return path;
}

std::vector<nlohmann::json> parse_jsonl(const std::string& out) {
    std::vector<nlohmann::json> rows;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        rows.push_back(nlohmann::json::parse(line));  // throws (fails the test) on bad JSON
    }
    return rows;
}

// -t 1: the tiny model needs no threads, and the test should not take the machine.
// --lazy-keep-first 0: a default protected prefix could cover a whole 32-token prompt.
const std::string kFullOnly = " -t 1 -r 1";  // --policy full alone refuses schedule flags
const std::string kCommon = kFullOnly + " --lazy-layers 1 --lazy-keep 0.5 --lazy-keep-first 0";

TEST(BenchCliTest, JsonlRowsAreLlamaBenchCompatibleAndSane) {
    const CliRun r = run_cli(
        "bench -m " + bench_model() + " -p 32,64 -n 2 -o jsonl --policy full,lazy" + kCommon,
        /*merge_stderr=*/false);
    ASSERT_EQ(r.rc, 0) << r.out;
    const std::vector<nlohmann::json> rows = parse_jsonl(r.out);
    // pp and tg rows for 2 lengths x 2 policies.
    ASSERT_EQ(rows.size(), 8u) << r.out;
    int n_pp = 0, n_tg = 0;
    for (const nlohmann::json& j : rows) {
        for (const char* key :
             {"model_filename", "model_type", "n_threads", "n_prompt", "n_gen", "avg_ns",
              "stddev_ns", "avg_ts", "stddev_ts", "samples_ns", "samples_ts", "policy", "schedule",
              "pct_computed", "peak_gflops"}) {
            ASSERT_TRUE(j.contains(key)) << key << " in " << j.dump();
        }
        EXPECT_EQ(j["n_threads"].get<int>(), 1);
        EXPECT_GT(j["avg_ns"].get<int64_t>(), 0);
        EXPECT_GT(j["avg_ts"].get<double>(), 0.0);
        EXPECT_EQ(j["samples_ns"].size(), 1u);
        EXPECT_EQ(j["samples_ts"].size(), 1u);
        EXPECT_EQ(j["stddev_ns"].get<int64_t>(), 0);  // one repetition
        EXPECT_GT(j["peak_gflops"].get<double>(), 0.0);
        const double pct = j["pct_computed"].get<double>();
        EXPECT_GT(pct, 0.0);
        EXPECT_LE(pct, 100.0 + 1e-9);
        const std::string policy = j["policy"].get<std::string>();
        EXPECT_TRUE(policy == "full" || policy == "lazy") << policy;
        if (j["n_gen"].get<int>() == 0) {
            ++n_pp;
            const int n_prompt = j["n_prompt"].get<int>();
            EXPECT_TRUE(n_prompt == 32 || n_prompt == 64) << n_prompt;
            EXPECT_GT(j["ttft_ms"].get<double>(), 0.0);
            EXPECT_GE(j["ttft_stddev_ms"].get<double>(), 0.0);
            EXPECT_GT(j["prefill_gflops"].get<double>(), 0.0);
            const double speedup = j["speedup_vs_full"].get<double>();
            // The tiny model (TinyModelSpec defaults): 2 layers, d 64, 4 heads of 16, 2 KV
            // heads, n_ff 128, 300 tokens. Full: layer 0 runs every row; the last layer QKV
            // on every row, attention over n pairs, Wo and the FFN on the last row. Lazy (a
            // boundary at layer 1 keeping k = n / 2): layer 0 QKV on every row, the rest on
            // the k kept (the last row over n keys, the others n / 2); layer 1 as full's last
            // layer over the k rows.
            const double n = n_prompt, E = 64, q = 64, kv = 32, F = 128, V = 300;
            const double qkv = 2 * E * (q + 2 * kv), rest = 2 * (q * E + E * 2 * F + F * E);
            const double pair = 4 * 4 * 16, k = n / 2;
            const double want = policy == "full"
                                    ? 2 * E * V + (qkv + rest) * n + pair * n * (n + 1) / 2 +
                                          qkv * n + rest + pair * n
                                    : 2 * E * V + qkv * n + rest * k + pair * (n + (k - 1) * n / 2) +
                                          qkv * k + rest + pair * k;
            EXPECT_NEAR(j["prefill_gflop"].get<double>(), want * 1e-9, 1e-15) << policy << n_prompt;
            if (policy == "full") {
                EXPECT_DOUBLE_EQ(speedup, 1.0);
                EXPECT_DOUBLE_EQ(pct, 100.0);
            } else {
                EXPECT_GT(speedup, 0.0);
                EXPECT_LT(pct, 100.0);  // layer 1 of 2 keeps half the prompt
                EXPECT_TRUE(contains(j["schedule"].get<std::string>(), "keep")) << j.dump();
            }
        } else {
            ++n_tg;
            EXPECT_EQ(j["n_gen"].get<int>(), 2);
            EXPECT_EQ(j["n_prompt"].get<int>(), 0);
            EXPECT_TRUE(j["n_depth"].get<int>() == 32 || j["n_depth"].get<int>() == 64);
            // End to end: prompt in -> the 3rd token (TTFT + 2 decode steps), longer than the
            // decode steps alone; against full's at every N from 1 to 3.
            const double e2e = j["e2e_ms"].get<double>();
            EXPECT_GT(e2e, j["avg_ns"].get<double>() * 1e-6) << j.dump();
            const double at_end = j["e2e_speedup_vs_full"].get<double>();
            const double lowest = j["e2e_speedup_min"].get<double>();
            const int lowest_n = j["e2e_speedup_min_n"].get<int>();
            EXPECT_GE(lowest_n, 1);
            EXPECT_LE(lowest_n, 3);
            EXPECT_LE(lowest, at_end);
            if (policy == "full") {
                EXPECT_DOUBLE_EQ(at_end, 1.0);
                EXPECT_DOUBLE_EQ(lowest, 1.0);
            }
        }
    }
    EXPECT_EQ(n_pp, 4);
    EXPECT_EQ(n_tg, 4);
}

// -t above the cores this process may use warns and runs that many, as run's -t.
TEST(BenchCliTest, ThreadsAboveTheCoresWarnAndClamp) {
    const CliRun r =
        run_cli("bench -m " + bench_model() + " -p 16 -n 0 -r 1 --policy full -t 100000");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "lazyllm: warning: -t 100000 is more than the")) << r.out;
    EXPECT_FALSE(contains(r.out, "100000 threads")) << r.out;
}

TEST(BenchCliTest, MarkdownTableWithProfileAndPrefillOnly) {
    const CliRun r =
        run_cli("bench -m " + bench_model() + " -p 48 -n 0 --policy full,lazy --profile" + kCommon,
                /*merge_stderr=*/false);
    ASSERT_EQ(r.rc, 0) << r.out;
    for (const char* what :
         {"| model |", "pp48", "GEMM peak", "### profile: lazy pp48", "qkv_gemm", "lazy: "}) {
        EXPECT_TRUE(contains(r.out, what)) << what << "\n" << r.out;
    }
    EXPECT_FALSE(contains(r.out, " @ d")) << r.out;  // -n 0: prefill only, no tg rows
    EXPECT_FALSE(contains(r.out, "End-to-end latency")) << r.out;
}

// With decode steps the profile run gives each tg row a table of its decode steps (a lazy run's
// revivals among them).
TEST(BenchCliTest, ProfileOfTheDecodeSteps) {
    const CliRun r =
        run_cli("bench -m " + bench_model() + " -p 48 -n 2 --policy full,lazy --profile" + kCommon,
                /*merge_stderr=*/false);
    ASSERT_EQ(r.rc, 0) << r.out;
    for (const char* what : {"### profile: lazy pp48, t=1 (one extra run, prefill:",
                             "### profile: lazy tg2 @ d48, t=1 (one extra run, its decode steps:",
                             "### profile: full tg2 @ d48"}) {
        EXPECT_TRUE(contains(r.out, what)) << what << "\n" << r.out;
    }
}

// Copies and blocks in one run: each engine's rows are measured against its own layer's probe
// (PackedLinear, or QuantLinear on the blocks), one peak line each.
// A prompt under the schedule's context floor runs as full, and the report says so.
TEST(BenchCliTest, RowsUnderTheFloorSaySo) {
    const CliRun r = run_cli("bench -m " + bench_model() +
                             " -p 32,48 -n 0 --policy full,lazy --lazy-min-context 40" + kCommon);
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "(pp32: under min_context=40, run as full)")) << r.out;
    EXPECT_FALSE(contains(r.out, "pp48: under")) << r.out;
    // Two engines' rows of one test are one entry.
    const CliRun two = run_cli("bench -m " + bench_model() +
                               " -p 32 -n 0 --policy full,lazy --lazy-min-context 40 "
                               "--prefill-weights copy,quant" +
                               kCommon);
    ASSERT_EQ(two.rc, 0) << two.out;
    EXPECT_TRUE(contains(two.out, "(pp32: under min_context=40, run as full)")) << two.out;
}

TEST(BenchCliTest, EachPrefillWeightsHasItsOwnPeak) {
    const CliRun r =
        run_cli("bench -m " + bench_model() +
                    " -p 48 -n 0 --policy full --prefill-weights copy,quant" + kFullOnly,
                /*merge_stderr=*/false);
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "(PackedLinear 2048x576x1536")) << r.out;
    EXPECT_TRUE(contains(r.out, "/quant: ")) << r.out;
    EXPECT_TRUE(contains(r.out, "(QuantLinear Q4_1 2048x576x1536")) << r.out;
}

TEST(BenchCliTest, MarkdownEndToEndLatencyTable) {
    const CliRun r =
        run_cli("bench -m " + bench_model() + " -p 40 -n 3 --policy full,lazy" + kCommon,
                /*merge_stderr=*/false);
    ASSERT_EQ(r.rc, 0) << r.out;
    for (const char* what : {"End-to-end latency", "| N = 4 ms |", "lowest x full over N = 1..4"}) {
        EXPECT_TRUE(contains(r.out, what)) << what << "\n" << r.out;
    }
}

TEST(BenchCliTest, ExportedPromptIdsFeedBackExactly) {
    const std::string dir = ::testing::TempDir();
    CliRun r = run_cli("bench -m " + bench_model() + " -p 40 --export-prompts " + dir + kCommon);
    ASSERT_EQ(r.rc, 0) << r.out;
    const std::string ids_file = dir + "/prompt-40.ids";
    std::ifstream in(ids_file);
    std::vector<long> ids;
    for (long id; in >> id;) ids.push_back(id);
    ASSERT_EQ(ids.size(), 40u);
    // The built-in prompt ends in the question, whatever the length.
    r = run_cli("bench -m " + bench_model() + " -p 50 -n 1 -o jsonl --policy full --prompt-ids " +
                    ids_file + kFullOnly,
                /*merge_stderr=*/false);
    ASSERT_EQ(r.rc, 0) << r.out;
    const std::vector<nlohmann::json> rows = parse_jsonl(r.out);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0]["n_prompt"].get<int>(), 50);  // 40 ids repeated to 50
    // Without -p, the file's ids as they are.
    r = run_cli("bench -m " + bench_model() + " -n 1 -o jsonl --policy full --prompt-ids " +
                    ids_file + kFullOnly,
                /*merge_stderr=*/false);
    ASSERT_EQ(r.rc, 0) << r.out;
    const std::vector<nlohmann::json> exact = parse_jsonl(r.out);
    ASSERT_EQ(exact.size(), 2u);
    EXPECT_EQ(exact[0]["n_prompt"].get<int>(), 40);
}

// Two engines that resolve alike (auto takes the copies here): each policy's rows against
// their own engine's full, never the other's.
TEST(BenchCliTest, EachEngineAgainstItsOwnFull) {
    const CliRun r = run_cli("bench -m " + bench_model() +
                                 " -p 32 -n 2 --policy full,lazy --prefill-weights auto,copy "
                                 "-o jsonl" +
                                 kCommon,
                             /*merge_stderr=*/false);
    ASSERT_EQ(r.rc, 0) << r.out;
    int n_full = 0;
    for (const nlohmann::json& j : parse_jsonl(r.out)) {
        if (j["policy"] != "full") continue;
        ++n_full;
        const char* key = j["n_gen"].get<int>() == 0 ? "speedup_vs_full" : "e2e_speedup_vs_full";
        EXPECT_DOUBLE_EQ(j[key].get<double>(), 1.0) << j.dump();
    }
    EXPECT_EQ(n_full, 4);  // pp and tg of two engines
}

// Gemma 3's sliding windows in the useful FLOPs: the tiny model with a window of 8 on layer 0
// (layer 1 global), 32 rows. Layer 0: every row over at most 8 keys (1 + ... + 8 + 24 x 8 = 228
// pairs); layer 1, the last: QKV on every row, the rest on the last row over all 32 keys.
TEST(BenchCliTest, WindowedLayersCountTheirWindowsPairs) {
    lazyllm::testing::TinyModelSpec spec;
    spec.arch = "gemma3";
    spec.swa_pattern = 2;
    spec.n_ctx = 64;
    const std::string path = ::testing::TempDir() + "lazyllm_bench_gemma3.gguf";
    ASSERT_TRUE(lazyllm::testing::write_tiny_model(spec, path).ok());
    const CliRun r = run_cli("bench -m " + path + " -p 32 -n 0 --policy full -o jsonl" + kFullOnly,
                             /*merge_stderr=*/false);
    ASSERT_EQ(r.rc, 0) << r.out;
    const std::vector<nlohmann::json> rows = parse_jsonl(r.out);
    ASSERT_EQ(rows.size(), 1u);
    const double n = 32, E = 64, q = 64, kv = 32, F = 128, V = 300;
    const double qkv = 2 * E * (q + 2 * kv), rest = 2 * (q * E + E * 2 * F + F * E);
    const double pair = 4 * 4 * 16;
    const double want = 2 * E * V + (qkv + rest) * n + pair * 228 + qkv * n + rest + pair * n;
    EXPECT_NEAR(rows[0]["prefill_gflop"].get<double>(), want * 1e-9, 1e-15);
}

// --prompt-file reads a file as run -f does (its last newline dropped, special-token texts as
// their ids), and a prompt repeated to a length has its BOS once, at the start.
TEST(BenchCliTest, PromptFileIsReadAsRunReadsIt) {
    const std::string dir = ::testing::TempDir() + "lazyllm_bench_pf";
    std::filesystem::create_directories(dir);
    const std::string file = dir + "/p.txt";
    std::ofstream(file) << "<|im_start|>user\nhello<|im_end|>\n";
    CliRun r = run_cli("bench -m " + bench_model() + " -p 24 --prompt-file " + file +
                       " --export-prompts " + dir + kFullOnly);
    ASSERT_EQ(r.rc, 0) << r.out;
    std::vector<long> got;
    std::ifstream in(dir + "/prompt-24.ids");
    for (long id; in >> id;) got.push_back(id);
    const auto tokenize = [&](const std::string& flags) {
        const CliRun t =
            run_cli("tokenize -m " + bench_model() + " --special " + flags + " -f " + file,
                    /*merge_stderr=*/false);
        EXPECT_EQ(t.rc, 0) << t.out;
        std::vector<long> ids;
        std::istringstream list(t.out.substr(t.out.rfind('[') + 1));
        for (std::string x; std::getline(list, x, ',');) ids.push_back(std::stol(x));
        return ids;
    };
    // The model's own BOS setting, then without any: the BOS once, then the text's ids repeated.
    const std::vector<long> as_run = tokenize(""), body = tokenize("--no-bos");
    ASSERT_FALSE(body.empty());
    ASSERT_LT(body.size(), 12u);
    const size_t lead = as_run.size() - body.size();
    ASSERT_LE(lead, 1u);
    std::vector<long> want(as_run.begin(), as_run.begin() + static_cast<std::ptrdiff_t>(lead));
    while (want.size() < 24) want.push_back(body[(want.size() - lead) % body.size()]);
    EXPECT_EQ(got, want);
}

TEST(BenchCliTest, BadFlagsAreUsageErrors) {
    const std::string m = bench_model();
    for (const std::string& args : {
             std::string("bench -m " + m + " --policy full,nosuch"),
             std::string("bench -m " + m + " -p 0"), std::string("bench -m " + m + " -p abc"),
             std::string("bench -m " + m + " -r 0"), std::string("bench -m " + m + " -n -1"),
             std::string("bench -m " + m + " -o csv"),
             std::string("bench -m " + m + " --no-such-flag"),
             std::string("bench -m " + m + " --policy full,full"),
             std::string("bench -m " + m + " -t 1,1 -p 32"),  // one engine twice
             std::string("bench -m " + m + " -t 1 -p 32 --prefill-weights copy,copy"),
             std::string("bench -m " + m + " -t 1 -p 4096"),  // over the tiny model's context
             std::string("bench -m " + m +
                         " -t 1 -p 32 --lazy-layers 5 --lazy-keep 0.5"),  // layer 5 of 2
         }) {
        const CliRun r = run_cli(args);
        EXPECT_EQ(r.rc, 2) << args << "\n" << r.out;
    }
    // Named as run names them: schedule flags that no policy of the list takes, a folder that
    // is not there.
    for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
             {"--policy full --lazy-layers 1 --lazy-keep 0.5", "--policy full prunes nothing"},
             {"--policy full --schedule /nonexistent/s.json", "--policy full prunes nothing"},
             {"--export-prompts /nonexistent/dir", "--export-prompts: '/nonexistent/dir'"},
         }) {
        const CliRun r = run_cli("bench -m " + m + " -t 1 -p 32 -r 1 " + args);
        EXPECT_EQ(r.rc, 2) << args << "\n" << r.out;
        EXPECT_TRUE(contains(r.out, needle)) << args << "\n" << r.out;
    }
    const CliRun r = run_cli("bench -m /nonexistent/x.gguf -p 32");
    EXPECT_EQ(r.rc, 1) << r.out;
}

// Ctrl-C ends the run in hand; the table keeps the prompt lengths measured in full before it
// (every finished measurement was lost) and the exit code is 130.
TEST(ModelBenchCliTest, CtrlCKeepsTheLengthsMeasuredInFull) {
    LAZYLLM_MODEL_OR_SKIP(path);
    // One thread, an 8000-token prompt: seconds a run, so the signal lands inside its runs.
    const lazyllm::testing::Interrupted r = lazyllm::testing::interrupt_when(
        std::string(LAZYLLM_CLI) + " bench -m " + path + " -t 1 -n 0 -r 2 --policy full -p 64,8000",
        "grep -q 'p=8000' $ERR");
    EXPECT_EQ(r.rc, 130) << r.err;
    EXPECT_TRUE(contains(r.out, "| pp64 |")) << r.out;
    EXPECT_FALSE(contains(r.out, "| pp8000 |")) << r.out;
    EXPECT_TRUE(contains(r.err, "interrupted after")) << r.err;
}

}  // namespace
