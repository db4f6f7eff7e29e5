#include "cli/bench_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>

namespace lazyllm::cli {

namespace {

std::string human_size(uint64_t b) {
    if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(b) / (1ull << 30));
    return fmt::format("{:.2f} MiB", static_cast<double>(b) / (1ull << 20));
}

std::string human_count(uint64_t n) {
    const double v = static_cast<double>(n);
    if (v >= 1e9) return fmt::format("{:.2f} B", v / 1e9);
    if (v >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
    return fmt::format("{:.2f} K", v / 1e3);
}

std::vector<double> samples_ts(const BenchRow& r) {
    std::vector<double> ts;
    for (double ns : r.samples_ns) ts.push_back(1e9 * static_cast<double>(r.n_tokens()) / ns);
    return ts;
}

// Achieved GFLOP/s of each prefill: useful FLOPs over prefill time (GFLOP / ns * 1e9).
std::vector<double> samples_gflops(const BenchRow& r) {
    std::vector<double> g;
    for (size_t i = 0; i < r.gflop.size() && i < r.samples_ns.size(); ++i) {
        g.push_back(r.gflop[i] * 1e9 / r.samples_ns[i]);
    }
    return g;
}

std::string pm(const Stats& s, int decimals) {
    return fmt::format("{:.{}f} ± {:.{}f}", s.mean, decimals, s.stddev, decimals);
}

}  // namespace

std::string BenchRow::test_name() const {
    if (is_prompt) return fmt::format("pp{}", n_prompt);
    return fmt::format("tg{} @ d{}", n_gen, n_depth);
}

Stats stats(std::span<const double> v) {
    Stats s;
    if (v.empty()) return s;
    for (double x : v) s.mean += x;
    s.mean /= static_cast<double>(v.size());
    if (v.size() < 2) return s;
    double ss = 0.0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(v.size() - 1));
    return s;
}

namespace {

// Of a dense causal prefill of n rows, the shares of its (query, key) pairs a window of w keys
// keeps: of the last row's (n keys) and of the other rows' (row p sees p keys, p < n).
struct WindowShare {
    double last = 1.0, others = 1.0;
};
WindowShare window_share(double n, double w) {
    if (w <= 0.0 || n <= w) return {};
    const double others = w * (w + 1.0) / 2.0 + (n - 1.0 - w) * w;  // sum of min(p, w), p < n
    return {w / n, others / (n * (n - 1.0) / 2.0)};
}

}  // namespace

double prefill_gflop(const ModelSummary& s, int64_t n_prompt,
                     std::span<const int32_t> rows_per_layer,
                     std::span<const int32_t> tail_rows_per_layer, double fraction) {
    const double E = s.n_embd, F = s.n_ff, hd = s.head_dim;
    const double q = static_cast<double>(s.n_head) * hd, kv = static_cast<double>(s.n_head_kv) * hd;
    // Weights touched per token in one layer: Wq|Wk|Wv, then Wo, Wgate|Wup, Wdown.
    const double qkv_per_row = 2.0 * E * (q + 2.0 * kv);
    const double rest_per_row = 2.0 * (q * E + E * 2.0 * F + F * E);
    const double attn_per_pair = 4.0 * static_cast<double>(s.n_head) * hd;
    const bool per_layer = static_cast<int>(rows_per_layer.size()) == s.n_layer &&
                           tail_rows_per_layer.size() == rows_per_layer.size();
    double flops = 2.0 * E * s.n_vocab;  // LM head, last token only
    const WindowShare window = window_share(static_cast<double>(n_prompt), s.sliding_window);
    for (int il = 0; il < s.n_layer; ++il) {
        const bool local =
            s.sliding_window > 0 &&
            std::find(s.global_layers.begin(), s.global_layers.end(), il) == s.global_layers.end();
        const double r = per_layer ? rows_per_layer[il] : fraction * static_cast<double>(n_prompt);
        // Rows past QKV: all of them, the last one at the last layer, the kept ones before a
        // boundary. The last row sees all r keys, the others r / 2 on average (exact when
        // every row or the last row alone runs).
        const double r_t = per_layer ? tail_rows_per_layer[il] : (il + 1 == s.n_layer ? 1.0 : r);
        const WindowShare w = local ? window : WindowShare{};
        const double pairs = r_t > 0.0 ? r * w.last + (r_t - 1.0) * r / 2.0 * w.others : 0.0;
        flops += qkv_per_row * r + rest_per_row * r_t + attn_per_pair * pairs;
    }
    return flops / 1e9;
}

