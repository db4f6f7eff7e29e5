#include "server/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace lazyllm::server {

void Metrics::request(std::string_view endpoint, int status) {
    // Label values come from a fixed set: a request path nobody routed (a 401 for any path) must
    // neither grow the table nor write into the exposition text.
    constexpr std::string_view kEndpoints[] = {"/v1/chat/completions",
                                               "/chat/completions",
                                               "/v1/completions",
                                               "/completions",
                                               "/v1/models",
                                               "/v1/models/{id}",
                                               "/tokenize",
                                               "/detokenize",
                                               "/metrics",
                                               "/health",
                                               "/"};
    const bool known =
        std::find(std::begin(kEndpoints), std::end(kEndpoints), endpoint) != std::end(kEndpoints);
    std::lock_guard<std::mutex> lock(mu_);
    ++requests_[{std::string(known ? endpoint : "other"), status}];
}

void Metrics::turn(const TurnStats& s) {
    std::lock_guard<std::mutex> lock(mu_);
    ++turns_;
    prompt_tokens_ += static_cast<uint64_t>(s.n_prompt);
    cached_tokens_ += static_cast<uint64_t>(s.n_cached);
    const int64_t computed = s.n_prompt - s.n_cached;
    computed_prompt_tokens_ += static_cast<uint64_t>(computed);
    computed_token_layers_ += static_cast<double>(computed) * s.prefill_fraction_computed;
    generated_tokens_ += static_cast<uint64_t>(s.n_gen);
    revivals_ += static_cast<uint64_t>(s.revived);
    const double ttft_s = s.ttft_ms / 1000.0;
    size_t b = 0;
    while (b < kTtftBuckets.size() && ttft_s > kTtftBuckets[b]) ++b;
    ++ttft_counts_[b];
    ttft_sum_s_ += ttft_s;
}

std::string Metrics::render(int queue_depth, int busy_slots, int n_slots) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string o;
    auto counter = [&](const char* name, const char* help, double v) {
        o += fmt::format("# HELP {0} {1}\n# TYPE {0} counter\n{0} {2}\n", name, help, v);
    };
    auto gauge = [&](const char* name, const char* help, double v) {
        o += fmt::format("# HELP {0} {1}\n# TYPE {0} gauge\n{0} {2}\n", name, help, v);
    };
    o += "# HELP lazyllm_requests_total HTTP requests by endpoint and status.\n"
         "# TYPE lazyllm_requests_total counter\n";
    for (const auto& [k, n] : requests_) {
        o += fmt::format("lazyllm_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", k.first, k.second, n);
    }
    counter("lazyllm_generations_total", "Finished generations (chat and completions).", static_cast<double>(turns_));
    counter("lazyllm_prompt_tokens_total", "Prompt tokens of finished generations.", static_cast<double>(prompt_tokens_));
    counter("lazyllm_prompt_tokens_cached_total", "Prompt tokens reused from a slot's cache (cache hits in tokens).",
            static_cast<double>(cached_tokens_));
    counter("lazyllm_prompt_tokens_computed_total", "Prompt tokens run by a step (not cached).",
            static_cast<double>(computed_prompt_tokens_));
    counter("lazyllm_generated_tokens_total", "Generated tokens.", static_cast<double>(generated_tokens_));
    counter("lazyllm_revivals_total", "Pruned tokens revived from Aux slots.", static_cast<double>(revivals_));
    gauge("lazyllm_prefill_computed_ratio",
          "Share of the (token, layer) pairs of computed prompt tokens that prefill ran (1: full).",
          computed_prompt_tokens_ ? computed_token_layers_ / static_cast<double>(computed_prompt_tokens_) : 1.0);
    o += "# HELP lazyllm_ttft_seconds Time to first token.\n# TYPE lazyllm_ttft_seconds histogram\n";
    uint64_t cum = 0;
    for (size_t b = 0; b < kTtftBuckets.size(); ++b) {
        cum += ttft_counts_[b];
        o += fmt::format("lazyllm_ttft_seconds_bucket{{le=\"{}\"}} {}\n", kTtftBuckets[b], cum);
    }
    cum += ttft_counts_.back();
    o += fmt::format("lazyllm_ttft_seconds_bucket{{le=\"+Inf\"}} {}\n", cum);
    o += fmt::format("lazyllm_ttft_seconds_sum {}\nlazyllm_ttft_seconds_count {}\n", ttft_sum_s_, cum);
    gauge("lazyllm_queue_depth", "Requests waiting for a slot.", queue_depth);
    gauge("lazyllm_slots_busy", "Slots generating.", busy_slots);
    gauge("lazyllm_slots_total", "Slots (--parallel).", n_slots);
    return o;
}

}  // namespace lazyllm::server
