// report.html: the summary tables and three inline SVG plots (accuracy vs TTFT speedup,
// retrieval accuracy by length and depth, rows kept per layer). No scripts, no network.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "eval/report.h"
#include "eval/svg_plot.h"

namespace lazyllm::eval {

namespace {

constexpr const char* kStyle = R"(
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px auto;
       max-width: 1080px; color: #222; line-height: 1.4; padding: 0 16px; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0 16px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
.note { color: #555; font-size: 13px; } .plots { display: flex; flex-wrap: wrap; gap: 12px; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
)";

std::string speedup_cell(double v) { return std::isfinite(v) ? fmt::format("{:.2f}x", v) : "-"; }

int policy_index(const Summary& s, const std::string& p) {
    auto it = std::find(s.policies.begin(), s.policies.end(), p);
    return static_cast<int>(it - s.policies.begin());
}

std::string policy_label(const Summary& s, const std::string& p) {
    return fmt::format("<span class=\"swatch\" style=\"background:{}\"></span>{}",
                       svg::policy_color(p, policy_index(s, p)), svg::escape(p));
}

std::string overall_table(const Summary& s) {
    std::string h =
        "<table><tr><th class=\"l\">policy</th><th>n</th><th>score</th>"
        "<th>TTFT speedup</th><th>% computed</th><th>TTFT ms</th></tr>\n";
    for (const SummaryRow& r : s.overall) {
        h += fmt::format(
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.3f}</td><td>{}</td>"
            "<td>{:.1f}</td><td>{:.1f}</td></tr>\n",
            policy_label(s, r.policy), r.n, r.mean_score, speedup_cell(r.mean_speedup),
            r.mean_pct_computed, r.mean_ttft_ms);
    }
    return h + "</table>\n";
}

std::string detail_table(const Summary& s) {
    std::string h =
        "<table><tr><th class=\"l\">task</th><th>length</th><th class=\"l\">policy"
        "</th><th>n</th><th>score</th><th>TTFT speedup</th><th>% computed</th>"
        "<th>TTFT ms</th></tr>\n";
    for (const SummaryRow& r : s.rows) {
        h += fmt::format(
            "<tr><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td>"
            "<td>{}</td><td style=\"background:{}\">{:.3f}</td><td>{}</td>"
            "<td>{:.1f}</td><td>{:.1f}</td></tr>\n",
            svg::escape(r.task), r.length, policy_label(s, r.policy), r.n,
            svg::score_color(r.mean_score), r.mean_score, speedup_cell(r.mean_speedup),
            r.mean_pct_computed, r.mean_ttft_ms);
    }
    return h + "</table>\n";
}

// Plot 1: one small point per (policy, task), one large labelled diamond per policy overall.
std::string accuracy_vs_speedup(const Summary& s, std::span<const SampleRecord> recs,
                                const std::vector<double>& speedups) {
    std::map<std::pair<std::string, std::string>, std::tuple<double, double, int, int>> acc;
    for (size_t i = 0; i < recs.size(); ++i) {
        auto& [score, sp, n, n_sp] = acc[{recs[i].policy, recs[i].task}];
        score += recs[i].score;
        ++n;
        if (std::isfinite(speedups[i])) sp += speedups[i], ++n_sp;
    }
    svg::Plot plot;
    plot.title = "Accuracy vs TTFT speedup (small: per task, large: overall)";
    plot.x.label = "TTFT speedup over full (x)";
    plot.y.label = "mean score";
    plot.y.min = 0.0;
    plot.y.max = 1.0;
    plot.x_refs = {1.0};
    for (const std::string& p : s.policies) {
        svg::Series tasks;
        tasks.color = svg::policy_color(p, policy_index(s, p));
        tasks.line = false;
        tasks.marker_r = 3.0;
        for (const std::string& t : s.tasks) {
            auto it = acc.find({p, t});
            if (it == acc.end() || std::get<3>(it->second) == 0) continue;
            const auto& [score, sp, n, n_sp] = it->second;
            tasks.x.push_back(sp / n_sp);
            tasks.y.push_back(score / n);
            tasks.tips.push_back(
                fmt::format("{} {}: score {:.3f}, {:.2f}x", p, t, score / n, sp / n_sp));
        }
        plot.series.push_back(std::move(tasks));
    }
    for (const SummaryRow& r : s.overall) {
        if (!std::isfinite(r.mean_speedup)) continue;
        svg::Series all;
        all.name = r.policy;
        all.color = svg::policy_color(r.policy, policy_index(s, r.policy));
        all.line = false;
        all.diamond = true;
        all.marker_r = 7.0;
        all.label_points = true;
        all.x = {r.mean_speedup};
        all.y = {r.mean_score};
        all.tips = {fmt::format("{} {:.2f}x", r.policy, r.mean_speedup)};
        plot.series.push_back(std::move(all));
    }
    return svg::render(plot);
}

// Plot 2: retrieval tasks (records with a depth) by length and by depth, plus per-policy heat
// maps of depth x length.
std::string retrieval_section(const Summary& s, std::span<const SampleRecord> recs) {
    std::map<std::tuple<std::string, int64_t>, std::pair<double, int>> by_len;
    std::map<std::tuple<std::string, int64_t>, std::pair<double, int>> by_depth;  // depth x 1000
    std::map<std::tuple<std::string, int64_t, int64_t>, std::pair<double, int>> cell;
    std::set<int64_t> lengths, depths;
    for (const SampleRecord& r : recs) {
        if (r.depth < 0.0) continue;
        const auto d = static_cast<int64_t>(std::llround(r.depth * 1000.0));
        auto add = [&r](std::pair<double, int>& a) { a.first += r.score, ++a.second; };
        add(by_len[{r.policy, r.length}]);
        add(by_depth[{r.policy, d}]);
        add(cell[{r.policy, d, r.length}]);
        lengths.insert(r.length);
        depths.insert(d);
    }
    if (lengths.empty())
        return "<p class=\"note\">No retrieval samples (with a needle depth).</p>\n";
    const std::vector<int64_t> lens(lengths.begin(), lengths.end());
    svg::Plot pl, pd;
    pl.title = "Retrieval accuracy by length";
    pl.x.label = "prompt length (tokens)";
    for (int64_t l : lens) pl.x.categories.push_back(std::to_string(l));
    pd.title = "Retrieval accuracy by needle depth";
    pd.x.label = "depth (0 = start of the context)";
    pd.x.min = 0.0;
    pd.x.max = 1.0;
    for (svg::Plot* p : {&pl, &pd}) {
        p->y.label = "mean score";
        p->y.min = 0.0;
        p->y.max = 1.0;
        p->width = 520;
    }
    for (const std::string& p : s.policies) {
        svg::Series sl, sd;
        sl.name = sd.name = p;
        sl.color = sd.color = svg::policy_color(p, policy_index(s, p));
        for (size_t i = 0; i < lens.size(); ++i) {
            auto it = by_len.find({p, lens[i]});
            if (it == by_len.end()) continue;
            sl.x.push_back(static_cast<double>(i));
            sl.y.push_back(it->second.first / it->second.second);
        }
        for (int64_t d : depths) {
            auto it = by_depth.find({p, d});
            if (it == by_depth.end()) continue;
            sd.x.push_back(static_cast<double>(d) / 1000.0);
            sd.y.push_back(it->second.first / it->second.second);
        }
        if (!sl.x.empty()) pl.series.push_back(std::move(sl));
        if (!sd.x.empty()) pd.series.push_back(std::move(sd));
    }
    std::string h = "<div class=\"plots\">" + svg::render(pl) + svg::render(pd) + "</div>\n";
    h += "<p class=\"note\">Mean score per needle depth (rows) and length (columns), per "
         "policy.</p>\n<div class=\"plots\">\n";
    for (const std::string& p : s.policies) {
        h += fmt::format("<table><tr><th class=\"l\">{}</th>", policy_label(s, p));
        for (int64_t l : lens) h += fmt::format("<th>{}</th>", l);
        h += "</tr>\n";
        for (int64_t d : depths) {
            h += fmt::format("<tr><th class=\"l\">{:.2f}</th>", static_cast<double>(d) / 1000.0);
            for (int64_t l : lens) {
                auto it = cell.find({p, d, l});
                if (it == cell.end()) {
                    h += "<td></td>";
                    continue;
                }
                const double v = it->second.first / it->second.second;
                h += fmt::format("<td style=\"background:{}\">{:.2f}</td>", svg::score_color(v), v);
            }
            h += "</tr>\n";
        }
        h += "</table>\n";
    }
    return h + "</div>\n";
}

// Plot 3: mean fraction of the prompt's rows each layer computed in prefill.
std::string rows_per_layer(const Summary& s, std::span<const SampleRecord> recs) {
    svg::Plot plot;
    plot.title = "Prompt rows computed per layer in prefill (mean fraction of the prompt)";
    plot.x.label = "layer";
    plot.y.label = "rows / prompt tokens";
    plot.y.min = 0.0;
    plot.width = 760;
    for (const std::string& p : s.policies) {
        std::vector<double> sum;
        int n = 0;
        for (const SampleRecord& r : recs) {
            if (r.policy != p || r.n_prompt <= 0 || r.prefill_rows_per_layer.empty()) continue;
            if (sum.size() < r.prefill_rows_per_layer.size()) {
                sum.resize(r.prefill_rows_per_layer.size(), 0.0);
            }
            for (size_t l = 0; l < r.prefill_rows_per_layer.size(); ++l) {
                sum[l] += static_cast<double>(r.prefill_rows_per_layer[l]) /
                          static_cast<double>(r.n_prompt);
            }
            ++n;
        }
        if (n == 0) continue;
        svg::Series ser;
        ser.name = p;
        ser.color = svg::policy_color(p, policy_index(s, p));
        ser.marker_r = 2.5;
        for (size_t l = 0; l < sum.size(); ++l) {
            ser.x.push_back(static_cast<double>(l));
            ser.y.push_back(sum[l] / n);
            ser.tips.push_back(fmt::format("{} layer {}: {:.3f}", p, l, sum[l] / n));
        }
        plot.series.push_back(std::move(ser));
    }
    if (plot.series.empty()) return "<p class=\"note\">No per-layer row counts recorded.</p>\n";
    // GemFilter runs its first layers twice (selection pass, then the kept rows): above 1.
    double top = 1.0;
    for (const svg::Series& ser : plot.series) {
        for (double y : ser.y) top = std::max(top, y);
    }
    plot.y.max = top;
    return svg::render(plot);
}

}  // namespace

