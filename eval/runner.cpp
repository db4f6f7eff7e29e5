#include "eval/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "base/read_file.h"
#include "base/timer.h"
#include "eval/sha256.h"

namespace lazyllm::eval {

namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a bijective mixer, so distinct inputs stay distinct.
uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// FNV-1a 64: a stable hash of the task name (std::hash is not stable across libraries).
uint64_t fnv1a(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

using RecordKey = std::tuple<std::string, std::string, std::string>;  // task, id, policy

Status append_line(const std::string& path, const std::string& line) {
    std::FILE* f = std::fopen(path.c_str(), "ab");
    if (f == nullptr) return make_error(ErrorCode::kIo, "cannot append to '{}'", path);
    const bool ok = std::fwrite(line.data(), 1, line.size(), f) == line.size() &&
                    std::fputc('\n', f) != EOF && std::fflush(f) == 0;
    std::fclose(f);
    if (!ok) return make_error(ErrorCode::kIo, "cannot write to '{}'", path);
    return {};
}

// What a run's records depend on besides the prompts (checked one by one): the model file, the
// GEMM path, the prefill weights and each policy's schedule.
nlohmann::json run_config(const Engine& engine, const RunnerOptions& opts) {
    const ModelSummary& s = engine.summary();
    nlohmann::json c;
    c["model"] = s.path;
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(s.path, ec);
    c["model_bytes"] = ec ? 0 : static_cast<uint64_t>(bytes);
    c["gemm"] = s.gemm;
    // The choice alone: its reason ("auto: copies 520 MiB, memory available ...") varies.
    c["prefill_weights"] = s.prefill_weights.substr(0, s.prefill_weights.find(' '));
    nlohmann::json schedules = nlohmann::json::object();
    for (const auto& p : opts.policies) {
        auto sch = engine.resolve_schedule(p.prune);
        schedules[p.name] = p.prune.policy == Policy::kFull || !sch.ok() ? "" : to_string(*sch);
    }
    c["schedules"] = schedules;
    return c;
}

// Resuming into a folder whose records were made under another configuration would mix them in
// one summary: an error naming what differs. A policy the folder has no records of may differ.
Status check_resumable(const nlohmann::json& config, const std::string& run_json) {
    auto text = read_whole_file(run_json);
    if (!text) return {};  // a new folder
    const nlohmann::json old = nlohmann::json::parse(*text, nullptr, false);
    if (old.is_discarded() || !old.contains("config")) return {};  // written before the check
    const nlohmann::json& was = old["config"];
    for (const char* key : {"model", "model_bytes", "gemm", "prefill_weights"}) {
        if (was.contains(key) && was[key] != config[key]) {
            return make_error(ErrorCode::kInvalidArgument,
                              "{} holds records made with {} {}, this run has {}: give another -o "
                              "or remove the folder",
                              run_json, key, was[key].dump(), config[key].dump());
        }
    }
    for (const auto& [name, schedule] : config["schedules"].items()) {
        if (was["schedules"].contains(name) && was["schedules"][name] != schedule) {
            return make_error(ErrorCode::kInvalidArgument,
                              "{} holds records of policy {} with the schedule {}, this run's is "
                              "{}: give another -o or remove the folder",
                              run_json, name, was["schedules"][name].dump(), schedule.dump());
        }
    }
    return {};
}

Status write_run_info(const Engine& engine, const RunnerOptions& opts, const nlohmann::json& config,
                      const std::string& path) {
    const ModelSummary& s = engine.summary();
    nlohmann::json j;
    j["model"] = s.path;
    j["model_name"] = s.name;
    j["arch"] = s.arch;
    j["n_layer"] = s.n_layer;
    j["threads"] = s.n_threads;
    j["isa"] = s.isa;
    j["gemm"] = s.gemm;
    std::vector<std::string> names;
    for (const auto& p : opts.policies) names.push_back(p.name);
    j["policies"] = names;
    j["config"] = config;
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    j["updated"] = buf;
    const std::string text = j.dump(2) + "\n";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return make_error(ErrorCode::kIo, "cannot write '{}'", path);
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    std::fclose(f);
    if (!ok) return make_error(ErrorCode::kIo, "cannot write '{}'", path);
    return {};
}

RunOptions run_options(const Engine& engine, const Sample& sample, const PolicyRun& policy) {
    RunOptions ro;
    ro.max_new_tokens = std::max(1, sample.max_new_tokens);
    if (!sample.stop_token.empty()) {
        // pred.py: tokenizer.encode("\n", add_special_tokens=False)[-1], banned as the first token.
        const std::vector<TokenId> ids = engine.tokenizer().encode(sample.stop_token, false, false);
        if (!ids.empty()) ro.stop_ids = {ids.back()};
        ro.min_new_tokens = 1;
    }
    ro.prune = policy.prune;
    ro.sampling.temperature = 0.0f;  // greedy, as LongBench and RULER score
    ro.sampling.seed = 1;
    return ro;
}

}  // namespace

std::vector<std::string> default_tasks() {
    return {"passkey", "niah_single", "niah_multikey", "niah_multivalue", "vt", "mdqa"};
}

std::vector<double> depth_grid(int n_depths) {
    if (n_depths <= 0) return {};
    if (n_depths == 1) return {0.5};
    std::vector<double> d(static_cast<size_t>(n_depths));
    for (int i = 0; i < n_depths; ++i) d[i] = static_cast<double>(i) / (n_depths - 1);
    return d;
}

uint64_t sample_seed(uint64_t base, std::string_view task, int64_t length, int depth_index,
                     int sample_index) {
    uint64_t h = splitmix64(base);
    h = splitmix64(h ^ fnv1a(task));
    h = splitmix64(h ^ static_cast<uint64_t>(length));
    h = splitmix64(h ^ static_cast<uint64_t>(depth_index));
    h = splitmix64(h ^ static_cast<uint64_t>(sample_index));
    return h;
}

Result<std::vector<Sample>> make_suite(const SuiteSpec& spec, const Tokenizer& tok) {
    if (spec.samples_per_cell < 1) {
        return make_error(ErrorCode::kInvalidArgument, "samples per cell must be >= 1, got {}",
                          spec.samples_per_cell);
    }
    const std::vector<double> depths = depth_grid(spec.n_depths);
    if (depths.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "number of depths must be >= 1, got {}",
                          spec.n_depths);
    }
    std::vector<Sample> out;
    for (const std::string& task : spec.tasks) {
        for (int64_t length : spec.lengths) {
            for (size_t di = 0; di < depths.size(); ++di) {
                for (int k = 0; k < spec.samples_per_cell; ++k) {
                    const uint64_t seed =
                        sample_seed(spec.seed, task, length, static_cast<int>(di), k);
                    const int64_t n = spec.max_prompt_tokens > 0
                                          ? std::min(length, spec.max_prompt_tokens)
                                          : length;
                    auto s = make_builtin(task, n, depths[di], seed, tok);
                    if (!s.ok()) {
                        return make_error(s.error().code(),
                                          "task '{}' at length {} depth {:.2f}: {}", task, length,
                                          depths[di], s.error().message());
                    }
                    s->target_tokens = length;
                    out.push_back(std::move(s).value());
                }
            }
        }
    }
    return out;
}

