// Requests of the OpenAI-compatible API (chat completions, completions, tokenize, detokenize):
// JSON bodies parsed and checked field by field into plain structs, before any model work.
// Every failure is an ApiError that names the field at fault (OpenAI's error object).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lazyllm/engine.h"

namespace lazyllm::server {

// OpenAI's {"error": {"message", "type", "param", "code"}}, with the HTTP status to send.
struct ApiError {
    int status = 400;
    std::string message;
    std::string type = "invalid_request_error";
    std::string param;  // "" -> null
    std::string code;   // "" -> null
};
nlohmann::json error_json(const ApiError& e);

// A parse result: the value or the error.
template <typename T>
using ApiResult = std::variant<T, ApiError>;

enum class Endpoint { kChat, kCompletion };

// The "lazyllm" extension as the request gives it: policy, preset and the schedule's layers
// (indices or depth fractions) and keep fractions as text, resolved against the model by
// to_prune_options (errors then name the field); the other fields typed. Absent: unset, "".
struct LazyExtension {
    std::optional<std::string> policy, preset;
    std::string layers, keep;
    std::string tiers_json;  // Schedule::tiers as JSON text ("" when absent); they need layers
    ScheduleOverrides overrides;
    std::optional<uint64_t> seed;
};
// PruneOptions for a model of n_layer layers: the request's fields on top of `base`, the
// server's own (serve's pruning flags), as llama-server takes a request's fields over its
// flags. A request that gives pruning fields but no policy over a full default is lazy; a
// preset it names replaces base's schedule; policy full drops everything else.
Result<PruneOptions> to_prune_options(const LazyExtension& x, int n_layer,
                                      const PruneOptions& base = {});

struct GenRequest {
    Endpoint endpoint = Endpoint::kChat;
    std::vector<ChatMessage> messages;  // kChat
    bool continue_final = false;        // kChat: the final (assistant) message is continued
    std::string prompt;                 // kCompletion, text
    std::vector<TokenId> prompt_ids;    // kCompletion, given as token ids
    bool prompt_is_ids = false;
    std::optional<int> max_tokens;      // max_completion_tokens, max_tokens or n_predict
    std::string max_tokens_field;       // which of them was given (for messages)
    SamplingParams sampling;
    std::vector<std::string> stop;
    std::vector<TokenId> stop_ids;  // stop_token_ids (vLLM's)
    int min_tokens = 0;             // min_tokens (vLLM's): no end token or stop id before them
    bool json_object = false;       // kChat: response_format json_object (JSON mode)
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    bool ignore_eos = false;
    int logprobs = -1;           // -1: off; k: each token's logprob and k alternatives
    bool cache_prompt = true;    // llama-server's switch: false computes the prompt afresh
    std::optional<LazyExtension> prune;  // the "lazyllm" extension; none: the server's default
    std::string model;
};

// Sampling defaults of the server (llama-server's): temperature 0.8, top_k 40, top_p 0.95,
// min_p 0.05; a request overrides them field by field.
SamplingParams server_sampling_defaults();

ApiResult<GenRequest> parse_chat_request(std::string_view body);
ApiResult<GenRequest> parse_completion_request(std::string_view body);
// The "lazyllm" extension object: {"policy", "preset" (safe | fast), "layers", "keep",
// "schedule" (a full schedule object as `lazyllm tune` writes it), "keep_first", "keep_recent",
// "min_context", "prune_decode", "score_layers", "score_pool", "revive_max", "revive_weight",
// "repair", "verify_margin", "seed"}.
ApiResult<LazyExtension> parse_lazy_extension(const nlohmann::json& j);

struct TokenizeRequest {
    std::string content;
    bool add_special = false;  // BOS as the model's tokenizer adds it
    bool parse_special = true;  // special-token texts become their ids
    bool with_pieces = false;
};
ApiResult<TokenizeRequest> parse_tokenize_request(std::string_view body);
ApiResult<std::vector<TokenId>> parse_detokenize_request(std::string_view body, int32_t n_vocab);

// The generation budget of a request against the context: a prompt that leaves no room is
// context_length_exceeded; max tokens over the context or over what is left is a 400 naming
// the field. Returns the max new tokens to use (default: default_max, capped by the room left).
ApiResult<int> check_lengths(const GenRequest& r, int64_t n_prompt, int64_t n_ctx,
                             int default_max);

}  // namespace lazyllm::server