std::vector<double> BenchRow::mean_token_ms() const {
    const size_t n = static_cast<size_t>(n_gen) + 1;
    std::vector<double> mean(n, 0.0);
    int reps = 0;
    for (const std::vector<double>& t : token_ms) {
        if (t.size() != n) continue;
        for (size_t i = 0; i < n; ++i) mean[i] += t[i];
        ++reps;
    }
    if (reps == 0) return {};
    for (double& v : mean) v /= reps;
    return mean;
}

void fill_speedups(std::vector<BenchRow>& rows) {
    // Keyed by engine (threads and prefill weights) and prompt: lazy against full on the same
    // engine.
    using Key = std::pair<int, int64_t>;
    std::map<Key, double> full_ttft;
    std::map<Key, std::vector<double>> full_tokens;
    for (const BenchRow& r : rows) {
        if (r.policy != "full") continue;
        if (r.is_prompt) {
            full_ttft[{r.engine, r.n_prompt}] = stats(r.ttft_ms).mean;
        } else {
            full_tokens[{r.engine, r.n_prompt}] = r.mean_token_ms();
        }
    }
    for (BenchRow& r : rows) {
        if (r.is_prompt) {
            auto it = full_ttft.find({r.engine, r.n_prompt});
            const double mine = stats(r.ttft_ms).mean;
            if (it != full_ttft.end() && mine > 0.0) r.speedup_vs_full = it->second / mine;
            continue;
        }
        auto it = full_tokens.find({r.engine, r.n_prompt});
        const std::vector<double> mine = r.mean_token_ms();
        if (it == full_tokens.end() || mine.empty() || it->second.size() != mine.size()) continue;
        for (size_t i = 0; i < mine.size(); ++i) {
            if (mine[i] <= 0.0) continue;
            const double ratio = it->second[i] / mine[i];
            if (!r.e2e_speedup_min || ratio < *r.e2e_speedup_min) {
                r.e2e_speedup_min = ratio;
                r.e2e_speedup_min_n = static_cast<int64_t>(i) + 1;
            }
        }
        if (mine.back() > 0.0) r.e2e_speedup = it->second.back() / mine.back();
    }
}