Result<std::vector<PolicyRun>> make_policy_runs(const std::vector<std::string>& names,
                                                const PruneOptions& schedule, int n_layer) {
    static constexpr std::string_view kKnown[] = {"full",   "lazy",   "lazy:safe", "lazy:fast",
                                                  "static", "random", "gemfilter"};
    std::vector<PolicyRun> runs;
    std::set<std::string> seen;
    for (const std::string& name : names) {
        const size_t at = name.find('@');  // lazy@FILE: lazy with that schedule file
        if (at != std::string::npos) {
            if (!seen.insert(name).second) {
                return make_error(ErrorCode::kInvalidArgument, "policy '{}' is listed twice", name);
            }
            PolicyRun r;
            r.name = name;
            r.prune = schedule;
            const std::string policy = name.substr(0, at), file = name.substr(at + 1);
            auto parsed = parse_policy(policy);
            if (!parsed.ok() || *parsed == Policy::kFull || file.empty()) {
                return make_error(ErrorCode::kInvalidArgument,
                                  "policy '{}': POLICY@FILE names a pruning policy and a schedule "
                                  "file",
                                  name);
            }
            r.prune.policy = *parsed;
            LAZYLLM_ASSIGN_OR_RETURN(r.prune.schedule, load_schedule_file(file, n_layer));
            runs.push_back(std::move(r));
            continue;
        }
        if (std::find(std::begin(kKnown), std::end(kKnown), name) == std::end(kKnown)) {
            return make_error(ErrorCode::kInvalidArgument,
                              "unknown policy '{}' (full, lazy, lazy:safe, lazy:fast, static, "
                              "random, gemfilter)",
                              name);
        }
        if (!seen.insert(name).second) {
            return make_error(ErrorCode::kInvalidArgument, "policy '{}' is listed twice", name);
        }
        PolicyRun r;
        r.name = name;
        if (name != "full") r.prune = schedule;
        const size_t colon = name.find(':');  // lazy:fast -> lazy with the fast preset
        LAZYLLM_ASSIGN_OR_RETURN(r.prune.policy, parse_policy(name.substr(0, colon)));
        if (colon != std::string::npos) {
            LAZYLLM_ASSIGN_OR_RETURN(r.prune.preset, parse_preset(name.substr(colon + 1)));
            if (schedule.schedule) {  // as run's --lazy=PRESET with schedule flags
                return make_error(ErrorCode::kInvalidArgument,
                                  "policy '{}' is a preset, which picks the model's schedule: "
                                  "give 'lazy' with --lazy-layers/--lazy-keep/--schedule, or "
                                  "drop those flags",
                                  name);
            }
        }
        r.prune.seed = schedule.seed;
        if (name == "full") {
            runs.insert(runs.begin(), std::move(r));
        } else {
            runs.push_back(std::move(r));
        }
    }
    if (runs.empty()) return make_error(ErrorCode::kInvalidArgument, "no policies given");
    return runs;
}

