// Request parsing for the OpenAI-compatible API. Field rules follow OpenAI's API reference
// (platform.openai.com/docs/api-reference/chat/create) and llama-server's extensions
// (tools/server/README.md in llama.cpp: n_predict, cache_prompt, repeat_penalty, ...).
// Fields the engine cannot honour (n > 1, tools, images) are refused, not ignored.
#include "server/api_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "server/json_fields.h"

namespace lazyllm::server {

using json = nlohmann::json;

json error_json(const ApiError& e) {
    json err = {{"message", e.message}, {"type", e.type}};
    err["param"] = e.param.empty() ? json(nullptr) : json(e.param);
    err["code"] = e.code.empty() ? json(nullptr) : json(e.code);
    return json{{"error", err}};
}

namespace {

// Requests nest a few levels; nlohmann's dump() and the destructor's callers recurse once per
// level, so a body nested 100,000 deep (200 KB) would overflow an HTTP thread's stack.
constexpr int kMaxNesting = 64;

// Whether arrays and objects nest deeper than kMaxNesting, counting brackets outside strings.
bool nested_too_deep(std::string_view body) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (const char c : body) {
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxNesting) return true;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return false;
}

ApiResult<json> parse_object(std::string_view body) {
    if (nested_too_deep(body)) {
        return bad("",
                   fmt::format("the request body nests arrays and objects deeper than {} levels",
                               kMaxNesting),
                   "invalid_json");
    }
    json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
        return bad("", "the request body is not valid JSON", "invalid_json");
    }
    if (!j.is_object()) {
        return bad("", fmt::format("the request body must be a JSON object, got {}", type_name(j)),
                   "invalid_json");
    }
    return j;
}

// "stop": a string or an array of strings.
std::optional<ApiError> read_stop(const json& obj, std::vector<std::string>& out) {
    auto it = obj.find("stop");
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (it->is_string()) {
        out.push_back(it->get<std::string>());
        return std::nullopt;
    }
    if (!it->is_array()) return wrong_type("stop", "a string or an array of strings", *it);
    if (it->size() > 16) return bad("stop", fmt::format("'stop' holds at most 16 strings, got {}", it->size()));
    for (size_t i = 0; i < it->size(); ++i) {
        const json& s = (*it)[i];
        if (!s.is_string()) return wrong_type(fmt::format("stop[{}]", i), "a string", s);
        out.push_back(s.get<std::string>());
    }
    return std::nullopt;
}

std::optional<ApiError> read_openai_hints(const json& j, Endpoint endpoint);

