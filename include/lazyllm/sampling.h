// Sampling parameters (greedy, temperature, top-k, top-p, min-p, repetition penalty, seed),
// shared by the public API and the sampler (src/runtime/sampler.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "lazyllm/result.h"

namespace lazyllm {

struct SamplingParams {
    float temperature = 0.0f;  // <= 0: greedy (argmax, ties to the lowest id)
    int top_k = 40;            // 0: off
    float top_p = 0.95f;       // 1: off
    float min_p = 0.05f;       // 0: off
    // CTRL-style (Keskar et al. 2019, as llama.cpp / HF): for each distinct token among the last
    // repeat_last_n tokens of the history, logit > 0 ? logit / p : logit * p. 1: off.
    float repetition_penalty = 1.0f;
    // OpenAI's penalties over the same window, after the repetition penalty, as llama.cpp's
    // penalties sampler: logit -= count * frequency_penalty + (count > 0) * presence_penalty.
    float presence_penalty = 0.0f;   // 0: off
    float frequency_penalty = 0.0f;  // 0: off
    int repeat_last_n = 64;          // 0: off; the window of all three penalties
    std::optional<uint64_t> seed;    // absent: a random seed from std::random_device
};

// Checks every field against its range; the error names the field, its allowed range and the
// value given. temperature >= 0, top_k >= 0, top_p in (0, 1], min_p in [0, 1),
// repetition_penalty > 0, presence_penalty and frequency_penalty finite, repeat_last_n >= 0.
Status validate(const SamplingParams& params);

// The largest logit minus the second largest: how near greedy's pick is to changing. NaN counts
// as -inf; 0 when the two tie or no logit is finite, infinity when only one is.
float top_two_gap(std::span<const float> logits);

}  // namespace lazyllm
