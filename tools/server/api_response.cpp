// Shapes follow OpenAI's chat.completion / chat.completion.chunk / text_completion objects and
// llama-server's "timings" (tools/server/server.cpp in llama.cpp: prompt_n, prompt_ms,
// prompt_per_token_ms, prompt_per_second, predicted_n, ...).
#include "server/api_response.h"

#include <algorithm>

namespace lazyllm::server {

using json = nlohmann::json;

namespace {

const char* object_name(Endpoint e, bool chunk) {
    if (e == Endpoint::kCompletion) return "text_completion";
    return chunk ? "chat.completion.chunk" : "chat.completion";
}

json head_json(const ResponseHead& h, bool chunk) {
    return json{{"id", h.id}, {"object", object_name(h.endpoint, chunk)}, {"created", h.created},
                {"model", h.model}, {"system_fingerprint", "lazyllm"}};
}

double per_second(int64_t n, double ms) { return ms > 0.0 ? 1000.0 * static_cast<double>(n) / ms : 0.0; }

}  // namespace

std::string finish_reason(const std::string& stop_reason) {
    return stop_reason == "length" || stop_reason == "context" ? "length" : "stop";
}

json usage_json(const TurnStats& s) {
    return json{{"prompt_tokens", s.n_prompt},
                {"completion_tokens", s.n_gen},
                {"total_tokens", s.n_prompt + s.n_gen},
                {"prompt_tokens_details", {{"cached_tokens", s.n_cached}}}};
}

json timings_json(const TurnStats& s, const std::string& policy, const std::string& schedule) {
    const int64_t prompt_n = s.n_prompt - s.n_cached;
    // predicted_ms is the time after the first token (which the prompt step samples), so both
    // rates are over the decode steps in it: one fewer than the tokens generated.
    const int64_t steps = std::max<int64_t>(s.n_gen - 1, 0);
    return json{
        {"cache_n", s.n_cached},
        {"prompt_n", prompt_n},
        {"prompt_ms", s.prompt_ms},
        {"prompt_per_token_ms", prompt_n ? s.prompt_ms / static_cast<double>(prompt_n) : 0.0},
        {"prompt_per_second", per_second(prompt_n, s.prompt_ms)},
        {"predicted_n", s.n_gen},
        {"predicted_ms", s.decode_ms},
        {"predicted_per_token_ms", steps ? s.decode_ms / static_cast<double>(steps) : 0.0},
        {"predicted_per_second", per_second(steps, s.decode_ms)},
        {"ttft_ms", s.ttft_ms},
        {"prefill_pct_computed", 100.0 * s.prefill_fraction_computed},
        {"revivals", s.revived},
        {"policy", policy},
        {"schedule", schedule}};
}

json logprobs_json(Endpoint endpoint, const Tokenizer& tok, std::span<const TokenLogprob> tokens,
                   int64_t& offset) {
    auto value = [](float lp) { return std::max(lp, -9999.0f); };
    if (endpoint == Endpoint::kChat) {
        auto entry = [&](TokenId id, float lp) {
            const std::string piece = tok.token_to_piece(id, /*render_special=*/true);
            json bytes = json::array();
            for (char c : piece) bytes.push_back(static_cast<uint8_t>(c));
            return json{{"token", piece}, {"logprob", value(lp)}, {"bytes", std::move(bytes)}};
        };
        json content = json::array();
        for (const TokenLogprob& t : tokens) {
            json e = entry(t.id, t.logprob);
            e["top_logprobs"] = json::array();
            for (const auto& [id, lp] : t.top) e["top_logprobs"].push_back(entry(id, lp));
            content.push_back(std::move(e));
        }
        return json{{"content", std::move(content)}, {"refusal", nullptr}};
    }
    json pieces = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
    for (const TokenLogprob& t : tokens) {
        const std::string piece = tok.token_to_piece(t.id, /*render_special=*/true);
        pieces.push_back(piece);
        lps.push_back(value(t.logprob));
        json top = json::object();
        for (const auto& [id, lp] : t.top) {
            // Two ids may share a piece (a byte token and its character): the likelier stays.
            const std::string key = tok.token_to_piece(id, true);
            if (!top.contains(key)) top[key] = value(lp);
        }
        // The sampled token is always there, as OpenAI returns it: up to logprobs + 1 entries.
        if (!top.contains(piece)) top[piece] = value(t.logprob);
        tops.push_back(std::move(top));
        offsets.push_back(offset);
        // Characters: the bytes that start one (not UTF-8 continuation bytes, 10xxxxxx).
        offset += std::count_if(piece.begin(), piece.end(),
                                [](char c) { return (static_cast<uint8_t>(c) & 0xC0) != 0x80; });
    }
    return json{{"tokens", pieces},
                {"token_logprobs", lps},
                {"top_logprobs", tops},
                {"text_offset", offsets}};
}

json completion_json(const ResponseHead& h, const std::string& text, const TurnStats& s,
                     const std::string& policy, const std::string& schedule, json logprobs) {
    json j = head_json(h, false);
    json choice = {{"index", 0},
                   {"finish_reason", finish_reason(s.stop_reason)},
                   {"logprobs", std::move(logprobs)}};
    if (h.endpoint == Endpoint::kChat) {
        choice["message"] = {{"role", "assistant"}, {"content", text}};
    } else {
        choice["text"] = text;
    }
    j["choices"] = json::array({choice});
    j["usage"] = usage_json(s);
    j["timings"] = timings_json(s, policy, schedule);
    return j;
}

json chunk_json(const ResponseHead& h, const std::string& text, bool first,
                const std::string& finish, json logprobs) {
    json j = head_json(h, true);
    json choice = {{"index", 0}, {"logprobs", std::move(logprobs)}};
    choice["finish_reason"] = finish.empty() ? json(nullptr) : json(finish);
    if (h.endpoint == Endpoint::kChat) {
        json delta = json::object();
        if (first) delta["role"] = "assistant";
        if (!text.empty() || (first && finish.empty())) delta["content"] = text;
        choice["delta"] = delta;
    } else {
        choice["text"] = text;
    }
    j["choices"] = json::array({choice});
    return j;
}

json usage_chunk_json(const ResponseHead& h, const TurnStats& s) {
    json j = head_json(h, true);
    j["choices"] = json::array();
    j["usage"] = usage_json(s);
    return j;
}

std::string sse(const json& j) {
    return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

}  // namespace lazyllm::server
