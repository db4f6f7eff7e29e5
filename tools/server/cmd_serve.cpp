// lazyllm serve [-m MODEL] [--host H] [--port P] [--parallel N] [--queue N] [pruning flags]
// An OpenAI-compatible HTTP server (docs/server.md). It binds first, prints the address, then
// loads the model (GET /health answers "loading" meanwhile). SIGINT / SIGTERM stop it.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/options.h"
#include "lazyllm/memory.h"
#include "server/cors.h"
#include "server/http_server.h"
#include "server/thread_name.h"

namespace lazyllm::cli {

namespace {

struct ServeArgs {
    EngineFlags engine;
    PruneFlags prune;
    server::ServerConfig cfg;
    std::string alias;
    std::string batch_decode = "on";
    std::string cors_origins = "*";
};

int default_parallel() { return std::clamp(usable_cores(), 2, 8); }

// Takes SIGINT / SIGTERM on a thread of its own (sigwait; they are blocked everywhere), so no
// handler touches shared state, and stops the server on the first. Joined on destruction, before
// the server it stops goes: a signal sent to that thread ends its wait.
class StopOnSignal {
public:
    StopOnSignal(server::HttpServer& http, const sigset_t& signals)
        : signals_(signals), thread_([this, &http] {
              server::name_this_thread("lazyllm-signal");
              int sig = 0;
              sigwait(&signals_, &sig);
              if (done_.load()) return;
              std::fprintf(stderr, "lazyllm serve: signal %d, stopping\n", sig);
              http.stop();
          }) {}
    ~StopOnSignal() {
        done_.store(true);
        pthread_kill(thread_.native_handle(), SIGTERM);  // after a signal: stays pending, unread
        thread_.join();
    }
    StopOnSignal(const StopOnSignal&) = delete;
    StopOnSignal& operator=(const StopOnSignal&) = delete;

private:
    sigset_t signals_;
    std::atomic<bool> done_{false};
    std::thread thread_;  // last: starts once the members above are set
};

int run_serve(ServeArgs& a) {
    auto prune = to_prune_options(a.prune, a.engine);
    if (!prune.ok()) return report(prune.error());
    a.cfg.default_prune = *prune;
    a.cfg.scheduler.batch_decode = a.batch_decode == "on";
    auto origins = server::parse_cors_origins(a.cors_origins);
    if (!origins.ok()) return report(origins.error());
    a.cfg.cors_origins = *origins;
    if (a.cfg.scheduler.n_slots < 1 || a.cfg.scheduler.queue_capacity < 0) {
        return report(Error(ErrorCode::kInvalidArgument, "--parallel must be >= 1 and --queue >= 0"));
    }
    auto path = resolve_model_path(a.engine.model);
    if (!path.ok()) return report(path.error());
    a.engine.model = *path;
    a.cfg.model_name = a.alias.empty() ? std::filesystem::path(*path).filename().string() : a.alias;

    // SIGINT / SIGTERM are taken by one thread (sigwait), so no handler touches shared state;
    // a client that goes away must not kill the process with SIGPIPE.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    server::HttpServer http(a.cfg);
    if (Status bound = http.bind(); !bound.ok()) return report(bound.error());
    std::fprintf(stderr, "lazyllm serve: listening on http://%s\n",
                 server::host_port(a.cfg.host, http.port()).c_str());
    std::thread listener([&] {
        server::name_this_thread("lazyllm-listen");
        http.listen();
    });
    const StopOnSignal stop_on_signal(http, stop_signals);

    // The model loads on a thread that ends with the load. OpenMP keeps a pool of workers for
    // each thread that opens a parallel region, and libgomp stops spin-waiting once its threads
    // outnumber the cores: a loading pool left beside the scheduler's (where generation runs)
    // made every parallel region of a decode step wait on a futex, decoding at a quarter of
    // `lazyllm run`'s rate on two cores.
    std::optional<Result<std::unique_ptr<Engine>>> loaded;
    std::thread([&] {
        server::name_this_thread("lazyllm-load");
        try {
            loaded.emplace(load_engine(a.engine));
        } catch (const std::bad_alloc&) {  // main() reports it for the other commands
            loaded.emplace(make_error(ErrorCode::kOutOfRange,
                                      "out of memory loading the model (its sizes or -c need more "
                                      "than this machine has)"));
        }
    }).join();
    auto& engine = *loaded;
    if (!engine.ok()) {
        http.stop();
        listener.join();
        return report(engine.error());
    }
    const ModelSummary& s = (*engine)->summary();
    // The defaults every request starts from must be valid, or each request would be refused
    // as its client's fault.
    RunOptions defaults;
    defaults.prune = a.cfg.default_prune;
    Status st = (*engine)->validate(defaults);
    if (!st.ok()) st = st.error().with_context("the pruning flags");
    if (st.ok() && a.cfg.scheduler.n_ctx == 1) {
        st = make_error(ErrorCode::kOutOfRange,
                        "-c 1 holds no request: a prompt token and a new one need at least 2");
    }
    if (st.ok() && a.cfg.scheduler.n_ctx > s.n_ctx_train) {
        st = make_error(ErrorCode::kOutOfRange, "-c {} is over the model's training context of {}",
                        a.cfg.scheduler.n_ctx, s.n_ctx_train);
    }
    if (st.ok()) {
        // Each slot holds a K/V cache of its context: at least 2 bytes per value (f16), for K
        // and V of every layer. A context far beyond the machine (a hostile context_length of
        // 100M tokens, or -c too large for --parallel) is refused here, not when a slot opens.
        const int64_t n_ctx = a.cfg.scheduler.n_ctx > 0 ? a.cfg.scheduler.n_ctx : s.n_ctx_train;
        const double need = 2.0 * 2.0 * s.n_layer * static_cast<double>(n_ctx) * s.n_head_kv *
                            s.head_dim * a.cfg.scheduler.n_slots;
        const auto avail = static_cast<double>(available_memory_bytes());
        if (avail > 0.0 && need > avail) {
            st = make_error(ErrorCode::kOutOfRange,
                            "{} slots of {} tokens (-c, else the model's context_length) need at "
                            "least {:.0f} MiB of K/V cache, more than the {:.0f} MiB available: "
                            "give a smaller -c or --parallel",
                            a.cfg.scheduler.n_slots, n_ctx, need / 1048576.0, avail / 1048576.0);
        }
    }
    if (!st.ok()) {
        http.stop();
        listener.join();
        return report_usage(st.error());
    }
    warn_chat_template(**engine);
    std::fprintf(stderr, "lazyllm serve: %s loaded in %.0f ms (%s, %d threads), %d slots, queue %d\n",
                 s.path.c_str(), s.load_ms, s.isa.c_str(), s.n_threads, a.cfg.scheduler.n_slots,
                 a.cfg.scheduler.queue_capacity);
    http.set_engine(std::move(engine).value());
    std::fprintf(stderr, "lazyllm serve: ready\n");
    listener.join();
    return kExitOk;
}

}  // namespace

Runner add_serve(CLI::App& app) {
    auto a = std::make_shared<ServeArgs>();
    a->cfg.scheduler.n_slots = default_parallel();
    add_engine_flags(app, a->engine);
    add_chat_template_flag(app, a->engine);
    app.add_option("--host", a->cfg.host, "Address to listen on (default 127.0.0.1)");
    app.add_option("--port", a->cfg.port, "Port (default 8080; 0: any free port, printed)")
        ->check(CLI::Range(0, 65535));
    app.add_option("--parallel", a->cfg.scheduler.n_slots,
                   "Slots: requests generated at once, each with its own cache (default: cores, 2-8)");
    app.add_option("--queue", a->cfg.scheduler.queue_capacity,
                   "Requests waiting for a slot; beyond, 503 with Retry-After (default 16)");
    app.add_option("-c,--ctx-size", a->cfg.scheduler.n_ctx,
                   "Context per slot (default: the model's training context)")
        ->check(kNonNegative);
    app.add_option("-n,--n-predict", a->cfg.default_max_tokens,
                   "New tokens when a request gives no max_tokens (default 512)")
        ->check(kPositive);
    app.add_option("--api-key", a->cfg.api_key,
                   "Require the key: Authorization: Bearer KEY, or X-Api-Key: KEY")
        ->check(kNonEmpty);  // an empty key (an unset variable) must not open the server
    app.add_option("--cors-origins", a->cors_origins,
                   "Web pages of other origins browsers let call the API: * (any, the default, as "
                   "llama-server), none, or a comma list (http://localhost:3000,...)");
    app.add_option("--max-body", a->cfg.max_body_bytes, "Largest request body in bytes (default 8 MiB); 413 beyond")
        ->check(kPositive);
    app.add_option("--timeout", a->cfg.timeout_s, "Per-request time limit in seconds (default 600)")
        ->check(kPositive);
    app.add_option("--keep-alive", a->cfg.keep_alive_s,
                   "Seconds a connection with no request in progress (new, or between requests) "
                   "is kept open (default 5, as llama-server); each costs about 0.15% of a core "
                   "while it waits")
        ->check(kPositive);
    app.add_option(
           "--idle-timeout", a->cfg.idle_timeout_s,
           "Seconds a socket read or write may wait: a silent or stalled client mid-request "
           "(default 30)")
        ->check(kPositive);
    app.add_option("--http-threads", a->cfg.http_threads,
                   "Connections served at once, a thread each, idle keep-alive ones included "
                   "(default 512); beyond, new connections wait for a free thread")
        ->check(kPositive);
    app.add_option("--batch-decode", a->batch_decode,
                   "on: the decode steps of generating slots run as one forward (full policy); "
                   "off: one after another (default on)")
        ->check(CLI::IsMember({"on", "off"}));
    app.add_option("-a,--alias", a->alias, "Model id in /v1/models and responses (default: the file name)");
    add_prune_flags(app, a->prune);
    return [a] { return run_serve(*a); };
}

}  // namespace lazyllm::cli