// Fields common to both endpoints. `known` gathers the names read here.
std::optional<ApiError> read_common(const json& j, GenRequest& r) {
    Fields f{j, "", std::nullopt};
    if (auto m = f.string("model")) r.model = *m;
    // max_completion_tokens (OpenAI's current name) wins over max_tokens and n_predict.
    for (const char* key : {"n_predict", "max_tokens", "max_completion_tokens"}) {
        const bool n_predict = std::string_view(key) == "n_predict";
        // n_predict -1 is llama-server's "no limit": the default, capped by the room left.
        if (const json* v = f.get(key);
            n_predict && v && v->is_number_integer() && v->get<int64_t>() == -1) {
            continue;
        }
        if (auto v = f.integer(key, n_predict ? 0 : 1, 1 << 30)) {
            r.max_tokens = static_cast<int>(*v);
            r.max_tokens_field = key;
        }
    }
    if (auto v = f.number("temperature", 0.0, 2.0)) r.sampling.temperature = static_cast<float>(*v);
    if (auto v = f.number("top_p", 0.0, 1.0)) {
        if (*v == 0.0) return bad("top_p", "'top_p' must be in (0, 1], got 0");
        r.sampling.top_p = static_cast<float>(*v);
    }
    // 0 is off; so is vLLM's -1.
    if (auto v = f.integer("top_k", -1, 1 << 30)) {
        r.sampling.top_k = static_cast<int>(std::max<int64_t>(*v, 0));
    }
    if (auto v = f.number("min_p", 0.0, 1.0)) {
        if (*v >= 1.0) return bad("min_p", "'min_p' must be in [0, 1), got 1");
        r.sampling.min_p = static_cast<float>(*v);
    }
    // A seed is 64 bits: clients send unsigned ones up to 2^64 - 1, others signed. -1 asks for
    // a random one, as llama-server's default; 0 is a seed like any other.
    if (const json* v = f.get("seed"); v && v->is_number_unsigned()) {
        r.sampling.seed = v->get<uint64_t>();
    } else if (auto v = f.integer("seed", std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max())) {
        if (*v != -1) r.sampling.seed = static_cast<uint64_t>(*v);
    }
    // repetition_penalty is vLLM's name for it.
    for (const char* key : {"repeat_penalty", "repetition_penalty"}) {
        if (auto v = f.number(key, 1e-3, 100.0))
            r.sampling.repetition_penalty = static_cast<float>(*v);
    }
    if (auto v = f.integer("repeat_last_n", 0, 1 << 20)) r.sampling.repeat_last_n = static_cast<int>(*v);
    // OpenAI's range; applied as llama-server does, over the last repeat_last_n tokens.
    if (auto v = f.number("presence_penalty", -2.0, 2.0))
        r.sampling.presence_penalty = static_cast<float>(*v);
    if (auto v = f.number("frequency_penalty", -2.0, 2.0))
        r.sampling.frequency_penalty = static_cast<float>(*v);
    if (auto v = f.boolean("stream")) r.stream = *v;
    if (auto v = f.boolean("ignore_eos")) r.ignore_eos = *v;
    if (auto v = f.integer("min_tokens", 0, 1 << 30)) r.min_tokens = static_cast<int>(*v);
    if (auto v = f.boolean("cache_prompt")) r.cache_prompt = *v;
    f.string("user");
    if (f.err) return f.err;
    if (auto n = f.integer("n", 1, 128); n && *n != 1) return unsupported("n", "n > 1");
    if (f.err) return f.err;
    if (auto e = read_stop(j, r.stop)) return e;
    if (const json* ids = f.get("stop_token_ids")) {  // vLLM's
        if (!ids->is_array()) return wrong_type("stop_token_ids", "an array of token ids", *ids);
        for (size_t i = 0; i < ids->size(); ++i) {
            const json& t = (*ids)[i];
            const std::string field = fmt::format("stop_token_ids[{}]", i);
            if (!t.is_number_integer()) return wrong_type(field, "an integer token id", t);
            const int64_t id = t.get<int64_t>();
            if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
                return bad(field, fmt::format("{}: token id {} is out of range", field, id));
            }
            r.stop_ids.push_back(static_cast<TokenId>(id));
        }
    }
    if (const json* so = f.get("stream_options")) {
        if (!so->is_object()) return wrong_type("stream_options", "an object", *so);
        Fields s{*so, "stream_options.", std::nullopt};
        if (auto v = s.boolean("include_usage")) r.include_usage = *v;
        s.boolean("include_obfuscation");  // padding against side channels; none is sent here
        if (s.err) return s.err;
        if (auto e = check_known(*so, {"include_usage", "include_obfuscation"}, "stream_options."))
            return e;
    }
    if (const json* lz = f.get("lazyllm")) {
        auto p = parse_lazy_extension(*lz);
        if (auto* e = std::get_if<ApiError>(&p)) return *e;
        r.prune = std::get<LazyExtension>(p);
    }
    if (r.endpoint == Endpoint::kChat) {
        // OpenAI's chat form: logprobs true, top_logprobs alternatives (0 to 20).
        const auto lp = f.boolean("logprobs");
        const auto top = f.integer("top_logprobs", 0, 20);
        if (f.err) return f.err;
        if (top && *top > 0 && !lp.value_or(false)) {
            return bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
        }
        if (lp.value_or(false)) r.logprobs = static_cast<int>(top.value_or(0));
    } else {
        // The completions form: logprobs N, the N most likely alternatives (OpenAI takes up to 5).
        if (auto n = f.integer("logprobs", 0, 20)) r.logprobs = static_cast<int>(*n);
        if (f.err) return f.err;
    }
    return read_openai_hints(j, r.endpoint);
}

