// Routes of `lazyllm serve`. Authentication (Bearer API key) and the loading state are checked
// before routing; cpp-httplib enforces the body limit (413); every error body is an OpenAI error
// object.
#include "server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <functional>
#include <string_view>
#include <thread>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/api_response.h"
#include "server/conn_probe.h"
#include "server/cors.h"
#include "server/task_pool.h"

namespace lazyllm::server {

using json = nlohmann::json;

void send_json(httplib::Response& res, int status, const json& j) {
    res.status = status;
    res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
    // OpenAI's SDKs retry a 408 unless told not to: a request past --timeout is not sent again.
    if (e.status == 408) res.set_header("x-should-retry", "false");
    send_json(res, e.status, error_json(e));
}

std::string host_port(const std::string& host, int port) {
    if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
    return fmt::format("{}:{}", host, port);
}

namespace {

using Context = HttpServer::Context;

// Why binding host:port fails, by trying it with a plain socket as cpp-httplib does (its bind
// reports no reason): the system's message, and a hint for the common one.
std::string bind_failure(const std::string& host, int port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* res = nullptr;
    const std::string service = std::to_string(port);
    if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
        return fmt::format("cannot resolve the host ({})", gai_strerror(rc));
    }
    std::string reason = "the address cannot be bound";
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
        const int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) {
            reason = std::strerror(errno);
            continue;
        }
        int yes = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
        const bool bound = ::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 1) == 0;
        const int err = errno;
        close(fd);
        if (bound) continue;  // free now: it was taken a moment ago
        reason = std::strerror(err);
        if (err == EADDRINUSE) {
            reason += " (another server listens there; --port 0 takes a free port)";
        }
        if (err == EACCES) reason += " (ports below 1024 need privileges)";
        break;
    }
    freeaddrinfo(res);
    return reason;
}

// a == b in a time that does not depend on where they differ (a key guessed byte by byte).
bool same_key(std::string_view a, std::string_view b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < a.size(); ++i) {
        diff |= static_cast<unsigned char>(a[i] ^ (b.empty() ? 0 : b[i % b.size()]));
    }
    return diff == 0;
}

// "Bearer KEY": the scheme's case is free (RFC 9110, 11.1), spaces may repeat after it.
bool authorized(const Context& ctx, const httplib::Request& req) {
    if (ctx.cfg.api_key.empty()) return true;
    const std::string auth = req.get_header_value("Authorization");
    constexpr std::string_view kScheme = "bearer ";
    if (auth.size() > kScheme.size() &&
        std::equal(kScheme.begin(), kScheme.end(), auth.begin(), [](char s, char c) {
            return s == static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        })) {
        const size_t key = auth.find_first_not_of(' ', kScheme.size());
        if (key != std::string::npos &&
            same_key(std::string_view(auth).substr(key), ctx.cfg.api_key)) {
            return true;
        }
    }
    return req.has_header("X-Api-Key") &&
           same_key(req.get_header_value("X-Api-Key"), ctx.cfg.api_key);
}

// Paths open without the key: the page (it asks for the key itself) and the health check.
bool public_path(const std::string& path) { return path == "/" || path == "/health"; }

// httplib's task queue over ElasticPool: one thread per open connection, idle ones included.
class ConnectionThreads final : public httplib::TaskQueue {
public:
    ConnectionThreads(size_t min_threads, size_t max_threads)
        : pool_(min_threads, max_threads, std::chrono::seconds(5)) {}
    void enqueue(std::function<void()> fn) override { pool_.enqueue(std::move(fn)); }
    void shutdown() override { pool_.shutdown(); }

private:
    ElasticPool pool_;
};

json model_json(const Context& ctx) {
    const ModelSummary& s = ctx.engine->summary();
    return json{{"id", ctx.cfg.model_name},
                {"object", "model"},
                {"created", static_cast<int64_t>(std::time(nullptr))},
                {"owned_by", "lazyllm"},
                {"meta",
                 {{"arch", s.arch},
                  {"n_layer", s.n_layer},
                  {"n_embd", s.n_embd},
                  {"n_vocab", s.n_vocab},
                  {"n_ctx_train", s.n_ctx_train},
                  {"n_ctx_slot", ctx.scheduler->n_ctx()},
                  {"n_slots", ctx.scheduler->n_slots()},
                  {"isa", s.isa},
                  {"path", s.path}}}};
}

void handle_models(Context& ctx, httplib::Response& res) {
    send_json(res, 200, json{{"object", "list"}, {"data", json::array({model_json(ctx)})}});
}

