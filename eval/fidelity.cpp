#include "eval/fidelity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/timer.h"

namespace lazyllm::eval {

namespace {

struct Measure {
    int64_t length = 0;
    bool top1 = false;
    double kl = 0.0;
    double pct = 0.0;
    bool greedy = false;
    double prefix = 0.0;
    bool exact = false;
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
        if (m.greedy) {
            ++row.n_greedy;
            row.greedy_prefix += m.prefix;
            row.greedy_exact += m.exact ? 1.0 : 0.0;
        }
    }
    if (row.n_prompts > 0) {
        const auto n = static_cast<double>(row.n_prompts);
        row.top1_agreement /= n;
        row.pct_computed /= n;
        for (double k : kls) row.kl_mean += k / n;
        row.kl_median = quantile(kls, 0.5);
        row.kl_p90 = quantile(kls, 0.9);
        row.kl_max = *std::max_element(kls.begin(), kls.end());
    }
    if (row.n_greedy > 0) {
        row.greedy_prefix /= static_cast<double>(row.n_greedy);
        row.greedy_exact /= static_cast<double>(row.n_greedy);
    }
    return row;
}

RunOptions greedy_options(const PruneOptions& prune, int max_new_tokens) {
    RunOptions ro;
    ro.max_new_tokens = max_new_tokens;
    ro.prune = prune;
    ro.sampling.temperature = 0.0f;
    ro.sampling.seed = 1;
    return ro;
}

}  // namespace

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

