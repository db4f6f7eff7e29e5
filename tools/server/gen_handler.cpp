// POST /v1/chat/completions and /v1/completions: parse and check the request, tokenize, queue a
// Job on the scheduler (503 with Retry-After when the queue is full), then either wait for the
// whole answer or stream it as Server-Sent Events. A client that goes away cancels its job.
#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <ctime>
#include <optional>

#include "server/api_response.h"
#include "server/conn_probe.h"
#include "server/http_server.h"

namespace lazyllm::server {

using json = nlohmann::json;

namespace {

constexpr auto kPoll = std::chrono::milliseconds(100);

const char* endpoint_path(Endpoint e) {
    return e == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
}

}  // namespace

ApiResult<std::unique_ptr<TextBudgetHold>> hold_text(HttpServer::Context& ctx,
                                                     const httplib::Request& req, size_t bytes) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(ctx.cfg.timeout_s);
    int fd = -2;  // found on the first wait (a /proc scan): most requests never wait
    bool gone = false;
    const auto give_up = [&] {
        if (fd == -2) fd = find_connection_socket(req.remote_addr, req.remote_port, req.local_port);
        gone = peer_closed(fd);
        return gone || std::chrono::steady_clock::now() >= deadline;
    };
    if (!ctx.text_budget.acquire(bytes, give_up)) {
        if (gone) return ApiError{499, "the client went away", "invalid_request_error", "", ""};
        return ApiError{503,
                        fmt::format("the server is busy tokenizing other requests' text; {} s "
                                    "passed: retry later",
                                    ctx.cfg.timeout_s),
                        "server_error", "", "tokenizer_busy"};
    }
    return std::make_unique<TextBudgetHold>(ctx.text_budget, bytes);
}