// OpenAI fields this server has no use for: accepted where they change nothing here (null, the
// neutral value, or a hint that does not change the output), refused as unsupported otherwise.
std::optional<ApiError> read_openai_hints(const json& j, Endpoint endpoint) {
    const auto given = [&j](const char* key) -> const json* {
        auto it = j.find(key);
        return it == j.end() || it->is_null() ? nullptr : &*it;
    };
    if (const json* v = given("logit_bias"); v && !(v->is_object() && v->empty())) {
        return unsupported("logit_bias", "logit_bias");
    }
    if (const json* v = given("top_logprobs");
        endpoint == Endpoint::kCompletion && v &&
        !(v->is_number_integer() && v->get<int64_t>() == 0)) {
        return unsupported("top_logprobs",
                           "top_logprobs (the completions endpoint takes logprobs: N)");
    }
    if (const json* v = given("modalities")) {
        const bool text_only =
            v->is_array() && std::all_of(v->begin(), v->end(), [](const json& m) {
                return m.is_string() && m.get<std::string>() == "text";
            });
        if (!text_only) return unsupported("modalities", "output modalities other than text");
    }
    for (const char* key : {"audio", "web_search_options"}) {
        if (given(key)) return unsupported(key, fmt::format("'{}'", key));
    }
    // service_tier (billing), reasoning_effort and verbosity (hints to reasoning models),
    // prompt_cache_key and safety_identifier (a cache hint and an end user's id) and prediction
    // (a speed hint): strings or objects that cannot change what this server answers.
    for (const char* key : {"service_tier", "reasoning_effort", "verbosity", "prompt_cache_key",
                            "safety_identifier"}) {
        if (const json* v = given(key); v && !v->is_string())
            return wrong_type(key, "a string", *v);
    }
    if (const json* v = given("prediction"); v && !v->is_object()) {
        return wrong_type("prediction", "an object", *v);
    }
    return std::nullopt;
}

const std::set<std::string> kCommonFields = {"model",
                                             "max_tokens",
                                             "max_completion_tokens",
                                             "n_predict",
                                             "temperature",
                                             "top_p",
                                             "top_k",
                                             "min_p",
                                             "seed",
                                             "stop",
                                             "stream",
                                             "stream_options",
                                             "n",
                                             "user",
                                             "presence_penalty",
                                             "frequency_penalty",
                                             "repeat_penalty",
                                             "repeat_last_n",
                                             "ignore_eos",
                                             "cache_prompt",
                                             "lazyllm",
                                             "logprobs",
                                             "logit_bias",
                                             "top_logprobs",
                                             "service_tier",
                                             "reasoning_effort",
                                             "verbosity",
                                             "prompt_cache_key",
                                             "safety_identifier",
                                             "repetition_penalty",
                                             "min_tokens",
                                             "stop_token_ids",
                                             "modalities",
                                             "audio",
                                             "prediction",
                                             "web_search_options"};

