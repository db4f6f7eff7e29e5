// The HTTP side of `lazyllm serve` (cpp-httplib): routes, API key, body limit, error objects.
// It listens before the model is loaded (GET /health says "loading" meanwhile, as llama-server
// does); set_engine() makes the API live.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lazyllm/engine.h"
#include "server/api_request.h"
#include "server/metrics.h"
#include "server/scheduler.h"
#include "server/text_budget.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace lazyllm::server {

// host:port as a URL takes it: an IPv6 literal in brackets ([::1]:8080).
std::string host_port(const std::string& host, int port);

struct ServerConfig {
    std::string host = "127.0.0.1";
    int port = 8080;
    std::string api_key;               // "" : no authentication
    std::vector<std::string> cors_origins = {"*"};  // parse_cors_origins (server/cors.h); {}: off
    size_t max_body_bytes = 8u << 20;  // larger bodies get 413
    int timeout_s = 600;               // per request, from submission to the last token
    int keep_alive_s = 5;     // a connection with no request in progress: closed after this
    int idle_timeout_s = 30;  // a socket read or write waits at most this
    int default_max_tokens = 512;      // when a request gives none (capped by the context)
    int http_threads = 512;            // connections served at once (server/task_pool.h)
    SchedulerConfig scheduler;
    PruneOptions default_prune;        // serve --lazy ... flags
    std::string model_name;            // the id /v1/models lists
};

class HttpServer {
public:
    explicit HttpServer(ServerConfig cfg);
    ~HttpServer();

    // Binds host:port (port 0: any free port); an error naming the address and the reason
    // (a port in use: another server listens there) when binding fails.
    Status bind();
    int port() const { return port_; }
    // Serves until stop(); blocks. Returns at once after a stop(), also one that came first.
    void listen();
    // Ends listen(), from any thread, whether or not listen() has begun.
    void stop();
    // The model is loaded: the API goes live.
    void set_engine(std::unique_ptr<Engine> engine);

    struct Context;  // what the handlers share (http_server.cpp, gen_handler.cpp)

private:
    std::unique_ptr<Context> ctx_;
    std::unique_ptr<httplib::Server> http_;
    int port_ = 0;
    std::atomic<bool> listening_{false}, stopped_{false};
};

// Shared by the handlers.
struct HttpServer::Context {
    ServerConfig cfg;
    Metrics metrics;
    std::unique_ptr<Engine> engine;
    std::unique_ptr<Scheduler> scheduler;
    std::atomic<bool> ready{false};
    std::atomic<uint64_t> next_id{1};
    // Request text tokenized at once (prompts, /tokenize): 16 MiB, at most about 900 MB of
    // tokenizer scratch; a larger text (--max-body above it) runs alone.
    TextBudget text_budget{size_t{16} << 20};
};

void send_error(httplib::Response& res, const ApiError& e);
void send_json(httplib::Response& res, int status, const nlohmann::json& j);
// Takes `bytes` of ctx.text_budget for this request, waiting while other requests' texts fill
// it: 503 once the request's time limit (--timeout) passes first, 499 (never seen) when the
// client goes away or the server stops (gen_handler.cpp).
ApiResult<std::unique_ptr<TextBudgetHold>> hold_text(HttpServer::Context& ctx,
                                                     const httplib::Request& req, size_t bytes);
// POST /v1/chat/completions and /v1/completions (gen_handler.cpp).
void handle_generate(HttpServer::Context& ctx, const httplib::Request& req, httplib::Response& res,
                     Endpoint endpoint);
// GET / (web_page.cpp).
const char* web_page_html();

}  // namespace lazyllm::server