void print_markdown(std::FILE* out, const BenchEnv& env, const std::vector<BenchRow>& rows) {
    // engine -> a row carrying that engine's probe
    std::map<int, const BenchRow*> peaks;
    for (const BenchRow& r : rows) peaks.emplace(r.engine, &r);
    fmt::print(out, "model: {} ({}), prompt: {}\n", env.model_filename, env.model_type, env.prompt);
    for (const auto& [engine, r] : peaks) {
        fmt::print(out,
                   "GEMM peak at t={}, CPU {}/{}: {:.0f} GFLOP/s ({} 2048x576x1536, "
                   "best call of the probes before and after the runs)\n",
                   r->n_threads, r->isa, r->gemm, r->peak_gflops,
                   r->gemm == "quant" ? "QuantLinear Q4_1" : "PackedLinear");
    }
    fmt::print(out,
               "\n| model | size | params | backend | threads | policy | test | t/s | TTFT ms "
               "| speedup | % computed | GFLOP/s | % peak | RSS MiB |\n");
    fmt::print(out,
               "| --- | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: "
               "| ---: | ---: | ---: |\n");
    for (const BenchRow& r : rows) {
        const std::string ts = pm(stats(samples_ts(r)), 2);
        const double pct = stats(r.pct_computed).mean;
        std::string ttft = "", speedup = "", gflops = "", peak = "", rss = "";
        if (r.is_prompt) {
            ttft = pm(stats(r.ttft_ms), 1);
            speedup = r.speedup_vs_full ? fmt::format("{:.2f}x", *r.speedup_vs_full) : "-";
            const double g = stats(samples_gflops(r)).mean;
            gflops = fmt::format("{:.0f}", g);
            peak = r.peak_gflops > 0 ? fmt::format("{:.1f}%", 100.0 * g / r.peak_gflops) : "-";
            rss = r.peak_rss_mib > 0 ? fmt::format("{:.0f}", r.peak_rss_mib) : "-";
        }
        fmt::print(out,
                   "| {} | {} | {} | CPU {}/{} | {} | {} | {} | {} | {} | {} | {:.1f}% | {} "
                   "| {} | {} |\n",
                   env.model_type, human_size(env.model_size), human_count(env.model_n_params),
                   r.isa, r.gemm, r.n_threads, r.policy, r.test_name(), ts, ttft, speedup, pct,
                   gflops, peak, rss);
    }
    bool e2e_header = false;
    for (const BenchRow& r : rows) {
        const std::vector<double> t = r.is_prompt ? std::vector<double>{} : r.mean_token_ms();
        if (t.empty()) continue;
        if (!e2e_header) {
            fmt::print(out,
                       "\nEnd-to-end latency: prompt in -> the N-th generated token (N = 1 is "
                       "TTFT), mean over repetitions; x full = full's latency / this one's at the "
                       "same N.\n\n| backend | threads | policy | prompt | N = 1 ms | N = {} ms "
                       "| x full at N = {} | lowest x full over N = 1..{} (at N) |\n| --- | ---: "
                       "| --- | ---: | ---: | ---: | ---: | ---: |\n",
                       t.size(), t.size(), t.size());
            e2e_header = true;
        }
        fmt::print(out, "| CPU {}/{} | {} | {} | {} | {:.1f} | {:.1f} | {} | {} |\n", r.isa, r.gemm,
                   r.n_threads, r.policy, r.n_prompt, t.front(), t.back(),
                   r.e2e_speedup ? fmt::format("{:.2f}x", *r.e2e_speedup) : "-",
                   r.e2e_speedup_min
                       ? fmt::format("{:.2f}x ({})", *r.e2e_speedup_min, r.e2e_speedup_min_n)
                       : "-");
    }
    std::map<std::string, std::string> schedules;
    std::map<std::string, std::pair<int64_t, std::vector<std::string>>> under_floor;
    for (const BenchRow& r : rows) {
        if (!r.schedule.empty()) schedules.emplace(r.policy, r.schedule);
        // Prompts under the schedule's context floor ran as full: say so, or a 1.00x reads as
        // pruning that gained nothing.
        if (r.is_prompt && r.n_prompt < r.min_context) {
            auto& [floor, tests] = under_floor[r.policy];
            floor = r.min_context;
            // One entry per test: rows of several engines (--prefill-weights a,b) repeat it.
            if (std::find(tests.begin(), tests.end(), r.test_name()) == tests.end()) {
                tests.push_back(r.test_name());
            }
        }
    }
    if (!schedules.empty()) fmt::print(out, "\n");
    for (const auto& [policy, sched] : schedules) {
        fmt::print(out, "{}: {}\n", policy, sched);
        if (auto it = under_floor.find(policy); it != under_floor.end()) {
            fmt::print(out, "  ({}: under min_context={}, run as full)\n",
                       fmt::join(it->second.second, ", "), it->second.first);
        }
    }
    fmt::print(
        out,
        "\nt/s: pp = prompt tokens / prefill time, tg = decode steps / decode time "
        "(mean ± stddev). TTFT: prefill + first sample. % computed: prompt (token, layer) "
        "pairs computed (pp: after prefill, tg: at the end, with revivals). GFLOP/s: useful "
        "prefill FLOPs / prefill time; % peak: that over the GEMM peak above (over 100% when "
        "the probes met more interference than the runs). RSS MiB: the process's peak resident set "
        "during "
        "the row's runs (weights, KV cache, scratch).\n");

    for (const BenchRow& r : rows) {
        if (r.profile.empty()) continue;
        double total = 0.0;
        for (const OpTime& o : r.profile) total += o.ms;
        fmt::print(out, "\n### profile: {} {}, t={} (one extra run, {}: {:.1f} ms)\n\n", r.policy,
                   r.test_name(), r.n_threads, r.is_prompt ? "prefill" : "its decode steps", total);
        fmt::print(out, "| op | ms | share | GFLOP/s |\n| --- | ---: | ---: | ---: |\n");
        for (const OpTime& o : r.profile) {
            fmt::print(out, "| {} | {:.2f} | {:.1f}% | {} |\n", o.op, o.ms, 100.0 * o.ms / total,
                       o.gflops > 0 ? fmt::format("{:.0f}", o.gflops) : "");
        }
    }
}

