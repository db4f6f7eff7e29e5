#include "eval/fidelity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <nlohmann/json.hpp>

#include "base/timer.h"
#include "eval/stats.h"

namespace lazyllm::eval {

namespace {

struct Measure {
    int64_t length = 0;
    bool top1 = false;
    double kl = 0.0;
    double gap = 0.0;  // the policy's first-token top_two_gap
    bool verified = false;
    double pct = 0.0;
    double speedup = 0.0;  // full's TTFT / this policy's
    bool greedy = false;
    double prefix = 0.0;
    bool exact = false;
    bool exact32 = false;
};

double quantile(std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    // Linear interpolation between closest ranks (numpy's default).
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

FidelityRow aggregate(const std::string& policy, const std::string& schedule, int64_t length,
                      const std::vector<Measure>& ms) {
    FidelityRow row;
    row.policy = policy;
    row.schedule = schedule;
    row.length = length;
    std::vector<double> kls;
    for (const Measure& m : ms) {
        if (length != 0 && m.length != length) continue;
        ++row.n_prompts;
        row.top1_agreement += m.top1 ? 1.0 : 0.0;
        kls.push_back(m.kl);
        row.pct_computed += m.pct;
        row.ttft_speedup += m.speedup;
        row.verified += m.verified ? 1.0 : 0.0;
        if (m.greedy) {
            ++row.n_greedy;
            row.greedy_prefix += m.prefix;
            row.greedy_exact += m.exact ? 1.0 : 0.0;
            row.greedy_exact32 += m.exact32 ? 1.0 : 0.0;
        }
    }
    std::tie(row.top1_low, row.top1_high) =
        wilson_interval(std::llround(row.top1_agreement), row.n_prompts);
    std::tie(row.exact32_low, row.exact32_high) =
        wilson_interval(std::llround(row.greedy_exact32), row.n_greedy);
    if (row.n_prompts > 0) {
        const auto n = static_cast<double>(row.n_prompts);
        row.top1_agreement /= n;
        row.ttft_speedup /= n;
        row.verified /= n;
        row.pct_computed /= n;
        for (double k : kls) row.kl_mean += k / n;
        row.kl_median = quantile(kls, 0.5);
        row.kl_p90 = quantile(kls, 0.9);
        row.kl_max = *std::max_element(kls.begin(), kls.end());
    }
    if (row.n_greedy > 0) {
        row.greedy_prefix /= static_cast<double>(row.n_greedy);
        row.greedy_exact /= static_cast<double>(row.n_greedy);
        row.greedy_exact32 /= static_cast<double>(row.n_greedy);
    }
    return row;
}

// The first N prompts of each length (FidelityOptions::limit), in suite order.
std::vector<Sample> first_per_length(std::vector<Sample> samples, int64_t limit) {
    if (limit <= 0) return samples;
    std::map<int64_t, int64_t> taken;
    std::erase_if(samples, [&](const Sample& s) { return taken[s.target_tokens]++ >= limit; });
    return samples;
}

}  // namespace

RunOptions greedy_run_options(const PruneOptions& prune, int max_new_tokens) {
    RunOptions ro;
    ro.max_new_tokens = max_new_tokens;
    ro.prune = prune;
    ro.sampling.temperature = 0.0f;
    ro.sampling.seed = 1;
    ro.keep_first_logits = true;
    return ro;
}

// A short length leaves out the tasks whose needles and question alone are longer.
Result<std::vector<Sample>> fidelity_suite(const Engine& engine, const FidelityOptions& opts) {
    SuiteSpec spec;
    spec.seed = opts.seed;
    spec.max_prompt_tokens = engine.summary().n_ctx_train - kContextHeadroom;
    const size_t want = static_cast<size_t>(std::max(1, opts.n_depths)) * opts.tasks.size();
    std::vector<Sample> out;
    for (int64_t length : opts.lengths) {
        spec.lengths = {length};
        spec.n_depths = 1;
        std::vector<std::string> fit;
        for (const std::string& task : opts.tasks) {
            spec.tasks = {task};
            auto one = make_suite(spec, engine.tokenizer());
            if (one.ok()) {
                fit.push_back(task);
            } else if (one.error().code() != ErrorCode::kOutOfRange) {
                return one.error();
            }
        }
        if (fit.empty()) {
            return make_error(ErrorCode::kOutOfRange,
                              "no task fits a {}-token prompt: give longer --lengths", length);
        }
        spec.tasks = fit;
        spec.n_depths = std::max(opts.n_depths, static_cast<int>((want + fit.size() - 1) / fit.size()));
        LAZYLLM_ASSIGN_OR_RETURN(std::vector<Sample> part, make_suite(spec, engine.tokenizer()));
        out.insert(out.end(), std::make_move_iterator(part.begin()),
                   std::make_move_iterator(part.end()));
    }
    return out;
}

double kl_divergence(std::span<const float> logits_p, std::span<const float> logits_q) {
    const size_t n = std::min(logits_p.size(), logits_q.size());
    if (n == 0) return 0.0;
    auto log_sum_exp = [n](std::span<const float> l) {
        double mx = -INFINITY;
        for (size_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(l[i]));
        double s = 0.0;
        for (size_t i = 0; i < n; ++i) s += std::exp(static_cast<double>(l[i]) - mx);
        return mx + std::log(s);
    };
    const double lse_p = log_sum_exp(logits_p), lse_q = log_sum_exp(logits_q);
    double kl = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double log_p = static_cast<double>(logits_p[i]) - lse_p;
        const double log_q = static_cast<double>(logits_q[i]) - lse_q;
        kl += std::exp(log_p) * (log_p - log_q);
    }
    return std::max(kl, 0.0);  // rounding can leave -1e-17 for equal inputs
}

int argmax(std::span<const float> logits) {
    int best = 0;
    for (size_t i = 1; i < logits.size(); ++i) {
        if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int>(i);
    }
    return best;
}

int greedy_common_prefix(std::span<const TokenId> a, std::span<const TokenId> b, int n) {
    constexpr TokenId kEnded = -1;
    for (int i = 0; i < n; ++i) {
        const TokenId ta = i < static_cast<int>(a.size()) ? a[i] : kEnded;
        const TokenId tb = i < static_cast<int>(b.size()) ? b[i] : kEnded;
        if (ta != tb) return i;
        if (ta == kEnded) return n;  // both ended here: equal from now on
    }
    return n;
}

namespace {

// The policies compared with full (full itself only against another engine), checked.
Result<std::vector<const PolicyRun*>> compared_policies(const Engine& engine,
                                                        const FidelityOptions& opts) {
    std::vector<const PolicyRun*> policies;
    for (const PolicyRun& p : opts.policies) {
        if (p.name != "full" || opts.reference != nullptr) policies.push_back(&p);
    }
    if (policies.empty()) {
        return make_error(ErrorCode::kInvalidArgument,
                          "fidelity compares policies with full: give at least one other policy");
    }
    if (opts.greedy_tokens < 0 || opts.greedy_every < 1) {
        return make_error(ErrorCode::kInvalidArgument,
                          "greedy tokens must be >= 0 and greedy-every >= 1 (got {} and {})",
                          opts.greedy_tokens, opts.greedy_every);
    }
    if (opts.limit < 0) {
        return make_error(ErrorCode::kInvalidArgument, "limit must be >= 0, got {}", opts.limit);
    }
    // Prompts are at most n_ctx - kContextHeadroom tokens (fidelity_suite); each greedy answer
    // must fit after its prompt.
    const int64_t n_ctx = engine.summary().n_ctx_train;
    for (int64_t length : opts.lengths) {
        const int64_t prompt = std::min(length, n_ctx - kContextHeadroom);
        if (opts.greedy_tokens > 0 && prompt + opts.greedy_tokens > n_ctx) {
            return make_error(ErrorCode::kOutOfRange,
                              "greedy tokens {} after a prompt of {} tokens are over the model's "
                              "context of {}",
                              opts.greedy_tokens, prompt, n_ctx);
        }
    }
    for (const PolicyRun* p : policies) {
        RunOptions ro;
        ro.prune = p->prune;
        if (auto st = engine.validate(ro); !st.ok()) {
            return make_error(st.error().code(), "policy {}: {}", p->name, st.error().message());
        }
    }
    return policies;
}

// One policy's generation against full's on one prompt.
Measure compare(const GenerateResult& full, const GenerateResult& g, const Sample& sample,
                bool greedy, int greedy_tokens) {
    Measure m;
    m.length = sample.target_tokens;
    m.top1 = argmax(g.first_logits) == argmax(full.first_logits);
    m.kl = kl_divergence(full.first_logits, g.first_logits);
    m.gap = top_two_gap(g.first_logits);
    m.verified = g.first_token_verified;
    m.pct = 100.0 * g.prefill_fraction_computed;
    m.speedup = g.ttft_ms > 0.0 ? full.ttft_ms / g.ttft_ms : 0.0;
    if (greedy) {
        const int same = greedy_common_prefix(full.tokens, g.tokens, greedy_tokens);
        m.greedy = true;
        m.prefix = static_cast<double>(same) / greedy_tokens;
        m.exact = same == greedy_tokens;
        m.exact32 = same >= std::min(32, greedy_tokens);
    }
    return m;
}

}  // namespace

Result<FidelityReport> run_fidelity(const Engine& engine, const FidelityOptions& opts) {
    LAZYLLM_ASSIGN_OR_RETURN(std::vector<const PolicyRun*> policies,
                             compared_policies(engine, opts));
    const Engine& full_engine = opts.reference != nullptr ? *opts.reference : engine;
    auto log = [&opts](const std::string& s) {
        if (opts.log) opts.log(s);
    };
    LAZYLLM_ASSIGN_OR_RETURN(std::vector<Sample> samples, fidelity_suite(engine, opts));
    samples = first_per_length(std::move(samples), opts.limit);

    FidelityReport report;
    report.model = engine.summary().path;
    report.n_prompts = static_cast<int64_t>(samples.size());
    report.greedy_tokens = opts.greedy_tokens;
    report.greedy_every = opts.greedy_every;
    std::vector<std::vector<Measure>> measures(policies.size());
    std::vector<std::string> schedules(policies.size());
    double total_tokens = 0.0;
    if (!samples.empty()) {
        // One untimed run of the first prompt per engine and policy, as the eval runner does:
        // a process's first generation pays first-use costs (seen: 3.0 s against 1.3 s at 1k
        // tokens) that would inflate the first prompt's TTFT ratio.
        LAZYLLM_ASSIGN_OR_RETURN(PreparedPrompt pp, prepare_prompt(engine, samples[0]));
        LAZYLLM_TRY(full_engine.generate(pp.ids, greedy_run_options(PruneOptions{}, 2)));
        for (const PolicyRun* p : policies) {
            LAZYLLM_TRY(engine.generate(pp.ids, greedy_run_options(p->prune, 2)));
        }
    }
    Timer timer;
    for (size_t i = 0; i < samples.size(); ++i) {
        LAZYLLM_ASSIGN_OR_RETURN(PreparedPrompt pp, prepare_prompt(engine, samples[i]));
        total_tokens += static_cast<double>(pp.ids.size());
        // One generation per policy gives its first-token logits, TTFT and greedy answer (a
        // single token where this prompt is not checked greedily).
        const bool greedy =
            opts.greedy_tokens > 0 && i % static_cast<size_t>(opts.greedy_every) == 0;
        const int n_gen = greedy ? opts.greedy_tokens : 1;
        LAZYLLM_ASSIGN_OR_RETURN(
            GenerateResult full,
            full_engine.generate(pp.ids, greedy_run_options(PruneOptions{}, n_gen)));
        for (size_t k = 0; k < policies.size(); ++k) {
            LAZYLLM_ASSIGN_OR_RETURN(
                GenerateResult g,
                engine.generate(pp.ids, greedy_run_options(policies[k]->prune, n_gen)));
            schedules[k] = g.schedule;
            measures[k].push_back(compare(full, g, samples[i], greedy, opts.greedy_tokens));
        }
        const double elapsed = timer.elapsed_ms() / 1000.0;
        log(
            fmt::format("fidelity: {}/{} prompts, {} elapsed, ETA {} | {} {} d={:.2f}: top-1 {}, "
                        "KL {:.4f}, gap {:.3f}{}",
                        i + 1, samples.size(), format_duration(elapsed),
                        format_duration(elapsed / static_cast<double>(i + 1) *
                                        static_cast<double>(samples.size() - i - 1)),
                        samples[i].task, samples[i].target_tokens, samples[i].depth,
                        measures[0].back().top1 ? "same" : "differs", measures[0].back().kl,
                        measures[0].back().gap, measures[0].back().verified ? ", verified" : ""));
    }
    report.seconds = timer.elapsed_ms() / 1000.0;
    report.mean_prompt_tokens =
        samples.empty() ? 0.0 : total_tokens / static_cast<double>(samples.size());
    for (size_t k = 0; k < policies.size(); ++k) {
        report.rows.push_back(aggregate(policies[k]->name, schedules[k], 0, measures[k]));
        for (int64_t length : opts.lengths) {
            report.rows.push_back(aggregate(policies[k]->name, schedules[k], length, measures[k]));
        }
    }
    return report;
}

std::string fidelity_json(const FidelityReport& report) {
    nlohmann::json j;
    j["model"] = report.model;
    j["n_prompts"] = report.n_prompts;
    j["mean_prompt_tokens"] = report.mean_prompt_tokens;
    j["greedy_tokens"] = report.greedy_tokens;
    j["greedy_every"] = report.greedy_every;
    j["seconds"] = report.seconds;
    nlohmann::json rows = nlohmann::json::array();
    for (const FidelityRow& r : report.rows) {
        rows.push_back(
            {{"policy", r.policy},
             {"schedule", r.schedule},
             {"length", r.length == 0 ? nlohmann::json("all") : nlohmann::json(r.length)},
             {"n_prompts", r.n_prompts},
             {"top1_agreement", r.top1_agreement},
             {"top1_ci95", {r.top1_low, r.top1_high}},
             {"ttft_speedup", r.ttft_speedup},
             {"kl_mean", r.kl_mean},
             {"kl_median", r.kl_median},
             {"kl_p90", r.kl_p90},
             {"kl_max", r.kl_max},
             {"n_greedy", r.n_greedy},
             {"greedy_prefix_agreement", r.greedy_prefix},
             {"greedy_exact_match", r.greedy_exact},
             {"greedy_exact_match_32", r.greedy_exact32},
             {"greedy_exact_32_ci95", {r.exact32_low, r.exact32_high}},
             {"prefill_pct_computed", r.pct_computed},
             {"verified_fraction", r.verified}});
    }
    j["rows"] = rows;
    return j.dump(2) + "\n";
}

std::string fidelity_table(const FidelityReport& report) {
    std::string t = fmt::format(
        "fidelity vs full: {} prompts (mean {:.0f} tokens), greedy agreement over {} tokens on {} "
        "of them, {:.0f} s\n\n",
        report.n_prompts, report.mean_prompt_tokens, report.greedy_tokens,
        report.rows.empty() ? 0 : report.rows.front().n_greedy, report.seconds);
    t += fmt::format(
        "{:<10} {:>6} {:>5} {:>7} {:>13} {:>8} {:>8} {:>8} {:>8} {:>8} {:>13} {:>8} {:>9} {:>9} "
        "{:>7}\n",
        "policy", "length", "n", "top-1", "top-1 95%", "KL mean", "KL p90", "KL max", "greedy",
        "exact32", "exact32 95%", "exact", "%computed", "verified", "TTFT x");
    auto pct = [](bool have, double v) { return have ? fmt::format("{:.1f}%", 100.0 * v) : "-"; };
    auto ci = [](bool have, double lo, double hi) {
        return have ? fmt::format("{:.0f}-{:.0f}%", 100.0 * lo, 100.0 * hi) : "-";
    };
    for (const FidelityRow& r : report.rows) {
        const bool g = r.n_greedy > 0;
        t += fmt::format(
            "{:<10} {:>6} {:>5} {:>6.1f}% {:>13} {:>8.4f} {:>8.4f} {:>8.4f} {:>8} {:>8} {:>13} "
            "{:>8} {:>8.1f}% {:>8.1f}% {:>6.2f}x\n",
            r.policy, r.length == 0 ? std::string("all") : std::to_string(r.length), r.n_prompts,
            100.0 * r.top1_agreement, ci(true, r.top1_low, r.top1_high), r.kl_mean, r.kl_p90,
            r.kl_max, pct(g, r.greedy_prefix), pct(g, r.greedy_exact32),
            ci(g, r.exact32_low, r.exact32_high), pct(g, r.greedy_exact), r.pct_computed,
            100.0 * r.verified, r.ttft_speedup);
    }
    for (const FidelityRow& r : report.rows) {
        if (r.length == 0 && !r.schedule.empty())
            t += fmt::format("\n{}: {}", r.policy, r.schedule);
    }
    return t + "\n";
}

}  // namespace lazyllm::eval
