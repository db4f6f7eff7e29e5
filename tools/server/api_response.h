// Response bodies of the OpenAI-compatible API: chat.completion / text_completion objects,
// their streamed chunks, usage, and llama-server-style timings (plus lazyllm's own figures:
// TTFT, the share of the prompt's (token, layer) pairs computed, revivals, cached tokens).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "lazyllm/conversation.h"
#include "server/api_request.h"

namespace lazyllm::server {

// What every response of one request shares.
struct ResponseHead {
    Endpoint endpoint = Endpoint::kChat;
    std::string id;
    int64_t created = 0;  // Unix seconds
    std::string model;
};

// OpenAI's finish_reason from TurnStats::stop_reason: "stop" or "length".
std::string finish_reason(const std::string& stop_reason);
nlohmann::json usage_json(const TurnStats& s);
nlohmann::json timings_json(const TurnStats& s, const std::string& policy, const std::string& schedule);

// A choice's "logprobs" for generated tokens: chat's {"content": [{token, logprob, bytes,
// top_logprobs}]} or completions' {tokens, token_logprobs, top_logprobs, text_offset};
// text_offset counts on from `offset` (characters of the answer before these tokens: characters
// as OpenAI and vLLM count them, from the answer's start as vLLM without echo; a token that ends
// inside a UTF-8 sequence counts the characters it starts), which it advances. A logprob of -inf is written as -9999 (OpenAI's floor).
nlohmann::json logprobs_json(Endpoint endpoint, const Tokenizer& tok,
                             std::span<const TokenLogprob> tokens, int64_t& offset);
// The whole answer (stream false); logprobs: logprobs_json's, or null.
nlohmann::json completion_json(const ResponseHead& h, const std::string& text, const TurnStats& s,
                               const std::string& policy, const std::string& schedule,
                               nlohmann::json logprobs = nullptr);
// One streamed chunk: a text delta (finish empty), or the last chunk (finish set, timings).
nlohmann::json chunk_json(const ResponseHead& h, const std::string& text, bool first,
                          const std::string& finish, nlohmann::json logprobs = nullptr);
// The usage chunk (stream_options.include_usage): no choices.
nlohmann::json usage_chunk_json(const ResponseHead& h, const TurnStats& s);
std::string sse(const nlohmann::json& j);  // "data: {...}\n\n"

}  // namespace lazyllm::server
