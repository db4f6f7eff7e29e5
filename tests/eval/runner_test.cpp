// The eval runner on a tiny random model (accuracy ~0, but the machinery must work): records,
// resumability, reports, tune's same-answers evaluator; plus SHA-256 test vectors and the
// fidelity math.
#include "eval/runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "eval/fidelity.h"
#include "eval/record.h"
#include "eval/report.h"
#include "eval/sha256.h"
#include "eval/tune.h"
#include "support/tiny_model.h"

namespace lazyllm::eval {
namespace {

// FIPS 180-4 examples (NIST CSRC "SHA256.pdf") and the empty string.
TEST(Sha256Test, KnownVectors) {
    EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(sha256_hex("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, PaddingBoundaries) {
    // 55, 56 and 64 bytes straddle the one/two final block boundary; hashes must all differ
    // and be stable.
    std::set<std::string> seen;
    for (size_t n : {55u, 56u, 63u, 64u, 65u, 119u, 120u}) {
        const std::string h = sha256_hex(std::string(n, 'x'));
        EXPECT_EQ(h.size(), 64u);
        EXPECT_EQ(h, sha256_hex(std::string(n, 'x')));
        EXPECT_TRUE(seen.insert(h).second) << n;
    }
}

TEST(FidelityMathTest, KlDivergence) {
    const std::vector<float> a = {0.0f, 0.0f};
    const std::vector<float> b = {std::log(3.0f), 0.0f};  // softmax (0.75, 0.25)
    // KL((.5,.5) || (.75,.25)) = 0.5 ln(4/3).
    EXPECT_NEAR(kl_divergence(a, b), 0.5 * std::log(4.0 / 3.0), 1e-6);
    EXPECT_DOUBLE_EQ(kl_divergence(a, a), 0.0);
    // Logits are shift invariant.
    const std::vector<float> shifted = {5.0f + std::log(3.0f), 5.0f};
    EXPECT_NEAR(kl_divergence(a, shifted), 0.5 * std::log(4.0 / 3.0), 1e-6);
    EXPECT_GT(kl_divergence(b, a), 0.0);
}

TEST(FidelityMathTest, ArgmaxTiesToLowest) {
    EXPECT_EQ(argmax(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}), 1);
    EXPECT_EQ(argmax(std::vector<float>{-1.0f}), 0);
}

TEST(FidelityMathTest, GreedyCommonPrefix) {
    const std::vector<TokenId> a = {1, 2, 3, 4}, b = {1, 2, 9, 4}, c = {1, 2};
    EXPECT_EQ(greedy_common_prefix(a, a, 4), 4);
    EXPECT_EQ(greedy_common_prefix(a, b, 4), 2);
    EXPECT_EQ(greedy_common_prefix(a, b, 1), 1);
    EXPECT_EQ(greedy_common_prefix(a, c, 4), 2);  // c ended where a went on
    EXPECT_EQ(greedy_common_prefix(c, c, 8), 8);  // both ended together: equal from then on
}

TEST(RunnerTest, DepthGridAndSeeds) {
    EXPECT_EQ(depth_grid(1), std::vector<double>{0.5});
    EXPECT_EQ(depth_grid(3), (std::vector<double>{0.0, 0.5, 1.0}));
    EXPECT_TRUE(depth_grid(0).empty());
    const uint64_t s = sample_seed(1, "passkey", 1024, 0, 0);
    EXPECT_EQ(s, sample_seed(1, "passkey", 1024, 0, 0));
    EXPECT_NE(s, sample_seed(1, "passkey", 1024, 1, 0));
    EXPECT_NE(s, sample_seed(1, "passkey", 2048, 0, 0));
    EXPECT_NE(s, sample_seed(1, "mdqa", 1024, 0, 0));
    EXPECT_NE(s, sample_seed(2, "passkey", 1024, 0, 0));
    EXPECT_NE(s, sample_seed(1, "passkey", 1024, 0, 1));
}

TEST(RunnerTest, PolicyRunsPutFullFirstAndCarryTheSchedule) {
    PruneOptions sched;
    sched.schedule = Schedule{{1}, {0.5f}};
    sched.overrides.keep_first = 4;
    auto runs = make_policy_runs({"lazy", "full", "static"}, sched, 4);
    ASSERT_TRUE(runs.ok()) << runs.error().message();
    ASSERT_EQ(runs->size(), 3u);
    EXPECT_EQ((*runs)[0].name, "full");
    EXPECT_FALSE((*runs)[0].prune.schedule);
    EXPECT_EQ((*runs)[0].prune.policy, Policy::kFull);
    EXPECT_EQ((*runs)[1].name, "lazy");
    ASSERT_TRUE((*runs)[1].prune.schedule);
    EXPECT_EQ((*runs)[1].prune.schedule->boundaries, std::vector<int>{1});
    EXPECT_EQ((*runs)[2].prune.policy, Policy::kStatic);
    EXPECT_EQ((*runs)[2].prune.overrides.keep_first, 4);
    EXPECT_FALSE(make_policy_runs({"lazy", "lazy"}, sched, 4).ok());
    auto bad = make_policy_runs({"fast"}, sched, 4);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("fast"), std::string::npos);
}

// lazy:safe / lazy:fast name a preset, which picks the model's schedule (refused beside the
// flags' schedule, as run refuses --lazy=fast with them); lazy@FILE a schedule file in place of
// the flags' schedule.
TEST(RunnerTest, PolicyRunsNamePresetsAndScheduleFiles) {
    PruneOptions sched;
    sched.schedule = Schedule{{1}, {0.5f}};
    const std::string file = ::testing::TempDir() + "lazyllm_runner_schedule.json";
    ASSERT_TRUE(save_schedule_file(file, Schedule{{2, 3}, {0.5f, 0.25f}}, {}).ok());
    const std::string at_file = "lazy@" + file;
    auto mixed = make_policy_runs({"lazy:fast"}, sched, 4);
    ASSERT_FALSE(mixed.ok());
    EXPECT_NE(mixed.error().message().find("lazy:fast"), std::string::npos);
    EXPECT_TRUE(make_policy_runs({"lazy", at_file}, sched, 4).ok());
    auto runs = make_policy_runs({"lazy:fast", "lazy:safe", at_file}, PruneOptions{}, 4);
    ASSERT_TRUE(runs.ok()) << runs.error().message();
    ASSERT_EQ(runs->size(), 3u);
    EXPECT_EQ((*runs)[0].name, "lazy:fast");
    EXPECT_EQ((*runs)[0].prune.policy, Policy::kLazy);
    EXPECT_EQ((*runs)[0].prune.preset, Preset::kFast);
    EXPECT_FALSE((*runs)[0].prune.schedule);
    EXPECT_EQ((*runs)[1].prune.preset, Preset::kSafe);
    EXPECT_EQ((*runs)[2].name, at_file);
    EXPECT_EQ((*runs)[2].prune.policy, Policy::kLazy);
    ASSERT_TRUE((*runs)[2].prune.schedule);
    EXPECT_EQ((*runs)[2].prune.schedule->boundaries, (std::vector<int>{2, 3}));
    EXPECT_FALSE(make_policy_runs({"lazy@"}, sched, 4).ok());
    EXPECT_FALSE(make_policy_runs({"full@" + file}, sched, 4).ok());
    EXPECT_FALSE(make_policy_runs({"lazy:quick"}, sched, 4).ok());
}

TEST(RecordTest, JsonLineRoundTrip) {
    SampleRecord r;
    r.task = "passkey";
    r.id = "passkey-n1024-d0.500-s7";
    r.prompt_sha256 = sha256_hex("x");
    r.length = 1024;
    r.n_prompt = 1019;
    r.depth = 0.5;
    r.policy = "lazy";
    r.schedule = "layers=8,18 keep=0.5,0.25";
    r.metric = "passkey";
    r.prediction = "The key is \"4711\"\n";
    r.answers = {"4711"};
    r.score = 1.0;
    r.ttft_ms = 123.5;
    r.pct_computed = 61.25;
    r.prefill_rows_per_layer = {1019, 1019, 510};
    r.n_gen = 6;
    r.stop_reason = "eos";
    r.truncated = true;
    r.verified = true;
    const std::string line = to_json_line(r);
    EXPECT_EQ(line.find('\n'), std::string::npos);
    auto back = parse_json_line(line);
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(back->id, r.id);
    EXPECT_EQ(back->prediction, r.prediction);
    EXPECT_EQ(back->answers, r.answers);
    EXPECT_EQ(back->prefill_rows_per_layer, r.prefill_rows_per_layer);
    EXPECT_DOUBLE_EQ(back->pct_computed, r.pct_computed);
    EXPECT_EQ(back->length, 1024);
    EXPECT_TRUE(back->truncated);
    EXPECT_TRUE(back->verified);
    // Lines of runs before the field read as not verified.
    auto old = parse_json_line(R"({"task": "passkey", "id": "a", "policy": "lazy"})");
    ASSERT_TRUE(old.ok());
    EXPECT_FALSE(old->verified);
    EXPECT_FALSE(parse_json_line("{\"task\": \"x\"}").ok());
    EXPECT_FALSE(parse_json_line("{\"task\": \"x\", \"id\"").ok());
}

TEST(RecordTest, ReadSkipsACutLastLine) {
    const std::string path = ::testing::TempDir() + "lazyllm_records_cut.jsonl";
    SampleRecord r;
    r.task = "t";
    r.id = "1";
    r.policy = "full";
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << to_json_line(r) << "\n" << to_json_line(r).substr(0, 20);
    }
    auto f = read_records(path);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->records.size(), 1u);
    EXPECT_EQ(f->warnings.size(), 1u);
    EXPECT_FALSE(f->ends_with_newline);
    auto missing = read_records(path + ".none");
    ASSERT_TRUE(missing.ok());
    EXPECT_TRUE(missing->records.empty());
}

