#include "eval/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "eval/stats.h"

namespace lazyllm::eval {

namespace {

struct Acc {
    int64_t n = 0, n_speedup = 0, n_better = 0, n_worse = 0;
    double score = 0.0, speedup = 0.0, pct = 0.0, ttft = 0.0;
    // full_score: full's score on the same sample (NaN without one).
    void add(const SampleRecord& r, double sp, double full_score) {
        ++n;
        if (std::isfinite(full_score) && r.policy != "full") {
            n_better += r.score > full_score ? 1 : 0;
            n_worse += r.score < full_score ? 1 : 0;
        }
        score += r.score;
        pct += r.pct_computed;
        ttft += r.ttft_ms;
        if (std::isfinite(sp)) {
            ++n_speedup;
            speedup += sp;
        }
    }
    SummaryRow row(std::string task, int64_t length, std::string policy) const {
        SummaryRow s;
        s.task = std::move(task);
        s.length = length;
        s.policy = std::move(policy);
        s.n = n;
        s.mean_score = n ? score / n : 0.0;
        s.mean_pct_computed = n ? pct / n : 0.0;
        s.mean_ttft_ms = n ? ttft / n : 0.0;
        s.n_speedup = n_speedup;
        s.mean_speedup = n_speedup ? speedup / n_speedup : std::numeric_limits<double>::quiet_NaN();
        s.n_better = n_better;
        s.n_worse = n_worse;
        s.sign_p = sign_test_p(n_better, n_worse);
        return s;
    }
};

std::string fmt_speedup(double v) { return std::isfinite(v) ? fmt::format("{:.2f}x", v) : "-"; }

// "+3 / -1, p 0.62" (samples better / worse than full's, sign test); "-" for full itself.
std::string fmt_paired(const SummaryRow& r) {
    if (r.policy == "full" || r.n_speedup == 0) return "-";  // no full record to pair with
    return fmt::format("+{} / -{}, p {:.2g}", r.n_better, r.n_worse, r.sign_p);
}

Status write_file(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) return make_error(ErrorCode::kIo, "cannot write '{}'", tmp);
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    std::fclose(f);
    std::error_code ec;
    if (ok) std::filesystem::rename(tmp, path, ec);
    if (!ok || ec) return make_error(ErrorCode::kIo, "cannot write '{}'", path);
    return {};
}

// CSV field quoting (RFC 4180): quote when the field holds a comma, quote or newline.
std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

}  // namespace

std::vector<double> ttft_speedups(std::span<const SampleRecord> records) {
    std::map<std::pair<std::string, std::string>, double> full;
    for (const SampleRecord& r : records) {
        if (r.policy == "full" && r.ttft_ms > 0.0) full.emplace(std::pair(r.task, r.id), r.ttft_ms);
    }
    std::vector<double> out;
    out.reserve(records.size());
    for (const SampleRecord& r : records) {
        auto it = full.find({r.task, r.id});
        out.push_back(it != full.end() && r.ttft_ms > 0.0
                          ? it->second / r.ttft_ms
                          : std::numeric_limits<double>::quiet_NaN());
    }
    return out;
}

Summary summarize(std::span<const SampleRecord> records) {
    // First occurrence of each (task, id, policy) only.
    std::vector<SampleRecord> unique;
    std::set<std::tuple<std::string, std::string, std::string>> seen;
    for (const SampleRecord& r : records) {
        if (seen.insert({r.task, r.id, r.policy}).second) unique.push_back(r);
    }
    const std::vector<double> speedups = ttft_speedups(unique);

    Summary s;
    std::set<int64_t> lengths;
    for (const SampleRecord& r : unique) {
        if (std::find(s.tasks.begin(), s.tasks.end(), r.task) == s.tasks.end()) {
            s.tasks.push_back(r.task);
        }
        if (std::find(s.policies.begin(), s.policies.end(), r.policy) == s.policies.end()) {
            s.policies.push_back(r.policy);
        }
        lengths.insert(r.length);
    }
    auto full_it = std::find(s.policies.begin(), s.policies.end(), "full");
    if (full_it != s.policies.end()) std::rotate(s.policies.begin(), full_it, full_it + 1);
    s.lengths.assign(lengths.begin(), lengths.end());

    std::map<std::pair<std::string, std::string>, double> full_scores;
    for (const SampleRecord& r : unique) {
        if (r.policy == "full") full_scores.emplace(std::pair(r.task, r.id), r.score);
    }
    std::map<std::tuple<std::string, int64_t, std::string>, Acc> cells;
    std::map<std::string, Acc> overall;
    for (size_t i = 0; i < unique.size(); ++i) {
        const SampleRecord& r = unique[i];
        auto f = full_scores.find({r.task, r.id});
        const double full = f != full_scores.end() ? f->second
                                                   : std::numeric_limits<double>::quiet_NaN();
        cells[{r.task, r.length, r.policy}].add(r, speedups[i], full);
        overall[r.policy].add(r, speedups[i], full);
    }
    for (const std::string& task : s.tasks) {
        for (int64_t length : s.lengths) {
            for (const std::string& policy : s.policies) {
                auto it = cells.find({task, length, policy});
                if (it != cells.end()) s.rows.push_back(it->second.row(task, length, policy));
            }
        }
    }
    for (const std::string& policy : s.policies) {
        s.overall.push_back(overall[policy].row("all", 0, policy));
    }
    return s;
}

