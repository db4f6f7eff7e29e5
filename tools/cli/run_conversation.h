// lazyllm run --conversation (llama-cli's -cnv): a chat in the terminal. Each line read from
// stdin is a user message (a line ending in '\' goes on to the next); the answer streams to
// stdout; the chat's KV cache stays between turns (a Conversation, as a server slot's), so a
// turn computes only its new tokens, pruned afresh under the policy against the new message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lazyllm/conversation.h"
#include "lazyllm/engine.h"

namespace lazyllm::cli {

// The context of a conversation without -c: room for a chat, where run's default (prompt + -n)
// would fit only the first turn; more when the first message needs it (its prompt, an answer and
// kConversationRoom tokens), never more than the model's training context.
inline constexpr int64_t kConversationContext = 8192;
inline constexpr int64_t kConversationRoom = 2048;

struct ConversationSetup {
    std::optional<std::string> system;  // a system message (also empty) before the first
    std::string first_message;          // -p / -f: the first user message; blank: read one
    int n_predict = 256;                // tokens per answer at most; -1: up to the context
    int64_t n_ctx = 0;                  // 0: kConversationContext (or more, above)
    // Sampling (turn k draws with seed + k - 1), stop strings, ignore_eos.
    TurnOptions turn;
    PruneOptions prune;
};

// Runs the chat until the end of stdin (exit 0), each answer's figures on stderr. Errors (a message
// that no longer fits the context, a failed step) end it with report()'s exit code.
int run_conversation(const Engine& e, const ConversationSetup& setup);

}  // namespace lazyllm::cli
