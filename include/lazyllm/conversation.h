// A conversation: one Session kept across requests (its tokens, KV cache, per-token depths and
// Aux slots), for servers. A turn whose prompt extends the cached tokens (the previous turns, the
// answer and a new question) runs only the new suffix as one step; LazyLLM's per-step selection
// then revives from Aux the pruned tokens the new question needs. A prompt that diverges
// truncates the cache at the common prefix first. Made by Engine::open_conversation; it keeps
// the engine's model and tokenizer alive, so it may outlive the Engine.
//
// Not thread-safe: one thread drives a conversation at a time. Drive every conversation of a
// process from one thread, the one that runs the engine's steps: OpenMP keeps a pool of workers
// for each thread that runs parallel work, and with more of them than cores libgomp stops
// spin-waiting, which made a small model's decode steps 4x slower (`lazyllm serve` loads the
// model on a thread that ends with the load and steps on its scheduler's thread).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lazyllm/result.h"
#include "lazyllm/sampling.h"
#include "lazyllm/tokenizer.h"

namespace lazyllm {

// One generated token's log-probability under the model: the log-softmax of its logits, before
// penalties, temperature and filters (vLLM's default), and the most likely tokens there.
struct TokenLogprob {
    TokenId id = 0;
    float logprob = 0.0f;
    std::vector<std::pair<TokenId, float>> top;  // TurnOptions::logprobs of them, most likely first
};

struct TurnOptions {
    int max_new_tokens = 256;
    // -1: off; k in [0, 20]: each generated token's TokenLogprob, with its k most likely
    // alternatives (TurnDelta::logprobs).
    int logprobs = -1;
    SamplingParams sampling;
    std::vector<std::string> stop;  // stop strings (not included in the output)
    // Tokens that end the turn when sampled (stop_reason "stop"; not in the output), as vLLM's
    // stop_token_ids.
    std::vector<TokenId> stop_ids;
    bool ignore_eos = false;        // never sample an end-of-generation token (llama-server's)
    // No end-of-generation token and no stop id is sampled before this many new tokens (vLLM's
    // min_tokens; stop strings still apply). At most max_new_tokens.
    int min_new_tokens = 0;
    // JSON mode (OpenAI's response_format json_object): only tokens that keep the answer a
    // prefix of a JSON object are sampled, and the turn ends (stop_reason "stop") when the
    // object closes. Logprobs stay the model's, before the mask.
    bool json_object = false;
    // With json_object: the answer's text so far (a final assistant message the turn
    // continues), which the JSON state takes before the first token. start_turn refuses one that
    // does not begin a JSON object, or holds a whole one.
    std::string json_prefix;
};

// start_turn's check of a json_prefix: an error unless `text` begins a JSON object and does not
// hold a whole one.
Status check_json_prefix(std::string_view text);

// What a turn did so far (complete once TurnDelta::done).
struct TurnStats {
    int64_t n_prompt = 0;   // the turn's prompt tokens
    int64_t n_cached = 0;   // of which reused from the cache (not computed again)
    int64_t n_gen = 0;      // generated tokens
    double prompt_ms = 0.0;  // the step over the new prompt suffix
    double ttft_ms = 0.0;    // turn start (prefix match, truncation, step, first sample)
    double decode_ms = 0.0;  // generation after the first token
    // (token, layer) pairs of the new prompt suffix computed by its step / (suffix * n_layer);
    // after a verified step (below) every pair it computed counts, the repair's second time too,
    // so the share can pass 1.
    double prefill_fraction_computed = 1.0;
    // Schedule::verify_margin: the step found its first token a near tie and repaired itself
    // before it, so the first token came from full's logits.
    bool verified = false;
    int64_t revived = 0;         // tokens revived from Aux slots in this turn's steps
    std::string stop_reason;     // eos | stop | length | context (the context is full)
};

struct TurnDelta {
    std::string text;  // newly complete UTF-8 text (may be empty)
    // TurnOptions::logprobs >= 0: the tokens whose text this call released, in order (a stop
    // string's held-back text holds its tokens' entries back with it). The tokens of a matched
    // stop string, and those after it, have none: the entries cover the returned text (a token
    // whose text is cut by the match counts, as its text starts in it).
    std::vector<TokenLogprob> logprobs;
    bool done = false;
};

class Conversation {
public:
    struct Impl;
    explicit Conversation(std::unique_ptr<Impl> impl);
    ~Conversation();
    Conversation(const Conversation&) = delete;
    Conversation& operator=(const Conversation&) = delete;

    // Tokens whose KV is cached (positions 0 .. n_past-1).
    std::span<const TokenId> tokens() const;
    int64_t n_past() const;
    int64_t n_ctx() const;
    // Length of the common prefix of `prompt` and the cached tokens.
    int64_t common_prefix(std::span<const TokenId> prompt) const;
    // Forgets the tokens at positions >= n: KV rows, depths, Aux slots. Errors: n outside
    // [0, n_past], or a turn in progress.
    Status truncate(int64_t n);

    // Starts a turn: keeps the longest common prefix of `prompt` with the cache (at least one
    // prompt token is always run, for its logits), truncates the rest, runs the new suffix as
    // one step and samples the first token. Errors: empty prompt, prompt + max_new_tokens over
    // the context, bad sampling parameters or ids.
    Result<TurnDelta> start_turn(std::span<const TokenId> prompt, const TurnOptions& opts);
    // Emits the next token: the first call, the token start_turn sampled; each later one runs
    // the decode step on the token emitted last and emits the token it samples. A token's text
    // goes out as soon as it is sampled, never after the step that follows it (which, under
    // LazyLLM, may revive every token the prompt step deferred). Call until done; an error
    // outside a turn (after done or abandon()).
    Result<TurnDelta> next();
    // next() for several conversations in turn: those whose decode step is the full step (the
    // full policy, or LazyLLM with nothing to select or revive) take it together, as one
    // forward (continuous batching; on the quantized decode weights, where the model has
    // them), the others one by one. deltas[i] is conversation i's next(). An error, before any
    // step, unless each is named once, is in a turn and is of one engine.
    static Status next_batch(std::span<Conversation* const> convs, std::vector<TurnDelta>& deltas);
    // Ends the turn now (a cancelled request): the cache keeps what was computed. No turn: nothing.
    void abandon();
    bool in_turn() const;
    const TurnStats& stats() const;
    // The turn's generated ids so far.
    const std::vector<TokenId>& generated() const;
    // The pruning policy ("full", "lazy", ...) and schedule ("" for full) of this conversation.
    const std::string& policy() const;
    const std::string& schedule() const;

private:
    Status next_step_alone();  // the decode step of next() after emit, and its sample
    std::unique_ptr<Impl> impl_;
};

}  // namespace lazyllm
