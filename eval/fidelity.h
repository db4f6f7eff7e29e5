// Fidelity of a pruning policy to full prefill (design.md section 4: the cheap check for every
// change): over a fixed set of long built-in prompts, first-token top-1 agreement, KL(full ||
// policy) of the first-token distribution, and greedy agreement over the first N tokens.
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

struct FidelityOptions {
    std::vector<std::string> tasks = default_tasks();
    std::vector<int64_t> lengths = {1024, 2048};
    int n_depths = 9;                 // 6 tasks x 2 lengths x 9 depths = 108 prompts
    uint64_t seed = 2000000;          // fixed: the same prompts on every run
    std::vector<PolicyRun> policies;  // compared with full (a "full" entry is ignored)
    int greedy_tokens = 32;
    int greedy_every = 6;  // greedy agreement on every 6th prompt (decode is costly)
    std::function<void(std::string_view)> log;
};

struct FidelityRow {
    std::string policy;
    std::string schedule;
    int64_t length = 0;  // 0: all lengths
    int64_t n_prompts = 0;
    double top1_agreement = 0.0;
    double kl_mean = 0.0, kl_median = 0.0, kl_p90 = 0.0, kl_max = 0.0;
    int64_t n_greedy = 0;
    double greedy_prefix = 0.0;  // mean fraction of the first N positions equal before divergence
    double greedy_exact = 0.0;   // fraction of prompts whose first N tokens all agree
    double pct_computed = 0.0;   // mean % of prompt token-layers computed in prefill
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

Result<FidelityReport> run_fidelity(const Engine& engine, const FidelityOptions& opts);
std::string fidelity_json(const FidelityReport& report);
std::string fidelity_table(const FidelityReport& report);

}  // namespace lazyllm::eval
