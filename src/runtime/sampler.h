// Token sampler: repetition, frequency and presence penalties, greedy, top-k, temperature softmax,
// top-p, min-p and a seeded draw, in the order of llama.cpp's sampler chain (common/sampling.cpp)
// with temperature folded into the softmax before top-p / min-p as in HF's logits processors
// (transformers/generation/logits_process.py).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "lazyllm/result.h"
#include "lazyllm/sampling.h"
#include "lazyllm/tokenizer.h"

namespace lazyllm {

// A NaN or Inf logit (NaN weights, an overflow) makes sampling pick an arbitrary token, often
// end-of-text, and the answer silently empty: generation stops with this error instead. n_gen:
// the tokens generated before these logits (0: the prompt's).
Status check_logits_finite(std::span<const float> logits, int64_t n_gen);

// The rules that end an answer or hold its end back (RunOptions and TurnOptions alike):
// stop ids inside the vocabulary, and 0 <= min_new_tokens <= max_new_tokens.
Status check_stop_rules(std::span<const TokenId> stop_ids, int min_new_tokens, int max_new_tokens,
                        int32_t n_vocab);
// The tokens the next sample may not be after n_generated new tokens: the end-of-generation ones
// under ignore_eos, and those and the stop ids while fewer than min_new_tokens are out.
std::vector<TokenId> banned_tokens(const Tokenizer& tok, bool ignore_eos,
                                   std::span<const TokenId> stop_ids, int min_new_tokens,
                                   int64_t n_generated);

// One sampler per generation stream. Not thread-safe. Working buffers are sized on the first call
// for a vocabulary and reused: later calls with the same vocabulary size allocate nothing.
class Sampler {
public:
    // params must pass validate() (checked: aborts otherwise; validate user input first).
    explicit Sampler(SamplingParams params);

    // Picks the next token from raw logits [n_vocab]. history is the context so far (prompt and
    // generated tokens, oldest first); only its last repeat_last_n entries matter, and ids outside
    // [0, n_vocab) are ignored. NaN logits count as -inf. Deterministic for a given seed.
    TokenId sample(std::span<const float> logits, std::span<const TokenId> history);

    // Tokens never sampled from now on (their logits count as -inf), as llama.cpp's
    // --ignore-eos bans the end-of-generation tokens. Ids outside the vocabulary are ignored.
    void ban(std::vector<TokenId> ids) { banned_ = std::move(ids); }

    // The seed in use (the drawn one without SamplingParams::seed): reusing it reproduces the
    // stream.
    uint64_t seed() const { return seed_; }
    const SamplingParams& params() const { return params_; }

private:
    struct Candidate {
        float logit;  // after the repetition penalty
        float p;      // probability after temperature softmax over the surviving candidates
        TokenId id;
    };

    // The candidates' prefix that survives the filters so far, whether it is in the
    // (logit desc, id asc) order, and its top probability (after softmax).
    struct Survivors {
        size_t n;
        bool sorted;
        float p_max = 0.0f;
    };

    // The stages of sample(), in order.
    void load_candidates(std::span<const float> logits, std::span<const TokenId> history);
    void apply_penalties(std::span<const TokenId> history);
    Survivors top_k();
    bool softmax(Survivors& s);  // false: every candidate is masked
    void min_p(Survivors& s);
    void top_p(Survivors& s);
    TokenId draw(const Survivors& s);
    TokenId argmax() const;
    // Uniform double in [0, 1) from the top 53 bits of one mt19937_64 output: the same on every
    // standard library (std::uniform_real_distribution is not).
    double next_uniform();

    SamplingParams params_;
    uint64_t seed_ = 0;
    std::mt19937_64 rng_;
    std::vector<Candidate> cands_;  // [n_vocab], candidates; a prefix of n_cand survives filters
    std::vector<int32_t> count_;    // [n_vocab], scratch of the penalties (all zero between calls)
    std::vector<TokenId> banned_;
};

}  // namespace lazyllm