namespace {

// A byte the vocabulary has no token for would vanish from the prompt (llama-server drops it
// silently): a 400 naming the message or prompt that holds it.
std::optional<ApiError> dropped_byte(const Tokenizer& tok, const GenRequest& r) {
    const auto check = [&](std::string_view text, std::string param) -> std::optional<ApiError> {
        const std::optional<size_t> at = tok.unencodable_byte(text);
        if (!at) return std::nullopt;
        return ApiError{400,
                        fmt::format("{}: byte 0x{:02X} at offset {} has no token in the model's "
                                    "vocabulary (the tokenizer would drop it)",
                                    param, static_cast<uint8_t>(text[*at]), *at),
                        "invalid_request_error", param, ""};
    };
    if (r.endpoint != Endpoint::kChat) return check(r.prompt, "prompt");
    for (size_t i = 0; i < r.messages.size(); ++i) {
        if (auto e = check(r.messages[i].content, fmt::format("messages[{}].content", i))) return e;
    }
    return std::nullopt;
}

// The prompt's token ids: the chat template over the messages, or the completion prompt.
// Special-token texts are parsed as in llama-server (its prompts may carry template markers).
ApiResult<std::vector<TokenId>> prompt_tokens(HttpServer::Context& ctx, const httplib::Request& req,
                                              const GenRequest& r) {
    const Tokenizer& tok = ctx.engine->tokenizer();
    if (r.endpoint == Endpoint::kCompletion && r.prompt_is_ids) {
        for (size_t i = 0; i < r.prompt_ids.size(); ++i) {
            if (r.prompt_ids[i] >= tok.n_vocab()) {
                return ApiError{400, fmt::format("prompt[{}]: token id {} is outside the vocabulary [0, {})", i, r.prompt_ids[i], tok.n_vocab()),
                                "invalid_request_error", fmt::format("prompt[{}]", i), ""};
            }
        }
        return r.prompt_ids;
    }
    if (auto e = dropped_byte(tok, r)) return *e;
    const std::string text = r.endpoint == Endpoint::kChat
                                 ? ctx.engine->chat_prompt(r.messages, r.continue_final)
                                 : r.prompt;
    auto hold = hold_text(ctx, req, text.size());
    if (auto* e = std::get_if<ApiError>(&hold)) return *e;
    return tok.encode(text, /*parse_special=*/true);
}

// Everything a request needs before it is queued; an ApiError when it cannot run.
ApiResult<std::shared_ptr<Job>> make_job(HttpServer::Context& ctx, const httplib::Request& req,
                                         const GenRequest& r) {
    auto ids = prompt_tokens(ctx, req, r);
    if (auto* e = std::get_if<ApiError>(&ids)) return *e;
    auto job = std::make_shared<Job>();
    job->prompt = std::move(std::get<std::vector<TokenId>>(ids));
    auto max = check_lengths(r, static_cast<int64_t>(job->prompt.size()), ctx.scheduler->n_ctx(),
                             ctx.cfg.default_max_tokens);
    if (auto* e = std::get_if<ApiError>(&max)) return *e;
    job->turn.max_new_tokens = std::get<int>(max);
    job->turn.sampling = r.sampling;
    job->turn.stop = r.stop;
    const int32_t n_vocab = ctx.engine->tokenizer().n_vocab();
    for (size_t i = 0; i < r.stop_ids.size(); ++i) {
        if (r.stop_ids[i] >= n_vocab) {
            return ApiError{400,
                            fmt::format("stop_token_ids[{}]: token id {} is outside the "
                                        "vocabulary [0, {})",
                                        i, r.stop_ids[i], n_vocab),
                            "invalid_request_error", fmt::format("stop_token_ids[{}]", i), ""};
        }
    }
    job->turn.stop_ids = r.stop_ids;
    if (r.min_tokens > job->turn.max_new_tokens) {
        return ApiError{400,
                        fmt::format("'min_tokens' is {} but at most {} new tokens are made ({})",
                                    r.min_tokens, job->turn.max_new_tokens,
                                    r.max_tokens ? "'" + r.max_tokens_field + "'"
                                                 : "the default, capped by the room left"),
                        "invalid_request_error", "min_tokens", ""};
    }
    job->turn.min_new_tokens = r.min_tokens;
    job->turn.json_object = r.json_object;
    if (r.json_object && r.endpoint == Endpoint::kChat && r.continue_final) {
        job->turn.json_prefix = r.messages.back().content;  // the answer goes on from it
        if (auto st = check_json_prefix(job->turn.json_prefix); !st.ok()) {
            return ApiError{400,
                            st.error().message() +
                                " (the final assistant message in 'messages', which the "
                                "answer continues; add_generation_prompt: true starts a new one)",
                            "invalid_request_error", "messages", ""};
        }
    }
    job->turn.ignore_eos = r.ignore_eos;
    job->turn.logprobs = r.logprobs;
    if (auto st = validate(r.sampling); !st.ok()) {
        return ApiError{400, st.error().message(), "invalid_request_error", "", ""};
    }
    job->prune = ctx.cfg.default_prune;
    if (r.prune) {
        auto p = to_prune_options(*r.prune, ctx.engine->summary().n_layer, ctx.cfg.default_prune);
        if (!p.ok()) {
            return ApiError{400, "lazyllm: " + p.error().message(), "invalid_request_error",
                            "lazyllm", ""};
        }
        job->prune = *p;
    }
    RunOptions ro;
    ro.prune = job->prune;
    if (auto st = ctx.engine->validate(ro); !st.ok()) {
        return ApiError{400, "lazyllm: " + st.error().message(), "invalid_request_error", "lazyllm", ""};
    }
    job->prune_key = prune_key(job->prune);
    job->cache_prompt = r.cache_prompt;
    job->deadline = std::chrono::steady_clock::now() + std::chrono::seconds(ctx.cfg.timeout_s);
    return job;
}

ResponseHead make_head(HttpServer::Context& ctx, const GenRequest& r) {
    ResponseHead h;
    h.endpoint = r.endpoint;
    h.id = fmt::format("{}-{}-{}", r.endpoint == Endpoint::kChat ? "chatcmpl" : "cmpl",
                       static_cast<int64_t>(std::time(nullptr)), ctx.next_id++);
    h.created = static_cast<int64_t>(std::time(nullptr));
    h.model = r.model.empty() ? ctx.cfg.model_name : r.model;
    return h;
}

// Waits for the whole answer; cancels the job if the client disconnects meanwhile.
void respond_whole(HttpServer::Context& ctx, const std::shared_ptr<Job>& job, const ResponseHead& h,
                   int fd, httplib::Response& res) {
    std::unique_lock<std::mutex> lock(job->mu);
    while (!job->done) {
        job->cv.wait_for(lock, kPoll);
        if (!job->done && peer_closed(fd)) {
            job->cancelled = true;
            res.status = 499;  // nginx's "client closed request"; never reaches the client
            return;
        }
    }
    if (job->error) {
        send_error(res, *job->error);
        return;
    }
    json logprobs = nullptr;
    if (job->turn.logprobs >= 0) {
        int64_t offset = 0;
        logprobs = logprobs_json(h.endpoint, ctx.engine->tokenizer(), job->logprobs, offset);
    }
    send_json(
        res, 200,
        completion_json(h, job->text, job->stats, job->policy, job->schedule, std::move(logprobs)));
}

// The SSE stream: a chunk per piece of text, the last chunk with finish_reason and timings, the
// usage chunk when asked, then [DONE]. An error after the stream started goes out as an error
// object in a data line (as llama-server does).
struct StreamState {
    std::shared_ptr<Job> job;
    ResponseHead head;
    const Tokenizer* tok = nullptr;
    bool include_usage = false;
    int fd = -1;
    bool sent_first = false;
    bool finished = false;    // [DONE] went out
    int error_status = 0;     // the status of an error sent in the stream
    int64_t text_offset = 0;  // completions' logprobs.text_offset
};

bool stream_step(StreamState& s, httplib::DataSink& sink) {
    Job& job = *s.job;
    std::string text;
    std::vector<TokenLogprob> tokens;
    bool done = false, started = false;
    {
        std::unique_lock<std::mutex> lock(job.mu);
        job.cv.wait_for(lock, kPoll, [&] {
            return !job.text.empty() || !job.logprobs.empty() || job.done ||
                   (job.started && !s.sent_first);
        });
        text.swap(job.text);
        tokens.swap(job.logprobs);
        done = job.done;
        started = job.started;
    }
    if (peer_closed(s.fd)) {
        job.cancelled = true;
        return false;
    }
    auto write = [&](const std::string& data) { return sink.write(data.data(), data.size()); };
    // The tokens' logprobs go with the chunk of text taken with them (a stop string or an
    // unfinished UTF-8 sequence can hold a token's text back to a later chunk).
    auto logprobs = [&]() -> json {
        if (job.turn.logprobs < 0 || tokens.empty()) return nullptr;
        json j = logprobs_json(s.head.endpoint, *s.tok, tokens, s.text_offset);
        tokens.clear();
        return j;
    };
    if ((started || !text.empty()) && !s.sent_first && !(done && job.error)) {
        s.sent_first = true;
        if (!write(sse(chunk_json(s.head, text, true, "", logprobs()))))
            return job.cancelled = true, false;
        text.clear();
    }
    if ((!text.empty() || !tokens.empty()) &&
        !write(sse(chunk_json(s.head, text, false, "", logprobs())))) {
        job.cancelled = true;
        return false;
    }
    if (!done) return true;
    if (job.error) {
        s.error_status = job.error->status;
        json e = error_json(*job.error);
        write(sse(e));
    } else {
        json last = chunk_json(s.head, "", false, finish_reason(job.stats.stop_reason));
        last["timings"] = timings_json(job.stats, job.policy, job.schedule);
        write(sse(last));
        if (s.include_usage) write(sse(usage_chunk_json(s.head, job.stats)));
    }
    s.finished = write("data: [DONE]\n\n");
    sink.done();
    return true;
}

}  // namespace