std::string report_html(std::span<const SampleRecord> records, const Summary& summary,
                        const ReportInfo& info) {
    std::vector<SampleRecord> recs;
    std::set<std::tuple<std::string, std::string, std::string>> seen;
    for (const SampleRecord& r : records) {
        if (seen.insert({r.task, r.id, r.policy}).second) recs.push_back(r);
    }
    const std::vector<double> speedups = ttft_speedups(recs);

    std::string h = fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>{0}</title>\n<style>{1}</style></head><body>\n"
        "<h1>{0}</h1>\n",
        svg::escape(info.title), kStyle);
    if (!info.run.empty()) {
        h += "<table>";
        for (const auto& [k, v] : info.run) {
            h += fmt::format("<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
                             svg::escape(k), svg::escape(v));
        }
        h += "</table>\n";
    }
    h += fmt::format(
        "<p class=\"note\">{} records, {} tasks, lengths {}. Score: mean over samples "
        "in [0, 1]. TTFT speedup: mean over samples of full's TTFT divided by the "
        "policy's on the same sample. % computed: prompt token-layers computed by the "
        "end of generation (paper Table 2).</p>\n",
        recs.size(), summary.tasks.size(), fmt::join(summary.lengths, ", "));
    h += "<h2>Overall</h2>\n" + overall_table(summary);
    h += "<h2>Accuracy vs TTFT speedup</h2>\n" + accuracy_vs_speedup(summary, recs, speedups);
    h += "<h2>Retrieval by length and depth</h2>\n" + retrieval_section(summary, recs);
    h += "<h2>Rows kept per layer</h2>\n" + rows_per_layer(summary, recs);
    h += "<h2>By task, length and policy</h2>\n" + detail_table(summary);
    h += "</body></html>\n";
    return h;
}

}  // namespace lazyllm::eval
