// Prometheus metrics of `lazyllm serve` (GET /metrics, text exposition format 0.0.4): requests
// by endpoint and status, prompt / generated / cached tokens, a TTFT histogram, the share of
// prompt (token, layer) pairs computed, revivals, queue depth and busy slots.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "lazyllm/conversation.h"

namespace lazyllm::server {

class Metrics {
public:
    // Upper bounds of the TTFT histogram's buckets, in seconds (+Inf is added).
    static constexpr std::array<double, 10> kTtftBuckets = {0.01, 0.025, 0.05, 0.1, 0.25,
                                                            0.5,  1.0,   2.5,  5.0, 10.0};

    void request(std::string_view endpoint, int status);
    void turn(const TurnStats& s);
    std::string render(int queue_depth, int busy_slots, int n_slots) const;

private:
    mutable std::mutex mu_;
    std::map<std::pair<std::string, int>, uint64_t> requests_;
    uint64_t turns_ = 0;
    uint64_t prompt_tokens_ = 0, cached_tokens_ = 0, computed_prompt_tokens_ = 0;
    uint64_t generated_tokens_ = 0, revivals_ = 0;
    double computed_token_layers_ = 0.0;  // sum over turns of suffix * fraction computed
    std::array<uint64_t, kTtftBuckets.size() + 1> ttft_counts_{};
    double ttft_sum_s_ = 0.0;
};

}  // namespace lazyllm::server