void print_jsonl(std::FILE* out, const BenchEnv& env, const std::vector<BenchRow>& rows) {
    for (const BenchRow& r : rows) {
        const std::vector<double> ts = samples_ts(r);
        const Stats ns = stats(r.samples_ns), tss = stats(ts);
        nlohmann::json j;
        // llama-bench's fields (tools/llama-bench: test::get_fields), where they apply on a CPU.
        j["build_commit"] = env.build_commit;
        j["cpu_info"] = env.cpu_info;
        j["backends"] = "CPU";
        j["model_filename"] = env.model_filename;
        j["model_type"] = env.model_type;
        j["model_size"] = env.model_size;
        j["model_n_params"] = env.model_n_params;
        j["n_threads"] = r.n_threads;
        j["n_prompt"] = r.is_prompt ? r.n_prompt : 0;
        j["n_gen"] = r.is_prompt ? 0 : r.n_gen;
        j["n_depth"] = r.is_prompt ? 0 : r.n_depth;
        j["test_time"] = env.test_time;
        j["avg_ns"] = static_cast<int64_t>(std::llround(ns.mean));
        j["stddev_ns"] = static_cast<int64_t>(std::llround(ns.stddev));
        j["avg_ts"] = tss.mean;
        j["stddev_ts"] = tss.stddev;
        std::vector<int64_t> samples_ns;
        for (double v : r.samples_ns) samples_ns.push_back(std::llround(v));
        j["samples_ns"] = samples_ns;
        j["samples_ts"] = ts;
        // lazyllm's.
        j["test"] = r.test_name();
        j["isa"] = r.isa;
        j["gemm"] = r.gemm;
        j["policy"] = r.policy;
        j["schedule"] = r.schedule;
        j["prompt"] = env.prompt;
        j["pct_computed"] = stats(r.pct_computed).mean;
        j["peak_gflops"] = r.peak_gflops;
        if (r.is_prompt) j["peak_rss_mib"] = r.peak_rss_mib;
        if (!r.is_prompt) {
            const std::vector<double> t = r.mean_token_ms();
            j["e2e_ms"] = t.empty() ? nlohmann::json() : nlohmann::json(t.back());
            j["e2e_speedup_vs_full"] =
                r.e2e_speedup ? nlohmann::json(*r.e2e_speedup) : nlohmann::json();
            j["e2e_speedup_min"] =
                r.e2e_speedup_min ? nlohmann::json(*r.e2e_speedup_min) : nlohmann::json();
            j["e2e_speedup_min_n"] = r.e2e_speedup_min ? nlohmann::json(r.e2e_speedup_min_n)
                                                       : nlohmann::json();
        }
        if (r.is_prompt) {
            const Stats t = stats(r.ttft_ms);
            j["ttft_ms"] = t.mean;
            j["ttft_stddev_ms"] = t.stddev;
            j["ttft_samples_ms"] = r.ttft_ms;
            j["speedup_vs_full"] =
                r.speedup_vs_full ? nlohmann::json(*r.speedup_vs_full) : nlohmann::json();
            j["prefill_gflop"] = stats(r.gflop).mean;
            j["prefill_gflops"] = stats(samples_gflops(r)).mean;
        }
        if (!r.profile.empty()) {
            nlohmann::json p = nlohmann::json::array();
            for (const OpTime& o : r.profile) {
                p.push_back({{"op", o.op}, {"ms", o.ms}, {"gflops", o.gflops}});
            }
            j["profile"] = p;
        }
        fmt::print(out, "{}\n", j.dump());
    }
}

}  // namespace lazyllm::cli