class TinyRunnerTest : public ::testing::Test {
protected:
    static constexpr int kLayers = 4;

    void SetUp() override {
        lazyllm::testing::TinyModelSpec spec;
        spec.n_layer = kLayers;
        spec.n_ctx = 2048;
        model_path_ = ::testing::TempDir() + "lazyllm_eval_runner_tiny.gguf";
        ASSERT_TRUE(lazyllm::testing::write_tiny_model(spec, model_path_).ok());
        EngineOptions eo;
        eo.model_path = model_path_;
        eo.n_threads = 1;  // 2 OpenMP threads crawl when the 2 cores are shared
        eo.precision = "f32";
        auto e = Engine::load(eo);
        ASSERT_TRUE(e.ok()) << e.error().message();
        engine_ = std::move(e).value();
        out_dir_ = ::testing::TempDir() + "lazyllm_eval_runner_" +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name();
        std::filesystem::remove_all(out_dir_);
    }

    std::vector<Sample> suite() {
        SuiteSpec spec;
        spec.tasks = {"passkey", "niah_single"};
        spec.lengths = {700};
        spec.n_depths = 2;
        auto s = make_suite(spec, engine_->tokenizer());
        EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
        return s.ok() ? std::move(s).value() : std::vector<Sample>{};
    }

    RunnerOptions options() {
        RunnerOptions o;
        o.out_dir = out_dir_;
        // The fast preset prunes these 700-token prompts and in decode steps, so the share
        // computed stays below 100% (the safe one's context floor is above 700 tokens).
        PruneOptions fast;
        fast.preset = Preset::kFast;
        auto runs = make_policy_runs({"full", "lazy"}, fast, 0);
        EXPECT_TRUE(runs.ok());
        o.policies = *runs;
        o.warmup = false;
        return o;
    }