Result<FidelityReport> run_fidelity(const Engine& engine, const FidelityOptions& opts) {
    std::vector<const PolicyRun*> policies;
    for (const PolicyRun& p : opts.policies) {
        if (p.name != "full") policies.push_back(&p);
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
    for (const PolicyRun* p : policies) {
        RunOptions ro;
        ro.prune = p->prune;
        if (auto st = engine.validate(ro); !st.ok()) {
            return make_error(st.error().code(), "policy {}: {}", p->name, st.error().message());
        }
    }
    auto log = [&opts](const std::string& s) {
        if (opts.log) opts.log(s);
    };
    SuiteSpec spec;
    spec.tasks = opts.tasks;
    spec.lengths = opts.lengths;
    spec.n_depths = opts.n_depths;
    spec.seed = opts.seed;
    spec.max_prompt_tokens = engine.summary().n_ctx_train - kContextHeadroom;
    LAZYLLM_ASSIGN_OR_RETURN(std::vector<Sample> samples, make_suite(spec, engine.tokenizer()));

    FidelityReport report;
    report.model = engine.summary().path;
    report.n_prompts = static_cast<int64_t>(samples.size());
    report.greedy_tokens = opts.greedy_tokens;
    report.greedy_every = opts.greedy_every;
    std::vector<std::vector<Measure>> measures(policies.size());
    std::vector<std::string> schedules(policies.size());
    const RunOptions full_ro = greedy_options(PruneOptions{}, 1);
    double total_tokens = 0.0;
    Timer timer;
    for (size_t i = 0; i < samples.size(); ++i) {
        LAZYLLM_ASSIGN_OR_RETURN(PreparedPrompt pp, prepare_prompt(engine, samples[i]));
        total_tokens += static_cast<double>(pp.ids.size());
        LAZYLLM_ASSIGN_OR_RETURN(std::vector<float> full,
                                 engine.first_token_logits(pp.ids, full_ro));
        const int full_top = argmax(full);
        const bool greedy =
            opts.greedy_tokens > 0 && i % static_cast<size_t>(opts.greedy_every) == 0;
        std::vector<TokenId> full_gen;
        if (greedy) {
            LAZYLLM_ASSIGN_OR_RETURN(
                GenerateResult g,
                engine.generate(pp.ids, greedy_options(PruneOptions{}, opts.greedy_tokens)));
            full_gen = std::move(g.tokens);
        }
        for (size_t k = 0; k < policies.size(); ++k) {
            const RunOptions ro = greedy_options(policies[k]->prune, 1);
            double fraction = 1.0;
            LAZYLLM_ASSIGN_OR_RETURN(std::vector<float> logits,
                                     engine.first_token_logits(pp.ids, ro, &fraction));
            Measure m;
            m.length = samples[i].target_tokens;
            m.top1 = argmax(logits) == full_top;
            m.kl = kl_divergence(full, logits);
            m.pct = 100.0 * fraction;
            if (greedy) {
                LAZYLLM_ASSIGN_OR_RETURN(
                    GenerateResult g, engine.generate(pp.ids, greedy_options(policies[k]->prune,
                                                                             opts.greedy_tokens)));
                schedules[k] = g.schedule;
                const int same = greedy_common_prefix(full_gen, g.tokens, opts.greedy_tokens);
                m.greedy = true;
                m.prefix = static_cast<double>(same) / opts.greedy_tokens;
                m.exact = same == opts.greedy_tokens;
            }
            measures[k].push_back(m);
        }
        const double elapsed = timer.elapsed_ms() / 1000.0;
        log(
            fmt::format("fidelity: {}/{} prompts, {} elapsed, ETA {} | {} {} d={:.2f}: top-1 {}, "
                        "KL {:.4f}",
                        i + 1, samples.size(), format_duration(elapsed),
                        format_duration(elapsed / static_cast<double>(i + 1) *
                                        static_cast<double>(samples.size() - i - 1)),
                        samples[i].task, samples[i].target_tokens, samples[i].depth,
                        measures[0].back().top1 ? "same" : "differs", measures[0].back().kl));
    }
    report.seconds = timer.elapsed_ms() / 1000.0;
    report.mean_prompt_tokens =
        samples.empty() ? 0.0 : total_tokens / static_cast<double>(samples.size());
    for (size_t k = 0; k < policies.size(); ++k) {
        if (schedules[k].empty()) {
            // No greedy run recorded the schedule string: ask the engine once, on a tiny prompt.
            const TokenId one = engine.tokenizer().bos().value_or(0);
            auto g = engine.generate(std::span<const TokenId>(&one, 1),
                                     greedy_options(policies[k]->prune, 1));
            if (g.ok()) schedules[k] = g->schedule;
        }
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
             {"kl_mean", r.kl_mean},
             {"kl_median", r.kl_median},
             {"kl_p90", r.kl_p90},
             {"kl_max", r.kl_max},
             {"n_greedy", r.n_greedy},
             {"greedy_prefix_agreement", r.greedy_prefix},
             {"greedy_exact_match", r.greedy_exact},
             {"prefill_pct_computed", r.pct_computed}});
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
    t += fmt::format("{:<10} {:>6} {:>5} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9}\n",
                     "policy", "length", "n", "top-1", "KL mean", "KL med", "KL p90", "KL max",
                     "greedy", "exact", "%computed");
    auto pct = [](bool have, double v) { return have ? fmt::format("{:.1f}%", 100.0 * v) : "-"; };
    for (const FidelityRow& r : report.rows) {
        t += fmt::format(
            "{:<10} {:>6} {:>5} {:>6.1f}% {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f} "
            "{:>8} {:>8} {:>8.1f}%\n",
            r.policy, r.length == 0 ? std::string("all") : std::to_string(r.length), r.n_prompts,
            100.0 * r.top1_agreement, r.kl_mean, r.kl_median, r.kl_p90, r.kl_max,
            pct(r.n_greedy > 0, r.greedy_prefix), pct(r.n_greedy > 0, r.greedy_exact),
            r.pct_computed);
    }
    for (const FidelityRow& r : report.rows) {
        if (r.length == 0 && !r.schedule.empty())
            t += fmt::format("\n{}: {}", r.policy, r.schedule);
    }
    return t + "\n";
}

}  // namespace lazyllm::eval