void handle_generate(HttpServer::Context& ctx, const httplib::Request& req, httplib::Response& res,
                     Endpoint endpoint) {
    const char* path = endpoint_path(endpoint);
    auto parsed = endpoint == Endpoint::kChat ? parse_chat_request(req.body) : parse_completion_request(req.body);
    if (auto* e = std::get_if<ApiError>(&parsed)) {
        send_error(res, *e);
        ctx.metrics.request(path, res.status);
        return;
    }
    const GenRequest& r = std::get<GenRequest>(parsed);
    auto made = make_job(ctx, req, r);
    if (auto* e = std::get_if<ApiError>(&made)) {
        send_error(res, *e);
        ctx.metrics.request(path, res.status);
        return;
    }
    std::shared_ptr<Job> job = std::get<std::shared_ptr<Job>>(made);
    if (!ctx.scheduler->submit(job)) {
        res.set_header("Retry-After", "1");
        send_error(res, ApiError{503, fmt::format("the server is busy: {} slots and a queue of {} are full; retry later",
                                                  ctx.scheduler->n_slots(), ctx.cfg.scheduler.queue_capacity),
                                 "server_error", "", "queue_full"});
        ctx.metrics.request(path, 503);
        return;
    }
    const int fd = find_connection_socket(req.remote_addr, req.remote_port, req.local_port);
    const ResponseHead head = make_head(ctx, r);
    if (!r.stream) {
        respond_whole(ctx, job, head, fd, res);
        ctx.metrics.request(path, res.status);
        return;
    }
    auto state = std::make_shared<StreamState>();
    state->job = job;
    state->head = head;
    state->tok = &ctx.engine->tokenizer();
    state->include_usage = r.include_usage;
    state->fd = fd;
    res.status = 200;
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    // The metrics count a stream when it ends, by how it ended (the 200 went out with the
    // headers): an error sent in it by that error's status (a 408 past --timeout), a client
    // gone before [DONE] as 499, as the whole answers count.
    res.set_chunked_content_provider(
        "text/event-stream",
        [state](size_t, httplib::DataSink& sink) { return stream_step(*state, sink); },
        [state, &metrics = ctx.metrics, path](bool) {
            if (!state->job->done) state->job->cancelled = true;
            const int status = state->error_status != 0 ? state->error_status
                               : state->finished        ? 200
                                                        : 499;
            metrics.request(path, status);
        });
}

}  // namespace lazyllm::server
