// Fidelity of a pruning policy to full prefill (design.md section 4: the cheap check for every
// change): over a fixed set of long built-in prompts, first-token top-1 agreement, KL(full ||
// policy) of the first-token distribution, and greedy agreement over the first N tokens, with
// 95% intervals.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "eval/runner.h"
#include "lazyllm/engine.h"

namespace lazyllm::eval {

// KL(p || q) in nats of the softmax distributions of two logit vectors, in double over the whole
// vocabulary. Zero iff the distributions are equal.
double kl_divergence(std::span<const float> logits_p, std::span<const float> logits_q);
// Index of the largest logit, ties to the lowest index (the greedy sampler's rule).
int argmax(std::span<const float> logits);
// Length of the common prefix of two greedy outputs over the first n positions, where an output
// that ended early is padded with end-of-sequence (so two outputs that stop at the same place
// agree on every later position).
int greedy_common_prefix(std::span<const TokenId> a, std::span<const TokenId> b, int n);

// The suite covers what users do: every built-in task (chat-wrapped, as an instruct model is
// used, but passkey, a plain-text format) at lengths from 128 to 8k tokens, 3 needle depths each:
// 18 prompts per length, each answered greedily for 64 tokens by full and by every policy. The
// first-token logits come from the same runs. A length too short for a task's template leaves that
// task out and takes more depths of the others, so every length keeps n_depths x |tasks| prompts or
// more.
struct FidelityOptions {
    std::vector<std::string> tasks = default_tasks();
    std::vector<int64_t> lengths = {128, 512, 1024, 2048, 4096, 8192};
    int n_depths = 3;                 // 6 tasks x 3 depths = 18 prompts per length
    uint64_t seed = 2000000;          // fixed: the same prompts on every run
    std::vector<PolicyRun> policies;  // compared with full (a "full" entry is ignored)
    int greedy_tokens = 64;
    int greedy_every = 1;  // greedy agreement on every k-th prompt
    int64_t limit = 0;     // only the first N prompts of each length; 0: all
    // Where full runs: the engine under test (nullptr), or another engine of the same model
    // file (other weights, e.g. copies against the GGUF's blocks); then "full" on the engine
    // under test is a policy like the others, measured against it.
    const Engine* reference = nullptr;
    std::function<void(std::string_view)> log;
};

struct FidelityRow {
    std::string policy;
    std::string schedule;
    int64_t length = 0;  // 0: all lengths
    int64_t n_prompts = 0;
    double top1_agreement = 0.0;
    double kl_mean = 0.0, kl_median = 0.0, kl_p90 = 0.0, kl_max = 0.0;
    double top1_low = 0.0, top1_high = 1.0;  // Wilson 95% interval of top1_agreement
    int64_t n_greedy = 0;
    double greedy_prefix = 0.0;  // mean fraction of the first N positions equal before divergence
    double greedy_exact = 0.0;   // fraction of prompts whose first N tokens all agree
    double greedy_exact32 = 0.0;  // same over the first min(32, N) tokens
    double exact32_low = 0.0, exact32_high = 1.0;  // Wilson 95% interval of greedy_exact32
    double pct_computed = 0.0;   // mean % of prompt token-layers computed in prefill
    // Fraction of prompts whose first token Schedule::verify_margin found a near tie and took
    // from full's logits (its repair counts in % computed and TTFT).
    double verified = 0.0;
    double ttft_speedup = 0.0;   // mean over prompts of full's TTFT / the policy's
};

struct FidelityReport {
    std::string model;
    int64_t n_prompts = 0;
    double mean_prompt_tokens = 0.0;
    int greedy_tokens = 0;
    int greedy_every = 1;
    std::vector<FidelityRow> rows;  // per policy: all lengths first, then each length
    double seconds = 0.0;
};

// The suite's prompts for opts' tasks, lengths, depths and seed (every task whose template fits
// a length, with enough depths that each length has at least n_depths x |tasks| prompts).
Result<std::vector<Sample>> fidelity_suite(const Engine& engine, const FidelityOptions& opts);
// Greedy generation of max_new_tokens under `prune`, keeping the first token's logits.
RunOptions greedy_run_options(const PruneOptions& prune, int max_new_tokens);

Result<FidelityReport> run_fidelity(const Engine& engine, const FidelityOptions& opts);
std::string fidelity_json(const FidelityReport& report);
std::string fidelity_table(const FidelityReport& report);

}  // namespace lazyllm::eval
