// Results of `lazyllm bench`: llama-bench-style rows (pp<N>: prompt processing, tg<n>: text
// generation after that prompt), their statistics, the FLOP count behind achieved GFLOP/s, and
// the markdown and jsonl printers (jsonl keeps llama-bench's field names).
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lazyllm/engine.h"

namespace lazyllm::cli {

// What every row shares.
struct BenchEnv {
    std::string build_commit;                // LAZYLLM_VERSION
    std::string cpu_info;                    // /proc/cpuinfo model name
    std::string test_time;                   // ISO 8601 UTC, start of the run
    std::string model_filename, model_type;  // model_type: "llama 135M Q4_1"
    uint64_t model_size = 0;                 // tensor bytes (llama-bench's model_size)
    uint64_t model_n_params = 0;             // elements of all tensors
    std::string prompt;                      // "passkey (built-in)" or the file it came from
};

struct BenchRow {
    bool is_prompt = true;  // pp row (prefill); false: tg row (decode)
    int engine = 0;         // the engine's (threads, --prefill-weights) index, in run order
    int n_threads = 0;
    std::string isa, gemm;
    double peak_gflops = 0.0;  // GEMM probe for these threads
    std::string policy, schedule;
    int64_t min_context = 0;  // the schedule's context floor (Schedule::min_context; 0: none)
    int64_t n_prompt = 0, n_gen = 0;
    int64_t n_depth = 0;               // tg rows: tokens already in the context (the prompt)
    std::vector<double> samples_ns;    // one per repetition: prefill time (pp), decode time (tg)
    std::vector<double> ttft_ms;       // pp rows
    std::vector<double> pct_computed;  // pp: prompt token-layers after prefill; tg: at the end
    std::vector<double> gflop;         // pp rows: useful GFLOP of each prefill
    double peak_rss_mib = 0.0;  // pp rows: the process's peak resident set over this row's runs
    std::optional<double> speedup_vs_full;  // pp rows: mean TTFT(full) / mean TTFT(this)
    // tg rows: per repetition, prompt in -> each of the n + 1 tokens (the first is TTFT's)
    std::vector<std::vector<double>> token_ms;
    // tg rows with a full row of the same engine and prompt: end-to-end latency ratios
    // full / this on the mean curves, for the first N tokens, at N = n + 1 and at the N in
    // [1, n + 1] where this row is furthest behind (or least ahead)
    std::optional<double> e2e_speedup;
    std::optional<double> e2e_speedup_min;
    int64_t e2e_speedup_min_n = 0;
    // With --profile, from one extra run: pp rows its prefill, tg rows its decode steps
    std::vector<OpTime> profile;

    int64_t n_tokens() const { return is_prompt ? n_prompt : n_gen; }
    // tg rows: mean over repetitions of prompt in -> token i (empty when no repetition has
    // every token)
    std::vector<double> mean_token_ms() const;
    std::string test_name() const;  // "pp512", "tg32 @ d512"
};

struct Stats {
    double mean = 0.0, stddev = 0.0;  // stddev over samples (n - 1); 0 for one sample
};
Stats stats(std::span<const double> v);

// Useful prefill work in GFLOP: per computed (token, layer) the linear layers (2 FLOPs per
// weight: QKV, output, gate/up, down), per layer causal attention (QK^T and PV, 2 * 2 *
// head_dim FLOPs per head per (query, key) pair), and the LM head on the last token. A layer
// runs QKV on its r rows but attention, Wo and the FFN on its r_t tail rows: all r, or the
// last row alone at the last layer (LayerRun::last_row_out), or the rows kept at the next
// boundary (LayerRun::cut). Attention pairs: r (r + 1) / 2 when every row runs, r for the last
// row alone, r + (r_t - 1) r / 2 in between; on a sliding-window layer (gemma3) each part
// scaled by the share of a dense prefill's pairs the window keeps (the rows taken as spread
// evenly over the prompt).
// `rows_per_layer`, `tail_rows_per_layer`: GenerateResult::prefill_rows_per_layer and
// prefill_tail_rows_per_layer; when they do not match the model, every layer is taken to
// compute fraction * n_prompt rows (the last layer: one tail row).
double prefill_gflop(const ModelSummary& s, int64_t n_prompt,
                     std::span<const int32_t> rows_per_layer,
                     std::span<const int32_t> tail_rows_per_layer, double fraction);

// speedup_vs_full of every pp row and the e2e ratios of every tg row that has a full row of
// the same kind with the same threads and prompt.
void fill_speedups(std::vector<BenchRow>& rows);

void print_markdown(std::FILE* out, const BenchEnv& env, const std::vector<BenchRow>& rows);
void print_jsonl(std::FILE* out, const BenchEnv& env, const std::vector<BenchRow>& rows);

}  // namespace lazyllm::cli
