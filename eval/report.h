// Aggregates samples.jsonl into the evaluation summary (design.md section 4: score, TTFT, TTFT
// speedup, % of prompt token-layers computed, per policy and length bucket) and writes it as
// summary.md, summary.csv and a self-contained report.html with inline SVG plots.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "eval/record.h"
#include "lazyllm/result.h"

namespace lazyllm::eval {

struct SummaryRow {
    std::string task;    // "all" in the overall rows
    int64_t length = 0;  // 0 in the overall rows
    std::string policy;
    int64_t n = 0;
    double mean_score = 0.0;
    // Mean over samples of full's TTFT / this policy's TTFT on the same sample; NaN when no
    // sample has a full record.
    double mean_speedup = std::numeric_limits<double>::quiet_NaN();
    int64_t n_speedup = 0;  // samples with a full record to compare with
    double mean_pct_computed = 0.0;
    double mean_ttft_ms = 0.0;
    // Paired with full's record of the same sample: samples where this policy scored higher /
    // lower, and the two-sided sign test's p-value (1 for full itself and without pairs).
    int64_t n_better = 0, n_worse = 0;
    double sign_p = 1.0;
};

struct Summary {
    std::vector<std::string> policies;  // full first, then in order of appearance
    std::vector<std::string> tasks;     // in order of appearance
    std::vector<int64_t> lengths;       // ascending
    std::vector<SummaryRow> rows;       // task x length x policy (cells with records only)
    std::vector<SummaryRow> overall;    // one per policy, pooled over every sample
};

// Per record: full's TTFT on the same (task, id) over this record's TTFT; NaN without a full
// record. full's own records give 1.
std::vector<double> ttft_speedups(std::span<const SampleRecord> records);
// Duplicated (task, id, policy) records count once (the first).
Summary summarize(std::span<const SampleRecord> records);

struct ReportInfo {
    std::string title = "lazyllm eval";
    std::vector<std::pair<std::string, std::string>> run;  // shown as a small table
};
// out_dir/run.json as written by the runner, flattened to strings; empty when absent.
Result<ReportInfo> read_run_info(const std::string& out_dir);

std::string summary_markdown(const Summary& summary, const ReportInfo& info);
std::string summary_csv(const Summary& summary);
std::string report_html(std::span<const SampleRecord> records, const Summary& summary,
                        const ReportInfo& info);

// Reads out_dir/samples.jsonl (and run.json) and writes summary.md, summary.csv and
// report.html there. Returns the summary (the CLI prints its markdown). Each line of
// samples.jsonl that does not parse is skipped and named through `log`.
Result<Summary> write_reports(const std::string& out_dir,
                              const std::function<void(std::string_view)>& log = {});

}  // namespace lazyllm::eval