    static int count_lines(const std::string& path) {
        std::ifstream in(path);
        std::string line;
        int n = 0;
        while (std::getline(in, line)) n += line.empty() ? 0 : 1;
        return n;
    }

    std::string model_path_, out_dir_;
    std::unique_ptr<Engine> engine_;
};

// A model without tokenizer.chat_template (a base model) is given the plain task text to
// continue; naming a format (--chat-template) wraps chat samples in it.
TEST_F(TinyRunnerTest, BaseModelGetsPlainPromptsUnlessAFormatIsNamed) {
    std::vector<Sample> samples = suite();
    ASSERT_FALSE(samples.empty());
    Sample s = samples[0];
    s.chat = true;
    s.answer_prefix = " The answer is";  // RULER's lead-in, after the assistant turn opens
    EXPECT_TRUE(wraps_chat(*engine_));  // the tiny model has SmolLM2's template
    EXPECT_EQ(prepare_prompt(*engine_, s)->text, engine_->chat_prompt(s.prompt) + "The answer is");

    lazyllm::testing::TinyModelSpec spec;
    spec.chat_template = false;
    spec.n_ctx = 2048;
    const std::string base_path = ::testing::TempDir() + "lazyllm_eval_runner_base.gguf";
    ASSERT_TRUE(lazyllm::testing::write_tiny_model(spec, base_path).ok());
    EngineOptions eo;
    eo.model_path = base_path;
    eo.n_threads = 1;
    eo.precision = "f32";
    auto base = Engine::load(eo);
    ASSERT_TRUE(base.ok()) << base.error().message();
    EXPECT_FALSE(wraps_chat(**base));
    auto plain = prepare_prompt(**base, s);
    ASSERT_TRUE(plain.ok()) << plain.error().message();
    EXPECT_EQ(plain->text, s.prompt + " The answer is");

    eo.chat_template = "chatml";  // the base model with a named format
    auto named = Engine::load(eo);
    ASSERT_TRUE(named.ok()) << named.error().message();
    EXPECT_TRUE(wraps_chat(**named));
    auto wrapped = prepare_prompt(**named, s);
    ASSERT_TRUE(wrapped.ok()) << wrapped.error().message();
    EXPECT_EQ(wrapped->text, (*named)->chat_prompt(s.prompt) + "The answer is");
    EXPECT_NE(wrapped->text, s.prompt);
}