// A message's content: a string, or an array of {"type": "text", "text": ...} parts.
std::optional<ApiError> read_content(const json& c, size_t i, std::string& out) {
    const std::string field = fmt::format("messages[{}].content", i);
    if (c.is_string()) {
        out = c.get<std::string>();
        return std::nullopt;
    }
    if (!c.is_array()) return wrong_type(field, "a string or an array of content parts", c);
    for (size_t k = 0; k < c.size(); ++k) {
        const json& part = c[k];
        const std::string pf = fmt::format("{}[{}]", field, k);
        if (!part.is_object()) return wrong_type(pf, "an object", part);
        auto type = part.find("type");
        if (type == part.end() || !type->is_string()) return bad(pf + ".type", fmt::format("'{}.type' must be a string", pf));
        const std::string t = type->get<std::string>();
        if (t == "image_url" || t == "input_image" || t == "image") return unsupported(pf, "image input");
        if (t == "input_audio" || t == "file") return unsupported(pf, fmt::format("'{}' content", t));
        if (t != "text") return bad(pf + ".type", fmt::format("unknown content part type '{}'", t));
        auto text = part.find("text");
        if (text == part.end() || !text->is_string()) return bad(pf + ".text", fmt::format("'{}.text' must be a string", pf));
        out += text->get<std::string>();
    }
    return std::nullopt;
}

std::optional<ApiError> read_messages(const json& j, std::vector<ChatMessage>& out) {
    auto it = j.find("messages");
    if (it == j.end() || it->is_null()) return bad("messages", "'messages' is required");
    if (!it->is_array()) return wrong_type("messages", "an array", *it);
    if (it->empty()) return bad("messages", "'messages' must hold at least one message");
    for (size_t i = 0; i < it->size(); ++i) {
        const json& m = (*it)[i];
        const std::string field = fmt::format("messages[{}]", i);
        if (!m.is_object()) return wrong_type(field, "an object", m);
        auto role = m.find("role");
        if (role == m.end() || !role->is_string()) return bad(field + ".role", fmt::format("'{}.role' must be a string", field));
        std::string r = role->get<std::string>();
        if (r == "developer") r = "system";  // OpenAI's newer name for system messages
        if (r == "tool" || r == "function") return unsupported(field + ".role", "tool messages");
        if (r != "system" && r != "user" && r != "assistant") {
            return bad(field + ".role", fmt::format("'{}.role' must be system, developer, user or assistant, got '{}'", field, r));
        }
        if (m.contains("tool_calls") && !m["tool_calls"].is_null()) return unsupported(field + ".tool_calls", "tool calls");
        ChatMessage msg{r, ""};
        auto content = m.find("content");
        // null counts as absent, as everywhere in a request; OpenAI lets only an assistant
        // message (one that made tool calls) go without content.
        const bool none = content == m.end() || content->is_null();
        if (none && r != "assistant") {
            return bad(field + ".content", fmt::format("'{}.content' is required", field));
        }
        if (!none) {
            if (auto e = read_content(*content, i, msg.content)) return e;
        }
        out.push_back(std::move(msg));
    }
    return std::nullopt;
}

// A final assistant message is continued, as llama-server does; vLLM's continue_final_message
// and add_generation_prompt say so explicitly (false: a new assistant turn after it).
std::optional<ApiError> read_continuation(const json& j, GenRequest& r) {
    Fields f{j, "", std::nullopt};
    const bool assistant_last = r.messages.back().role == "assistant";
    const auto cont = f.boolean("continue_final_message");
    const auto gen = f.boolean("add_generation_prompt");
    if (f.err) return f.err;
    if (cont.value_or(false) && !assistant_last) {
        return bad("continue_final_message",
                   "'continue_final_message' needs an assistant message last in 'messages'");
    }
    if (cont.value_or(false) && gen.value_or(false)) {
        return bad("add_generation_prompt",
                   "'continue_final_message' and 'add_generation_prompt' cannot both be true");
    }
    // Unsaid, a final assistant message is continued; add_generation_prompt true alone asks for
    // a new turn.
    const bool continued = cont ? *cont : gen ? !*gen : true;
    r.continue_final = assistant_last && continued;
    if (gen && !*gen && !r.continue_final) {
        return unsupported("add_generation_prompt",
                           "add_generation_prompt false without a final assistant message to "
                           "continue");
    }
    return std::nullopt;
}

}  // namespace

SamplingParams server_sampling_defaults() {
    SamplingParams s;
    s.temperature = 0.8f;
    s.top_k = 40;
    s.top_p = 0.95f;
    s.min_p = 0.05f;
    return s;
}

