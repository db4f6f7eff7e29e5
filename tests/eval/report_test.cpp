// Aggregation and report files from synthetic records whose means are worked out by hand.
#include "eval/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "eval/record.h"
#include "eval/svg_plot.h"

namespace lazyllm::eval {
namespace {

SampleRecord rec(std::string task, std::string id, int64_t length, std::string policy, double score,
                 double ttft, double pct, double depth = -1.0) {
    SampleRecord r;
    r.task = std::move(task);
    r.id = std::move(id);
    r.length = length;
    r.n_prompt = 100;
    r.policy = std::move(policy);
    r.score = score;
    r.ttft_ms = ttft;
    r.pct_computed = pct;
    r.depth = depth;
    r.prefill_rows_per_layer = r.policy == "full" ? std::vector<int32_t>{100, 100, 100, 100}
                                                  : std::vector<int32_t>{100, 100, 50, 25};
    return r;
}

// passkey@1024: a (full 1/100ms, lazy 1/50ms -> 2x), b (full 0/200ms, lazy 0.5/50ms -> 4x);
// mdqa@2048: c (full 1/300ms, lazy 0/100ms -> 3x); d: static only (no full: no speedup).
std::vector<SampleRecord> records() {
    return {
        rec("passkey", "a", 1024, "lazy", 1.0, 50.0, 60.0, 0.0),
        rec("passkey", "a", 1024, "full", 1.0, 100.0, 100.0, 0.0),
        rec("passkey", "b", 1024, "full", 0.0, 200.0, 100.0, 1.0),
        rec("passkey", "b", 1024, "lazy", 0.5, 50.0, 40.0, 1.0),
        rec("mdqa", "c", 2048, "full", 1.0, 300.0, 100.0),
        rec("mdqa", "c", 2048, "lazy", 0.0, 100.0, 30.0),
        rec("mdqa", "d", 2048, "static", 0.25, 80.0, 20.0),
        rec("passkey", "a", 1024, "lazy", 0.0, 999.0, 99.0, 0.0),  // duplicate: ignored
    };
}

const SummaryRow* find(const std::vector<SummaryRow>& rows, const std::string& task, int64_t length,
                       const std::string& policy) {
    for (const SummaryRow& r : rows) {
        if (r.task == task && r.length == length && r.policy == policy) return &r;
    }
    return nullptr;
}

TEST(ReportTest, SpeedupsPairWithFull) {
    const auto recs = records();
    const auto sp = ttft_speedups(recs);
    ASSERT_EQ(sp.size(), recs.size());
    EXPECT_DOUBLE_EQ(sp[0], 2.0);
    EXPECT_DOUBLE_EQ(sp[1], 1.0);
    EXPECT_DOUBLE_EQ(sp[3], 4.0);
    EXPECT_DOUBLE_EQ(sp[5], 3.0);
    EXPECT_TRUE(std::isnan(sp[6]));
}

TEST(ReportTest, SummaryMeans) {
    const Summary s = summarize(records());
    EXPECT_EQ(s.policies, (std::vector<std::string>{"full", "lazy", "static"}));
    EXPECT_EQ(s.tasks, (std::vector<std::string>{"passkey", "mdqa"}));
    EXPECT_EQ(s.lengths, (std::vector<int64_t>{1024, 2048}));
    ASSERT_EQ(s.rows.size(), 5u);

    const SummaryRow* lazy_pk = find(s.rows, "passkey", 1024, "lazy");
    ASSERT_NE(lazy_pk, nullptr);
    EXPECT_EQ(lazy_pk->n, 2);
    EXPECT_DOUBLE_EQ(lazy_pk->mean_score, 0.75);
    EXPECT_DOUBLE_EQ(lazy_pk->mean_speedup, 3.0);  // (2 + 4) / 2
    EXPECT_DOUBLE_EQ(lazy_pk->mean_pct_computed, 50.0);
    EXPECT_DOUBLE_EQ(lazy_pk->mean_ttft_ms, 50.0);

    const SummaryRow* full_pk = find(s.rows, "passkey", 1024, "full");
    ASSERT_NE(full_pk, nullptr);
    EXPECT_DOUBLE_EQ(full_pk->mean_score, 0.5);
    EXPECT_DOUBLE_EQ(full_pk->mean_speedup, 1.0);
    EXPECT_DOUBLE_EQ(full_pk->mean_ttft_ms, 150.0);

    const SummaryRow* stat = find(s.rows, "mdqa", 2048, "static");
    ASSERT_NE(stat, nullptr);
    EXPECT_EQ(stat->n_speedup, 0);
    EXPECT_TRUE(std::isnan(stat->mean_speedup));

    ASSERT_EQ(s.overall.size(), 3u);
    const SummaryRow& lazy = s.overall[1];
    EXPECT_EQ(lazy.policy, "lazy");
    EXPECT_EQ(lazy.task, "all");
    EXPECT_EQ(lazy.n, 3);
    EXPECT_DOUBLE_EQ(lazy.mean_score, 0.5);    // (1 + 0.5 + 0) / 3
    EXPECT_DOUBLE_EQ(lazy.mean_speedup, 3.0);  // (2 + 4 + 3) / 3
    // Paired with full: a tied, b better (0.5 > 0), c worse (0 < 1); sign test on 1 vs 1.
    EXPECT_EQ(lazy.n_better, 1);
    EXPECT_EQ(lazy.n_worse, 1);
    EXPECT_DOUBLE_EQ(lazy.sign_p, 1.0);
    EXPECT_EQ(lazy_pk->n_better, 1);
    EXPECT_EQ(lazy_pk->n_worse, 0);
    EXPECT_EQ(s.overall[0].n_better + s.overall[0].n_worse, 0);  // full against itself
    EXPECT_EQ(stat->n_better + stat->n_worse, 0);                // no full record to pair with
    EXPECT_NEAR(lazy.mean_pct_computed, 130.0 / 3.0, 1e-12);
    EXPECT_EQ(s.overall[0].n, 3);
    EXPECT_NEAR(s.overall[0].mean_score, 2.0 / 3.0, 1e-12);
}

TEST(ReportTest, MarkdownAndCsv) {
    const Summary s = summarize(records());
    ReportInfo info;
    info.run = {{"model", "tiny.gguf"}};
    const std::string md = summary_markdown(s, info);
    EXPECT_NE(md.find("| lazy | 3 | 0.500 | 3.00x | 43.3 |"), std::string::npos) << md;
    // static has no full record to pair with: no speedup and no sign test.
    EXPECT_NE(md.find("| static | 1 | 0.250 | - | 20.0 | 80.0 | - |"), std::string::npos) << md;
    EXPECT_NE(md.find("| passkey | 1024 | 0.500 (1.00x) | 0.750 (3.00x) | - |"), std::string::npos)
        << md;
    EXPECT_NE(md.find("model: tiny.gguf"), std::string::npos);

    const std::string csv = summary_csv(s);
    std::istringstream in(csv);
    std::string line;
    std::vector<std::vector<std::string>> rows;
    while (std::getline(in, line)) {
        std::vector<std::string> fields;
        std::stringstream ls(line);
        std::string f;
        while (std::getline(ls, f, ',')) fields.push_back(f);
        if (!line.empty() && line.back() == ',') fields.emplace_back();
        rows.push_back(fields);
    }
    ASSERT_EQ(rows.size(), 1u + 5u + 3u);
    for (const auto& r : rows) EXPECT_EQ(r.size(), 12u) << csv;
    EXPECT_EQ(rows[0][0], "task");
    const auto& lazy_all = rows[rows.size() - 2];
    EXPECT_EQ(lazy_all[0], "all");
    EXPECT_EQ(lazy_all[1], "all");
    EXPECT_EQ(lazy_all[2], "lazy");
    EXPECT_DOUBLE_EQ(std::stod(lazy_all[4]), 0.5);
    EXPECT_DOUBLE_EQ(std::stod(lazy_all[5]), 3.0);
    EXPECT_EQ(lazy_all[9], "1");   // better than full on one sample
    EXPECT_EQ(lazy_all[10], "1");  // worse on one
    EXPECT_EQ(lazy_all[11], "1");  // sign test p
    EXPECT_EQ(rows.back()[5], "");  // static: no speedup
    // No sign test for static (summary.md: "-"), nor for full against itself.
    for (int f : {9, 10, 11}) EXPECT_EQ(rows.back()[f], "") << f;
    EXPECT_EQ(rows[rows.size() - 3][11], "");
}

TEST(ReportTest, HtmlIsSelfContained) {
    const auto recs = records();
    const Summary s = summarize(recs);
    ReportInfo info;
    info.title = "eval <test>";
    const std::string html = report_html(recs, s, info);
    size_t n_svg = 0;
    for (size_t p = html.find("<svg"); p != std::string::npos; p = html.find("<svg", p + 1))
        ++n_svg;
    EXPECT_GE(n_svg, 4u);  // speedup scatter, by length, by depth, rows per layer
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_EQ(html.find("https://"), std::string::npos);
    EXPECT_NE(html.find("eval &lt;test&gt;"), std::string::npos);
    EXPECT_NE(html.find("Rows kept per layer"), std::string::npos);
    // Rows-per-layer plot: lazy's last layer keeps 25 of 100 prompt rows.
    EXPECT_NE(html.find("lazy layer 3: 0.250"), std::string::npos);
}

TEST(ReportTest, WriteReportsFromAFolder) {
    const std::string dir = ::testing::TempDir() + "lazyllm_report_test";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    EXPECT_FALSE(write_reports(dir).ok());  // no samples.jsonl yet
    {
        std::ofstream out(dir + "/samples.jsonl");
        for (const SampleRecord& r : records()) out << to_json_line(r) << "\n";
        std::ofstream run(dir + "/run.json");
        run << R"({"model": "m.gguf", "model_name": "Tiny", "policies": ["full", "lazy"]})";
    }
    auto s = write_reports(dir);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(s->overall.size(), 3u);
    std::ifstream md(dir + "/summary.md");
    std::stringstream ss;
    ss << md.rdbuf();
    EXPECT_EQ(ss.str().rfind("# lazyllm eval: Tiny", 0), 0u) << ss.str();
    EXPECT_NE(ss.str().find("policies: full, lazy"), std::string::npos);
    EXPECT_TRUE(std::filesystem::exists(dir + "/report.html"));
    EXPECT_TRUE(std::filesystem::exists(dir + "/summary.csv"));
    // A line cut short (a run killed mid-write) is skipped and named, not dropped in silence.
    std::ofstream(dir + "/samples.jsonl", std::ios::app) << R"({"answers":["1"],"id":"x)";
    std::vector<std::string> warnings;
    auto cut = write_reports(dir, [&](std::string_view w) { warnings.emplace_back(w); });
    ASSERT_TRUE(cut.ok()) << cut.error().message();
    EXPECT_EQ(cut->overall.size(), 3u);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(
        warnings[0].find("samples.jsonl:" + std::to_string(records().size() + 1) + ": skipped"),
        std::string::npos)
        << warnings[0];
}

TEST(SvgTest, NiceTicksAndEscape) {
    const auto t = svg::nice_ticks(0.0, 1.0, 5);
    ASSERT_EQ(t.size(), 6u);
    EXPECT_DOUBLE_EQ(t[1], 0.2);
    EXPECT_NEAR(t.back(), 1.0, 1e-12);
    const auto u = svg::nice_ticks(0.8, 3.1, 5);
    EXPECT_LE(u.front(), 0.8);
    EXPECT_GE(u.back(), 3.1 - 1e-9);
    EXPECT_EQ(svg::escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    svg::Plot p;
    p.title = "t";
    svg::Series s;
    s.name = "lazy";
    s.color = svg::policy_color("lazy", 1);
    s.x = {1.0, 2.0};
    s.y = {0.5, 0.75};
    p.series.push_back(s);
    const std::string out = svg::render(p);
    EXPECT_EQ(out.rfind("<svg", 0), 0u);
    EXPECT_NE(out.find("<polyline"), std::string::npos);
    EXPECT_NE(out.find("</svg>"), std::string::npos);
}

}  // namespace
}  // namespace lazyllm::eval