// A folder's records were made under one configuration: resuming under another schedule, or
// with another prompt text for a sample, is refused instead of mixed into one summary.
TEST_F(TinyRunnerTest, ResumingUnderAnotherConfigurationIsRefused) {
    std::vector<Sample> samples = suite();
    samples.resize(1);
    ASSERT_TRUE(run_eval(*engine_, samples, options()).ok());

    RunnerOptions other = options();
    PruneOptions cut;
    cut.policy = Policy::kLazy;
    cut.schedule = Schedule{};
    cut.schedule->boundaries = {1};
    cut.schedule->keep = {0.3f};
    auto runs = make_policy_runs({"full", "lazy"}, cut, 0);
    ASSERT_TRUE(runs.ok());
    other.policies = *runs;
    auto st = run_eval(*engine_, samples, other);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("policy lazy with the schedule"), std::string::npos)
        << st.error().message();

    samples[0].prompt += " (changed)";
    st = run_eval(*engine_, samples, options());
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("made from another prompt text"), std::string::npos)
        << st.error().message();
}

TEST_F(TinyRunnerTest, RecordsResumeAndReports) {
    const std::vector<Sample> samples = suite();
    ASSERT_EQ(samples.size(), 4u);  // 2 tasks x 1 length x 2 depths
    auto stats = run_eval(*engine_, samples, options());
    ASSERT_TRUE(stats.ok()) << stats.error().message();
    EXPECT_EQ(stats->total, 8);
    EXPECT_EQ(stats->ran, 8);
    EXPECT_EQ(stats->skipped, 0);

    const std::string path = out_dir_ + "/samples.jsonl";
    EXPECT_EQ(count_lines(path), 8);
    auto file = read_records(path);
    ASSERT_TRUE(file.ok());
    ASSERT_EQ(file->records.size(), 8u);
    EXPECT_TRUE(file->warnings.empty());
    std::map<std::string, std::string> sha_by_id;
    for (const SampleRecord& r : file->records) {
        EXPECT_EQ(r.length, 700);
        EXPECT_GT(r.n_prompt, 600);
        EXPECT_GT(r.ttft_ms, 0.0);
        EXPECT_GE(r.score, 0.0);
        EXPECT_LE(r.score, 1.0);
        EXPECT_EQ(r.prompt_sha256.size(), 64u);
        EXPECT_EQ(r.prefill_rows_per_layer.size(), static_cast<size_t>(kLayers));
        EXPECT_TRUE(r.depth == 0.0 || r.depth == 1.0) << r.depth;
        if (r.policy == "full") {
            EXPECT_TRUE(r.schedule.empty());
            EXPECT_DOUBLE_EQ(r.pct_computed, 100.0);
        } else {
            EXPECT_EQ(r.policy, "lazy");
            EXPECT_FALSE(r.schedule.empty());
            EXPECT_LT(r.pct_computed, 100.0);
        }
        // Both policies saw the very same prompt.
        auto [it, fresh] = sha_by_id.emplace(r.id, r.prompt_sha256);
        if (!fresh) {
            EXPECT_EQ(it->second, r.prompt_sha256);
        }
    }
    EXPECT_EQ(sha_by_id.size(), 4u);
    // Full runs first for each sample.
    EXPECT_EQ(file->records[0].policy, "full");
    EXPECT_EQ(file->records[1].policy, "lazy");
    EXPECT_EQ(file->records[0].id, file->records[1].id);

    // Resuming adds nothing.
    auto again = run_eval(*engine_, samples, options());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->ran, 0);
    EXPECT_EQ(again->skipped, 8);
    EXPECT_EQ(count_lines(path), 8);

    auto summary = write_reports(out_dir_);
    ASSERT_TRUE(summary.ok()) << summary.error().message();
    ASSERT_EQ(summary->overall.size(), 2u);
    EXPECT_EQ(summary->overall[0].policy, "full");
    EXPECT_EQ(summary->overall[0].n, 4);
    EXPECT_DOUBLE_EQ(summary->overall[0].mean_speedup, 1.0);
    EXPECT_EQ(summary->overall[1].n_speedup, 4);
    EXPECT_TRUE(std::isfinite(summary->overall[1].mean_speedup));
    EXPECT_EQ(summary->rows.size(), 4u);  // 2 tasks x 1 length x 2 policies
    for (const char* f : {"summary.md", "summary.csv", "report.html", "run.json"}) {
        EXPECT_TRUE(std::filesystem::exists(out_dir_ + "/" + f)) << f;
    }
    EXPECT_EQ(count_lines(out_dir_ + "/summary.csv"), 1 + 4 + 2);
    std::ifstream html(out_dir_ + "/report.html");
    std::stringstream ss;
    ss << html.rdbuf();
    EXPECT_NE(ss.str().find("<svg"), std::string::npos);
    EXPECT_EQ(ss.str().find("<script"), std::string::npos);
}