// GET /v1/models/{id}: the model under its served name (--alias), else OpenAI's 404.
void handle_model(Context& ctx, const std::string& id, httplib::Response& res) {
    if (id == ctx.cfg.model_name) return send_json(res, 200, model_json(ctx));
    send_error(res, ApiError{404,
                             fmt::format("the model '{}' does not exist; this server serves '{}'",
                                         id, ctx.cfg.model_name),
                             "invalid_request_error", "model", "model_not_found"});
}

bool valid_utf8(const std::string& s) {
    try {
        (void)json(s).dump();  // nlohmann's strict dump refuses invalid UTF-8
        return true;
    } catch (const json::type_error&) {
        return false;
    }
}

void handle_tokenize(Context& ctx, const httplib::Request& req, httplib::Response& res) {
    auto parsed = parse_tokenize_request(req.body);
    if (auto* e = std::get_if<ApiError>(&parsed)) return send_error(res, *e);
    const TokenizeRequest& r = std::get<TokenizeRequest>(parsed);
    const Tokenizer& tok = ctx.engine->tokenizer();
    auto hold = hold_text(ctx, req, r.content.size());
    if (auto* e = std::get_if<ApiError>(&hold)) return send_error(res, *e);
    const std::vector<TokenId> ids = tok.encode(r.content, r.parse_special, r.add_special);
    json tokens = json::array();
    for (TokenId id : ids) {
        if (r.with_pieces) {
            // A piece that is not whole UTF-8 (a byte of a longer character) goes out as its
            // bytes, as llama-server sends it; JSON text would turn it into U+FFFD.
            std::string piece = tok.token_to_piece(id, true);
            if (valid_utf8(piece)) {
                tokens.push_back({{"id", id}, {"piece", std::move(piece)}});
            } else {
                const std::vector<uint8_t> bytes(piece.begin(), piece.end());
                tokens.push_back({{"id", id}, {"piece", bytes}});
            }
        } else {
            tokens.push_back(id);
        }
    }
    send_json(res, 200, json{{"tokens", tokens}});
}

void handle_detokenize(Context& ctx, const httplib::Request& req, httplib::Response& res) {
    const Tokenizer& tok = ctx.engine->tokenizer();
    auto parsed = parse_detokenize_request(req.body, tok.n_vocab());
    if (auto* e = std::get_if<ApiError>(&parsed)) return send_error(res, *e);
    send_json(res, 200, json{{"content", tok.decode(std::get<std::vector<TokenId>>(parsed))}});
}

// CORS: a response to a page of another origin carries Access-Control-Allow-Origin when that
// origin may call (so that 401s and errors reach the page too); a preflight (OPTIONS) is
// answered here, before authentication, which browsers never send with it: 204 with the methods
// and the headers asked for, or 403 for an origin --cors-origins leaves out. True when answered.
bool cross_origin(const Context& ctx, const httplib::Request& req, httplib::Response& res) {
    const std::string origin = req.get_header_value("Origin");
    const std::string allow = cors_allow_origin(ctx.cfg.cors_origins, origin);
    if (!allow.empty()) {
        res.set_header("Access-Control-Allow-Origin", allow);
        if (allow != "*") res.set_header("Vary", "Origin");
    }
    if (req.method != "OPTIONS") return false;
    if (!origin.empty() && allow.empty()) {
        send_error(res, ApiError{403,
                                 fmt::format("origin '{}' may not call this server (serve "
                                             "--cors-origins)",
                                             origin),
                                 "invalid_request_error", "", "origin_not_allowed"});
        return true;
    }
    res.status = 204;
    res.set_header("Allow", "GET, POST, OPTIONS");
    if (!allow.empty()) {
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        const std::string asked = req.get_header_value("Access-Control-Request-Headers");
        res.set_header("Access-Control-Allow-Headers",
                       asked.empty() ? "Authorization, Content-Type" : asked);
        res.set_header("Access-Control-Max-Age", "600");
    }
    return true;
}

// The methods a route takes ("" for a path no route serves).
std::string allowed_methods(const std::string& path) {
    for (const char* p : {"/", "/health", "/metrics", "/v1/models"}) {
        if (path == p) return "GET";
    }
    if (path.rfind("/v1/models/", 0) == 0) return "GET";
    for (const char* p : {"/tokenize", "/detokenize", "/v1/chat/completions", "/chat/completions",
                          "/v1/completions", "/completions"}) {
        if (path == p) return "POST";
    }
    return "";
}