ApiResult<GenRequest> parse_chat_request(std::string_view body) {
    auto parsed = parse_object(body);
    if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
    const json& j = std::get<json>(parsed);
    GenRequest r;
    r.endpoint = Endpoint::kChat;
    r.sampling = server_sampling_defaults();
    for (const char* key : {"tools", "functions"}) {
        if (auto it = j.find(key); it != j.end() && !it->is_null() && !(it->is_array() && it->empty())) {
            return unsupported(key, "tools and function calling");
        }
    }
    if (auto it = j.find("response_format"); it != j.end() && !it->is_null()) {
        const auto t = it->is_object() ? it->find("type") : it->end();
        const std::string type =
            it->is_object() && t != it->end() && t->is_string() ? t->get<std::string>() : "";
        if (type == "json_object") {
            r.json_object = true;
        } else if (type != "text") {
            return unsupported("response_format",
                               "a response_format other than text or json_object");
        }
    }
    std::set<std::string> known = kCommonFields;
    known.insert({"messages", "tools", "tool_choice", "functions", "function_call",
                  "response_format", "parallel_tool_calls", "metadata", "store",
                  "continue_final_message", "add_generation_prompt"});
    if (auto e = check_known(j, known, "")) return *e;
    if (auto it = j.find("metadata"); it != j.end() && !it->is_null() && !it->is_object()) {
        return wrong_type("metadata", "an object", *it);
    }
    if (auto it = j.find("store"); it != j.end() && !it->is_null() && !it->is_boolean()) {
        return wrong_type("store", "a boolean", *it);
    }
    if (auto e = read_messages(j, r.messages)) return *e;
    if (auto e = read_continuation(j, r)) return *e;
    if (auto e = read_common(j, r)) return *e;
    return r;
}

ApiResult<GenRequest> parse_completion_request(std::string_view body) {
    auto parsed = parse_object(body);
    if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
    const json& j = std::get<json>(parsed);
    GenRequest r;
    r.endpoint = Endpoint::kCompletion;
    r.sampling = server_sampling_defaults();
    std::set<std::string> known = kCommonFields;
    known.insert({"prompt", "echo", "suffix", "best_of"});
    if (auto e = check_known(j, known, "")) return *e;
    if (auto it = j.find("echo"); it != j.end() && !it->is_null()) {
        if (!it->is_boolean()) return wrong_type("echo", "a boolean", *it);
        if (it->get<bool>()) return unsupported("echo", "echo");
    }
    if (auto it = j.find("suffix"); it != j.end() && !it->is_null()) return unsupported("suffix", "suffix (insertion)");
    if (auto it = j.find("best_of"); it != j.end() && !it->is_null() && !it->is_number_integer()) {
        return wrong_type("best_of", "an integer", *it);
    }
    if (auto it = j.find("best_of"); it != j.end() && !it->is_null() && it->get<int64_t>() != 1) {
        return unsupported("best_of", "best_of other than 1");
    }
    auto p = j.find("prompt");
    if (p == j.end() || p->is_null()) return bad("prompt", "'prompt' is required");
    if (p->is_string()) {
        r.prompt = p->get<std::string>();
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
        r.prompt = (*p)[0].get<std::string>();
    } else if (p->is_array() && p->empty()) {
        return bad("prompt", "'prompt' is an empty array");
    } else if (p->is_array() && ((*p)[0].is_number() || (p->size() == 1 && (*p)[0].is_array()))) {
        // Token ids, or a batch of one prompt of token ids ([[1, 2, 3]]).
        const bool nested = (*p)[0].is_array();
        const json& ids = nested ? (*p)[0] : *p;
        const std::string at = nested ? "prompt[0]" : "prompt";
        if (ids.empty()) return bad(at, fmt::format("'{}' is an empty array", at));
        r.prompt_is_ids = true;
        for (size_t i = 0; i < ids.size(); ++i) {
            const json& t = ids[i];
            const std::string field = fmt::format("{}[{}]", at, i);
            if (!t.is_number_integer()) return wrong_type(field, "an integer token id", t);
            const int64_t id = t.get<int64_t>();
            if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
                return bad(field, fmt::format("{}: token id {} is out of range", field, id));
            }
            r.prompt_ids.push_back(static_cast<TokenId>(id));
        }
    } else if (p->is_array() && p->size() > 1) {
        return unsupported("prompt", "a batch of several prompts");
    } else if (p->is_array()) {
        return wrong_type("prompt[0]", "a string, a token id or an array of token ids", (*p)[0]);
    } else {
        return wrong_type("prompt", "a string, an array of one string or an array of token ids", *p);
    }
    if (auto e = read_common(j, r)) return *e;
    return r;
}