TEST_F(TinyRunnerTest, LimitThenResumeCompletes) {
    const std::vector<Sample> samples = suite();
    RunnerOptions o = options();
    o.limit = 1;
    auto first = run_eval(*engine_, samples, o);
    ASSERT_TRUE(first.ok()) << first.error().message();
    EXPECT_EQ(first->ran, 2);
    // A run killed mid-line leaves a partial record; the next run ends that line and goes on.
    {
        std::ofstream out(out_dir_ + "/samples.jsonl", std::ios::app | std::ios::binary);
        out << "{\"task\": \"passkey\", \"id\"";
    }
    o.limit = 0;
    auto rest = run_eval(*engine_, samples, o);
    ASSERT_TRUE(rest.ok()) << rest.error().message();
    EXPECT_EQ(rest->skipped, 2);
    EXPECT_EQ(rest->ran, 6);
    auto file = read_records(out_dir_ + "/samples.jsonl");
    ASSERT_TRUE(file.ok());
    EXPECT_EQ(file->records.size(), 8u);
    EXPECT_EQ(file->warnings.size(), 1u);
}

// Records are keyed on (task, id): a sample listed twice is refused, never taken as done.
TEST_F(TinyRunnerTest, DuplicateSampleIdsAreRefused) {
    std::vector<Sample> samples = suite();
    samples.push_back(samples[1]);
    auto r = run_eval(*engine_, samples, options());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find(samples[1].task + "/" + samples[1].id + " appears twice"),
              std::string::npos)
        << r.error().message();
}