bool wraps_chat(const Engine& engine) {
    return !engine.tokenizer().chat_template().empty() ||
           engine.summary().chat_template_source == "--chat-template";
}

Result<PreparedPrompt> prepare_prompt(const Engine& engine, const Sample& sample) {
    PreparedPrompt p;
    // A base model (no tokenizer.chat_template, e.g. Gemma 3 270M) continues the plain prompt.
    // Either ends in the task's answer lead-in (RULER's answer_prefix), after the assistant
    // turn's opening in a chat, where its leading space would start the turn with a space.
    const bool chat = sample.chat && wraps_chat(engine);
    if (chat) {
        const std::string_view lead = sample.answer_prefix;
        p.text = engine.chat_prompt(sample.prompt) +
                 std::string(lead.substr(std::min(lead.size(), lead.find_first_not_of(' '))));
    } else {
        p.text = sample.prompt + sample.answer_prefix;
    }
    // Chat prompts carry the template's special tokens; plain prompts are plain text.
    p.ids = engine.tokenizer().encode(p.text, /*parse_special=*/chat);
    if (p.ids.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "sample {}/{} has an empty prompt",
                          sample.task, sample.id);
    }
    const int64_t room =
        static_cast<int64_t>(engine.summary().n_ctx_train) - std::max(1, sample.max_new_tokens);
    if (room < 2) {
        return make_error(ErrorCode::kOutOfRange,
                          "sample {}/{}: {} new tokens leave no room in "
                          "the model's context of {}",
                          sample.task, sample.id, sample.max_new_tokens,
                          engine.summary().n_ctx_train);
    }
    if (static_cast<int64_t>(p.ids.size()) > room) {
        // LongBench pred.py: tokenized_prompt[:half] + tokenized_prompt[-half:].
        const int64_t half = room / 2;
        std::vector<TokenId> cut(p.ids.begin(), p.ids.begin() + half);
        cut.insert(cut.end(), p.ids.end() - (room - half), p.ids.end());
        p.ids.swap(cut);
        p.truncated = true;
    }
    return p;
}

Result<SampleRecord> evaluate_one(const Engine& engine, const Sample& sample,
                                  const PreparedPrompt& prompt, const PolicyRun& policy) {
    auto r = engine.generate(prompt.ids, run_options(engine, sample, policy));
    if (!r.ok()) {
        return make_error(r.error().code(), "sample {}/{} under policy {}: {}", sample.task,
                          sample.id, policy.name, r.error().message());
    }
    SampleRecord rec;
    rec.task = sample.task;
    rec.id = sample.id;
    rec.prompt_sha256 = sha256_hex(prompt.text);
    rec.length = sample.target_tokens;
    rec.n_prompt = r->n_prompt;
    rec.depth = sample.depth;
    rec.policy = policy.name;
    rec.schedule = r->schedule;
    rec.metric = std::string(metric_name(sample.metric));
    rec.prediction = r->text;
    rec.answers = sample.answers;
    rec.score = score(sample, r->text);
    rec.ttft_ms = r->ttft_ms;
    rec.pct_computed = 100.0 * r->fraction_computed;
    rec.prefill_rows_per_layer = r->prefill_rows_per_layer;
    rec.n_gen = r->n_gen;
    rec.stop_reason = r->stop_reason;
    rec.truncated = prompt.truncated;
    rec.verified = r->first_token_verified;
    return rec;
}