ApiResult<TokenizeRequest> parse_tokenize_request(std::string_view body) {
    auto parsed = parse_object(body);
    if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
    const json& j = std::get<json>(parsed);
    if (auto e = check_known(j, {"content", "add_special", "parse_special", "with_pieces", "model"}, "")) return *e;
    TokenizeRequest r;
    Fields f{j, "", std::nullopt};
    auto content = f.string("content");
    if (f.err) return *f.err;
    if (!content) return bad("content", "'content' is required");
    r.content = *content;
    if (auto v = f.boolean("add_special")) r.add_special = *v;
    if (auto v = f.boolean("parse_special")) r.parse_special = *v;
    if (auto v = f.boolean("with_pieces")) r.with_pieces = *v;
    f.string("model");
    if (f.err) return *f.err;
    return r;
}

ApiResult<std::vector<TokenId>> parse_detokenize_request(std::string_view body, int32_t n_vocab) {
    auto parsed = parse_object(body);
    if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
    const json& j = std::get<json>(parsed);
    if (auto e = check_known(j, {"tokens", "model"}, "")) return *e;
    auto it = j.find("tokens");
    if (it == j.end() || it->is_null()) return bad("tokens", "'tokens' is required");
    if (!it->is_array()) return wrong_type("tokens", "an array of token ids", *it);
    std::vector<TokenId> ids;
    for (size_t i = 0; i < it->size(); ++i) {
        const json& t = (*it)[i];
        const std::string field = fmt::format("tokens[{}]", i);
        if (!t.is_number_integer()) return wrong_type(field, "an integer token id", t);
        const int64_t id = t.get<int64_t>();
        if (id < 0 || id >= n_vocab) {
            return bad(field, fmt::format("{}: token id {} is outside the vocabulary [0, {})", field, id, n_vocab));
        }
        ids.push_back(static_cast<TokenId>(id));
    }
    return ids;
}

ApiResult<int> check_lengths(const GenRequest& r, int64_t n_prompt, int64_t n_ctx, int default_max) {
    const char* prompt_field = r.endpoint == Endpoint::kChat ? "messages" : "prompt";
    if (n_prompt == 0) return bad(prompt_field, fmt::format("'{}' has no tokens", prompt_field));
    if (n_prompt >= n_ctx) {
        return bad(prompt_field,
                   fmt::format("the prompt has {} tokens but the context holds {} (with room for at "
                               "least one new token)", n_prompt, n_ctx),
                   "context_length_exceeded");
    }
    const int64_t room = n_ctx - n_prompt;
    if (!r.max_tokens) return static_cast<int>(std::min<int64_t>(default_max, room));
    const std::string& field = r.max_tokens_field;
    if (*r.max_tokens > n_ctx) {
        return bad(field, fmt::format("'{}' is {} but the context holds {} tokens", field, *r.max_tokens, n_ctx));
    }
    if (*r.max_tokens > room) {
        return bad(field,
                   fmt::format("'{}' is {} but the prompt's {} tokens leave {} of the context's {}",
                               field, *r.max_tokens, n_prompt, room, n_ctx),
                   "context_length_exceeded");
    }
    return *r.max_tokens;
}

}  // namespace lazyllm::server
