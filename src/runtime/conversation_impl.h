// Conversation::Impl, for Engine::open_conversation (engine.cpp) and conversation.cpp.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/timer.h"
#include "lazyllm/conversation.h"
#include "runtime/json_prefix.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/stop_strings.h"

namespace lazyllm {

struct Conversation::Impl {
    Impl(const LlamaModel& m, const Tokenizer& t, Session s)
        : model(&m), tok(&t), session(std::move(s)) {}

    const LlamaModel* model;
    const Tokenizer* tok;
    std::shared_ptr<const void> owner;  // the Engine's state, which holds model and tok
    Session session;
    std::string policy, schedule;
    std::vector<float> logits;        // [n_vocab] of the last step
    // The logits of the last prompt step, over the cached tokens [0, prompt_logits_n) (0: none):
    // a turn with the same prompt (a retry, a regeneration) samples from them, as a cold run.
    std::vector<float> prompt_logits;
    int64_t prompt_logits_n = 0;
    // Scratch of next_batch when this conversation comes first (reused: no allocation per step).
    std::vector<float> batch_logits;  // [n, n_vocab]
    std::vector<Impl*> batch;
    std::vector<TokenId> batch_tokens;
    std::vector<Session*> batch_sessions;

    // The turn in progress.
    bool in_turn = false;
    TurnOptions opts;
    TurnStats stats;
    std::optional<Sampler> sampler;
    std::optional<StreamDecoder> stream;
    std::optional<StopStringMatcher> stops;
    std::optional<JsonPrefix> json;            // TurnOptions::json_object: the answer
    std::shared_ptr<JsonTokenMask> json_mask;  // built on the first JSON turn
    std::vector<float> masked;                 // scratch: the logits under the mask
    std::vector<TokenId> history;    // prompt + generated, for the repetition penalty
    std::vector<TokenId> generated;  // this turn's ids
    TokenId next = 0;                // sampled, not yet emitted (or emitted, step_due)
    TokenLogprob next_logprob;       // of `next`, when opts.logprobs >= 0
    // Emitted tokens' logprob entries whose text the stop strings still hold, with the byte range
    // of the decoded text each one ends (its start: the end of the one before).
    struct PendingLogprob {
        TokenLogprob entry;
        int64_t start, end;
    };
    std::deque<PendingLogprob> pending_logprobs;
    int64_t decoded_bytes = 0;       // this turn's text out of the UTF-8 decoder
    int64_t released_bytes = 0;      // of it, released past the stop strings
    std::vector<int32_t> top_order;  // scratch of the top logprobs
    // `next` went out and the turn goes on: the next call runs the step on it first. A token's
    // text leaves as soon as it is sampled, before the step that follows it (which may revive
    // every token the prompt step deferred).
    bool step_due = false;
    Timer turn_timer;
    Timer decode_timer;
};

}  // namespace lazyllm