std::string format_duration(double seconds) {
    const auto s = static_cast<int64_t>(std::max(0.0, seconds) + 0.5);
    if (s < 60) return fmt::format("{}s", s);
    if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
    return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

namespace {

// What an earlier run into the same folder left: the (task, id, policy) records done and each
// sample's prompt hash.
struct Resume {
    std::set<RecordKey> done;
    std::map<std::pair<std::string, std::string>, std::string> prompt_hash;  // (task, id) -> hash
};

// Creates the results folder, reads the records already there (ending a line a killed run left
// open), checks that they were made with this configuration and writes run.json.
Result<Resume> open_results(const Engine& engine, const RunnerOptions& opts,
                            const std::string& records_path) {
    std::error_code ec;
    std::filesystem::create_directories(opts.out_dir, ec);
    if (ec) {
        return make_error(ErrorCode::kIo, "cannot create results folder '{}': {}", opts.out_dir,
                          ec.message());
    }
    LAZYLLM_ASSIGN_OR_RETURN(RecordFile existing, read_records(records_path));
    for (const std::string& w : existing.warnings) {
        if (opts.log) opts.log(w);
    }
    if (!existing.ends_with_newline) {
        std::FILE* f = std::fopen(records_path.c_str(), "ab");
        if (f == nullptr) return make_error(ErrorCode::kIo, "cannot append to '{}'", records_path);
        std::fputc('\n', f);
        std::fclose(f);
    }
    const nlohmann::json config = run_config(engine, opts);
    if (!existing.records.empty()) LAZYLLM_TRY(check_resumable(config, opts.out_dir + "/run.json"));
    Resume resume;
    for (const SampleRecord& r : existing.records) {
        resume.done.insert({r.task, r.id, r.policy});
        resume.prompt_hash[{r.task, r.id}] = r.prompt_sha256;
    }
    LAZYLLM_TRY(write_run_info(engine, opts, config, opts.out_dir + "/run.json"));
    return resume;
}

// Records of a sample from an earlier run must be of the same prompt text (the task generators
// or the chat template may have changed since).
Status check_same_prompts(const Engine& engine, std::span<const Sample> samples,
                          const Resume& resume, const std::string& records_path) {
    for (const Sample& sample : samples) {
        const auto hashed = resume.prompt_hash.find({sample.task, sample.id});
        if (hashed == resume.prompt_hash.end()) continue;
        LAZYLLM_ASSIGN_OR_RETURN(PreparedPrompt pp, prepare_prompt(engine, sample));
        if (hashed->second != sha256_hex(pp.text)) {
            return make_error(ErrorCode::kInvalidArgument,
                              "{} holds records of {}/{} made from another prompt text (the "
                              "task or the chat template changed): give another -o or remove the "
                              "folder",
                              records_path, sample.task, sample.id);
        }
    }
    return {};
}

// Each sample once: records are keyed on (task, id), so a second sample of the same key (a task
// listed twice, two data files of one dataset without `_id`s) would be taken as done.
Status check_unique_ids(std::span<const Sample> samples) {
    std::set<std::pair<std::string, std::string>> seen;
    for (const Sample& s : samples) {
        if (!seen.insert({s.task, s.id}).second) {
            return make_error(ErrorCode::kInvalidArgument,
                              "sample {}/{} appears twice (a task listed twice, or two data files "
                              "of one dataset with the same ids): each (task, id) must be unique",
                              s.task, s.id);
        }
    }
    return {};
}

// The whole first prompt once per policy, untimed: a shorter one leaves first-use costs of the
// larger buffers and kernel shapes to the first measured sample (seen: 3.0 s vs 1.3 s at 1k
// tokens).
Status warm_up(const Engine& engine, const Sample& first, std::span<const PolicyRun> policies) {
    LAZYLLM_ASSIGN_OR_RETURN(PreparedPrompt pp, prepare_prompt(engine, first));
    Sample warm = first;
    warm.max_new_tokens = 2;
    for (const PolicyRun& p : policies) {
        auto w = engine.generate(pp.ids, run_options(engine, warm, p));
        if (!w.ok()) return make_error(w.error().code(), "warm-up: {}", w.error().message());
    }
    return {};
}

}  // namespace

Result<RunnerStats> run_eval(const Engine& engine, std::span<const Sample> samples,
                             const RunnerOptions& opts) {
    if (opts.policies.empty()) return make_error(ErrorCode::kInvalidArgument, "no policies given");
    for (const PolicyRun& p : opts.policies) {
        RunOptions ro;
        ro.prune = p.prune;
        if (auto st = engine.validate(ro); !st.ok()) {
            return make_error(st.error().code(), "policy {}: {}", p.name, st.error().message());
        }
    }
    auto log = [&opts](const std::string& line) {
        if (opts.log) opts.log(line);
    };
    const std::string records_path = opts.out_dir + "/samples.jsonl";
    LAZYLLM_ASSIGN_OR_RETURN(Resume resume, open_results(engine, opts, records_path));
    std::set<RecordKey>& done = resume.done;
    const size_t n_samples =
        opts.limit > 0 ? std::min(samples.size(), static_cast<size_t>(opts.limit)) : samples.size();
    samples = samples.first(n_samples);
    LAZYLLM_TRY(check_unique_ids(samples));
    LAZYLLM_TRY(check_same_prompts(engine, samples, resume, records_path));

    RunnerStats stats;
    stats.total = static_cast<int64_t>(n_samples * opts.policies.size());
    for (const Sample& sample : samples) {
        for (const PolicyRun& p : opts.policies) {
            if (done.count({sample.task, sample.id, p.name})) ++stats.skipped;
        }
    }
    const int64_t todo = stats.total - stats.skipped;
    log(fmt::format("eval: {} samples x {} policies = {} runs, {} already in {}", n_samples,
                    opts.policies.size(), stats.total, stats.skipped, records_path));
    if (todo == 0) return stats;
    if (opts.warmup && n_samples > 0) LAZYLLM_TRY(warm_up(engine, samples[0], opts.policies));

    Timer timer;
    for (const Sample& s : samples) {
        std::vector<const PolicyRun*> pending;
        for (const PolicyRun& p : opts.policies) {
            if (!done.count({s.task, s.id, p.name})) pending.push_back(&p);
        }
        if (pending.empty()) continue;
        LAZYLLM_ASSIGN_OR_RETURN(PreparedPrompt pp, prepare_prompt(engine, s));
        if (pp.truncated) {
            log(fmt::format("eval: {}/{}: prompt cut in the middle to {} tokens to fit the context",
                            s.task, s.id, pp.ids.size()));
        }
        double full_ttft = 0.0;
        for (const PolicyRun* p : pending) {
            LAZYLLM_ASSIGN_OR_RETURN(SampleRecord rec, evaluate_one(engine, s, pp, *p));
            LAZYLLM_TRY(append_line(records_path, to_json_line(rec)));
            done.insert({rec.task, rec.id, rec.policy});
            ++stats.ran;
            if (p->name == "full") full_ttft = rec.ttft_ms;
            const double elapsed = timer.elapsed_ms() / 1000.0;
            const double eta =
                elapsed / static_cast<double>(stats.ran) * static_cast<double>(todo - stats.ran);
            const std::string speed =
                full_ttft > 0.0 && p->name != "full"
                    ? fmt::format(" ({:.2f}x)", full_ttft / std::max(rec.ttft_ms, 1e-9))
                    : "";
            log(
                fmt::format("eval: {}/{} done, {} elapsed, ETA {} | {} {} d={:.2f} {}: score "
                            "{:.2f}, TTFT {:.0f} ms{}, {:.0f}% computed",
                            stats.skipped + stats.ran, stats.total, format_duration(elapsed),
                            format_duration(eta), s.task, s.target_tokens, s.depth, p->name,
                            rec.score, rec.ttft_ms, speed, rec.pct_computed));
        }
    }
    stats.elapsed_s = timer.elapsed_ms() / 1000.0;
    return stats;
}

}  // namespace lazyllm::eval