TEST_F(TinyRunnerTest, BadPolicyScheduleFailsBeforeRunning) {
    RunnerOptions o = options();
    PruneOptions bad;
    bad.schedule = Schedule{{9}, {0.5f}};  // a 4-layer model has boundaries 1..3
    auto runs = make_policy_runs({"full", "lazy"}, bad, 4);
    ASSERT_TRUE(runs.ok());
    o.policies = *runs;
    auto r = run_eval(*engine_, suite(), o);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("lazy"), std::string::npos) << r.error().message();
    EXPECT_FALSE(std::filesystem::exists(out_dir_ + "/samples.jsonl"));
}

// tune --objective answers: full scores 1 on every prompt; a candidate scores 1 exactly when
// its greedy answer equals full's, which a schedule that cannot prune (context floor above the
// prompt) always does, with nothing pruned.
TEST_F(TinyRunnerTest, AnswersEvaluatorComparesWithFullsAnswer) {
    EXPECT_FALSE(AnswersTuneEvaluator::create(*engine_, suite(), 0).ok());
    auto ev = AnswersTuneEvaluator::create(*engine_, suite(), 8);
    ASSERT_TRUE(ev.ok()) << ev.error().message();
    ASSERT_EQ(ev->n_samples(), 4);
    Schedule never{{2}, {0.25f}};
    never.min_context = 100000;
    // A candidate before full: full's answer is made on first use.
    auto first = ev->evaluate(&never, 1);
    ASSERT_TRUE(first.ok()) << first.error().message();
    EXPECT_EQ(first->score, 1.0);
    EXPECT_EQ(first->pct_computed, 100.0);
    // Full's own calls time it again (the first may be tune's untimed warm-up).
    auto warm = ev->evaluate(nullptr, 0), timed = ev->evaluate(nullptr, 0);
    ASSERT_TRUE(warm.ok() && timed.ok());
    EXPECT_NE(warm->ttft_ms, timed->ttft_ms);
    for (int i = 0; i < ev->n_samples(); ++i) {
        auto full = ev->evaluate(nullptr, i);
        ASSERT_TRUE(full.ok());
        EXPECT_EQ(full->score, 1.0);
        EXPECT_GT(full->ttft_ms, 0.0);
        auto same = ev->evaluate(&never, i);
        ASSERT_TRUE(same.ok());
        EXPECT_EQ(same->score, 1.0) << i;
    }
    // A schedule that prunes computes less; its score is 0 or 1 and equals whether its answer
    // is full's, checked against a direct generation.
    const Schedule prunes{{1}, {0.1f}};
    auto cut = ev->evaluate(&prunes, 0);
    ASSERT_TRUE(cut.ok());
    EXPECT_LT(cut->pct_computed, 100.0);
    auto pp = prepare_prompt(*engine_, suite()[0]);
    ASSERT_TRUE(pp.ok());
    PruneOptions lazy;
    lazy.policy = Policy::kLazy;
    lazy.schedule = prunes;
    auto g_full = engine_->generate(pp->ids, greedy_run_options(PruneOptions{}, 8));
    auto g_lazy = engine_->generate(pp->ids, greedy_run_options(lazy, 8));
    ASSERT_TRUE(g_full.ok() && g_lazy.ok());
    EXPECT_EQ(cut->score, greedy_common_prefix(g_full->tokens, g_lazy->tokens, 8) == 8 ? 1.0 : 0.0);
    EXPECT_EQ(ev->evaluate(nullptr, 4).error().code(), ErrorCode::kOutOfRange);
}

}  // namespace
}  // namespace lazyllm::eval