// Fills the body of errors that a handler did not write (400, 404, 413 from the library; 405
// for a route asked with another method, which the library answers 404, or 400 when it could
// not read that request's body). True when it did.
bool fill_error(const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return false;
    if (res.status == 404 || res.status == 400) {
        const std::string allow = allowed_methods(req.path);
        if (!allow.empty() && (res.status == 404 || allow.find(req.method) == std::string::npos)) {
            res.status = 405;
            res.set_header("Allow", allow + ", OPTIONS");
        }
    }
    ApiError e;
    e.status = res.status;
    switch (res.status) {
        case 404: e.message = fmt::format("no route for {} {}", req.method, req.path); e.code = "not_found"; break;
        case 413: e.message = "the request body is larger than the server's limit (--max-body)"; e.code = "body_too_large"; break;
        case 405:
            e.message = fmt::format("method {} is not allowed on {} (it takes {})", req.method,
                                    req.path, allowed_methods(req.path));
            e.code = "method_not_allowed";
            break;
        case 400:
            e.message =
                "the request could not be read: a malformed chunked body or header, or a "
                "Content-Encoding other than gzip";
            break;
        default: e.message = fmt::format("HTTP {}", res.status); break;
    }
    send_error(res, e);
    return true;
}

// POST handlers read their body themselves: when cpp-httplib reads a body sent as
// application/x-www-form-urlencoded (curl -d's default type) it refuses more than 8 KiB, and
// this API takes JSON whatever the Content-Type says. --max-body (max_body bytes) applies to
// the body as read: the library checks only a Content-Length, so a chunked body, or a gzip one
// (inflated before it reaches the reader), is cut off here, with a 413.
httplib::Server::HandlerWithContentReader with_body(
    Metrics& metrics, size_t max_body,
    std::function<void(const httplib::Request&, httplib::Response&)> handler) {
    return [&metrics, max_body, handler = std::move(handler)](const httplib::Request& req,
                                                              httplib::Response& res,
                                                              const httplib::ContentReader& read) {
        if (req.is_multipart_form_data()) {
            send_error(res, ApiError{415,
                                     "send the request body as JSON "
                                     "(Content-Type: application/json), not "
                                     "multipart/form-data",
                                     "invalid_request_error", "", "unsupported_media_type"});
            return metrics.request(req.path, res.status);
        }
        httplib::Request with = req;
        bool too_large = false;
        const bool ok = read([&](const char* data, size_t n) {
            if (n > max_body - with.body.size()) {
                too_large = true;
                return false;
            }
            with.body.append(data, n);
            return true;
        });
        if (too_large) {
            res.status = 413;
            return;
        }
        if (!ok) {
            if (res.status < 400) res.status = 400;  // the library sets 413 past --max-body
            return;
        }
        handler(with, res);
    };
}

}  // namespace