Result<ReportInfo> read_run_info(const std::string& out_dir) {
    ReportInfo info;
    const std::string path = out_dir + "/run.json";
    std::ifstream in(path, std::ios::binary);
    if (!in) return info;
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
        return make_error(ErrorCode::kCorrupt, "'{}' is not a JSON object", path);
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
        std::string value;
        if (it->is_string()) {
            value = it->get<std::string>();
        } else if (it->is_array()) {
            for (const auto& v : *it) {
                if (!value.empty()) value += ", ";
                value += v.is_string() ? v.get<std::string>() : v.dump();
            }
        } else {
            value = it->dump();
        }
        info.run.emplace_back(it.key(), value);
    }
    return info;
}

std::string summary_markdown(const Summary& summary, const ReportInfo& info) {
    std::string md = fmt::format("# {}\n\n", info.title);
    for (const auto& [k, v] : info.run) md += fmt::format("- {}: {}\n", k, v);
    if (!info.run.empty()) md += "\n";
    md +=
        "Score: mean over samples, in [0, 1]. TTFT speedup: mean over samples of full's TTFT "
        "over the policy's on the same sample. % computed: prompt token-layers computed by the "
        "end of generation. vs full: samples scored higher / lower than full's on the same "
        "sample, and the two-sided sign test's p.\n\n## Overall\n\n"
        "| policy | n | score | TTFT speedup | % computed | TTFT ms | vs full |\n"
        "|---|---:|---:|---:|---:|---:|---:|\n";
    for (const SummaryRow& r : summary.overall) {
        md += fmt::format("| {} | {} | {:.3f} | {} | {:.1f} | {:.1f} | {} |\n", r.policy, r.n,
                          r.mean_score, fmt_speedup(r.mean_speedup), r.mean_pct_computed,
                          r.mean_ttft_ms, fmt_paired(r));
    }
    // Compact pivot: one line per (task, length), one column per policy.
    md += "\n## Score (TTFT speedup) by task and length\n\n| task | length |";
    for (const std::string& p : summary.policies) md += fmt::format(" {} |", p);
    md += "\n|---|---:|";
    for (size_t i = 0; i < summary.policies.size(); ++i) md += "---:|";
    md += "\n";
    for (const std::string& task : summary.tasks) {
        for (int64_t length : summary.lengths) {
            std::string line = fmt::format("| {} | {} |", task, length);
            bool any = false;
            for (const std::string& p : summary.policies) {
                auto it = std::find_if(
                    summary.rows.begin(), summary.rows.end(), [&](const SummaryRow& r) {
                        return r.task == task && r.length == length && r.policy == p;
                    });
                if (it == summary.rows.end()) {
                    line += " - |";
                    continue;
                }
                any = true;
                line +=
                    fmt::format(" {:.3f} ({}) |", it->mean_score, fmt_speedup(it->mean_speedup));
            }
            if (any) md += line + "\n";
        }
    }
    md +=
        "\n## By task, length and policy\n\n"
        "| task | length | policy | n | score | TTFT speedup | % computed | TTFT ms | vs full |\n"
        "|---|---:|---|---:|---:|---:|---:|---:|---:|\n";
    for (const SummaryRow& r : summary.rows) {
        md += fmt::format("| {} | {} | {} | {} | {:.3f} | {} | {:.1f} | {:.1f} | {} |\n", r.task,
                          r.length, r.policy, r.n, r.mean_score, fmt_speedup(r.mean_speedup),
                          r.mean_pct_computed, r.mean_ttft_ms, fmt_paired(r));
    }
    return md;
}

std::string summary_csv(const Summary& summary) {
    std::string csv =
        "task,length,policy,n,mean_score,mean_ttft_speedup,n_speedup,mean_pct_computed,"
        "mean_ttft_ms,n_better,n_worse,sign_p\n";
    auto line = [&csv](const SummaryRow& r, const std::string& length) {
        // The paired columns are empty where summary.md shows "-": no full record to pair with.
        const bool paired = r.policy != "full" && r.n_speedup > 0;
        csv += fmt::format(
            "{},{},{},{},{:.6f},{},{},{:.4f},{:.3f},{}\n", csv_field(r.task), length,
            csv_field(r.policy), r.n, r.mean_score,
            std::isfinite(r.mean_speedup) ? fmt::format("{:.6f}", r.mean_speedup) : "", r.n_speedup,
            r.mean_pct_computed, r.mean_ttft_ms,
            paired ? fmt::format("{},{},{:.4g}", r.n_better, r.n_worse, r.sign_p) : ",,");
    };
    for (const SummaryRow& r : summary.rows) line(r, std::to_string(r.length));
    for (const SummaryRow& r : summary.overall) line(r, "all");
    return csv;
}

Result<Summary> write_reports(const std::string& out_dir,
                              const std::function<void(std::string_view)>& log) {
    const std::string path = out_dir + "/samples.jsonl";
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
        return make_error(ErrorCode::kNotFound, "no results: '{}' does not exist", path);
    }
    LAZYLLM_ASSIGN_OR_RETURN(RecordFile file, read_records(path));
    for (const std::string& w : file.warnings) {
        if (log) log(w);
    }
    LAZYLLM_ASSIGN_OR_RETURN(ReportInfo info, read_run_info(out_dir));
    for (const auto& [k, v] : info.run) {
        if (k == "model_name" && !v.empty()) info.title = "lazyllm eval: " + v;
    }
    const Summary summary = summarize(file.records);
    LAZYLLM_TRY(write_file(out_dir + "/summary.md", summary_markdown(summary, info)));
    LAZYLLM_TRY(write_file(out_dir + "/summary.csv", summary_csv(summary)));
    LAZYLLM_TRY(write_file(out_dir + "/report.html", report_html(file.records, summary, info)));
    return summary;
}

}  // namespace lazyllm::eval