HttpServer::HttpServer(ServerConfig cfg) : ctx_(std::make_unique<Context>()), http_(std::make_unique<httplib::Server>()) {
    ctx_->cfg = std::move(cfg);
    Context& ctx = *ctx_;
    httplib::Server& s = *http_;
    // Threads kept while idle: enough for every slot and queue place, and a few quick requests.
    const size_t kept = static_cast<size_t>(std::max(ctx.cfg.scheduler.n_slots, 0)) +
                        static_cast<size_t>(std::max(ctx.cfg.scheduler.queue_capacity, 0)) + 16;
    const auto most = static_cast<size_t>(ctx.cfg.http_threads);
    s.new_task_queue = [kept, most] { return new ConnectionThreads(std::min(kept, most), most); };
    // SO_REUSEADDR alone: a restart binds past the old socket's TIME_WAIT, and a port another
    // server listens on is refused. cpp-httplib's default sets SO_REUSEPORT, under which a
    // second `serve` on the same port started silently and the kernel split the clients
    // between the two.
    s.set_socket_options([](socket_t sock) {
        int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    s.set_payload_max_length(ctx.cfg.max_body_bytes);
    s.set_keep_alive_timeout(ctx.cfg.keep_alive_s);
    s.set_read_timeout(ctx.cfg.idle_timeout_s, 0);
    s.set_write_timeout(ctx.cfg.idle_timeout_s, 0);
    s.set_pre_routing_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
        if (cross_origin(ctx, req, res)) return httplib::Server::HandlerResponse::Handled;
        if (public_path(req.path)) return httplib::Server::HandlerResponse::Unhandled;
        if (!authorized(ctx, req)) {
            send_error(res, ApiError{401,
                                     "missing or wrong API key (Authorization: Bearer KEY, or "
                                     "X-Api-Key: KEY)",
                                     "invalid_request_error", "", "invalid_api_key"});
            ctx.metrics.request(req.path, 401);
            return httplib::Server::HandlerResponse::Handled;
        }
        if (!ctx.ready.load(std::memory_order_acquire)) {
            res.set_header("Retry-After", "1");
            send_error(res, ApiError{503, "the model is loading", "server_error", "", "loading"});
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    // Errors no handler wrote (no route, a body over the limit or cut short) are counted here.
    s.set_error_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
        if (fill_error(req, res)) ctx.metrics.request(req.path, res.status);
    });
    s.Get("/health", [&ctx](const httplib::Request&, httplib::Response& res) {
        if (!ctx.ready.load(std::memory_order_acquire)) {
            return send_json(res, 503, json{{"status", "loading"}});
        }
        send_json(res, 200, json{{"status", "ok"}, {"slots_busy", ctx.scheduler->busy_slots()},
                                 {"queue_depth", ctx.scheduler->queue_depth()}});
    });
    s.Get("/", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(web_page_html(), "text/html; charset=utf-8");
    });
    s.Get("/v1/models", [&ctx](const httplib::Request&, httplib::Response& res) {
        handle_models(ctx, res);
        ctx.metrics.request("/v1/models", res.status);
    });
    s.Get("/v1/models/(.+)", [&ctx](const httplib::Request& req, httplib::Response& res) {
        handle_model(ctx, req.matches[1].str(), res);
        ctx.metrics.request("/v1/models/{id}", res.status);
    });
    s.Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
        res.set_content(ctx.metrics.render(ctx.scheduler->queue_depth(), ctx.scheduler->busy_slots(),
                                           ctx.scheduler->n_slots()),
                        "text/plain; version=0.0.4");
    });
    s.Post("/tokenize", with_body(ctx.metrics, ctx.cfg.max_body_bytes,
                                  [&ctx](const httplib::Request& req, httplib::Response& res) {
                                      handle_tokenize(ctx, req, res);
                                      ctx.metrics.request("/tokenize", res.status);
                                  }));
    s.Post("/detokenize", with_body(ctx.metrics, ctx.cfg.max_body_bytes,
                                    [&ctx](const httplib::Request& req, httplib::Response& res) {
                                        handle_detokenize(ctx, req, res);
                                        ctx.metrics.request("/detokenize", res.status);
                                    }));
    for (const char* p : {"/v1/chat/completions", "/chat/completions"}) {
        s.Post(p, with_body(ctx.metrics, ctx.cfg.max_body_bytes,
                            [&ctx](const httplib::Request& req, httplib::Response& res) {
                                handle_generate(ctx, req, res, Endpoint::kChat);
                            }));
    }
    for (const char* p : {"/v1/completions", "/completions"}) {
        s.Post(p, with_body(ctx.metrics, ctx.cfg.max_body_bytes,
                            [&ctx](const httplib::Request& req, httplib::Response& res) {
                                handle_generate(ctx, req, res, Endpoint::kCompletion);
                            }));
    }
}

HttpServer::~HttpServer() {
    stop();
    ctx_->scheduler.reset();
}

Status HttpServer::bind() {
    const std::string& host = ctx_->cfg.host;
    if (ctx_->cfg.port == 0) {
        port_ = http_->bind_to_any_port(host);
    } else {
        port_ = http_->bind_to_port(host, ctx_->cfg.port) ? ctx_->cfg.port : -1;
    }
    if (port_ <= 0) {
        return make_error(ErrorCode::kIo, "cannot listen on {}: {}",
                          host_port(host, ctx_->cfg.port), bind_failure(host, ctx_->cfg.port));
    }
    widen_listen_backlog(
        port_, 512);  // a burst of clients connects at once; the kernel caps it at somaxconn
    return Status();
}

void HttpServer::listen() {
    listening_.store(true);
    if (!stopped_.load()) http_->listen_after_bind();
    listening_.store(false);
}

void HttpServer::stop() {
    stopped_.store(true);
    // httplib's stop() does nothing before its loop runs: a listen() that has begun but whose
    // loop has not started yet would then serve forever. It starts within moments (or returns,
    // having seen stopped_).
    while (listening_.load() && !http_->is_running()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    http_->stop();
    // httplib's stop() closes the listening socket only; a connection's thread waits out the
    // idle timeout (30 s) on an idle keep-alive connection, a browser tab's, before listen()
    // can return.
    if (port_ > 0) shutdown_connections(port_);
}

void HttpServer::set_engine(std::unique_ptr<Engine> engine) {
    ctx_->engine = std::move(engine);
    SchedulerConfig sc = ctx_->cfg.scheduler;
    if (sc.n_ctx <= 0) sc.n_ctx = ctx_->engine->summary().n_ctx_train;
    ctx_->scheduler = std::make_unique<Scheduler>(*ctx_->engine, sc, ctx_->metrics);
    ctx_->ready.store(true, std::memory_order_release);
}

}  // namespace lazyllm::server
