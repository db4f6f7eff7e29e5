// lazyllm run [-m MODEL] (-p TEXT | -f FILE) [--chat] [-n N] [sampling] [pruning] [--json]
// Streams tokens to stdout as they are made; reports prompt tokens, TTFT, prefill and decode
// speed on stderr. --json prints one machine-readable result instead.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/interrupt.h"
#include "cli/options.h"
#include "cli/run_conversation.h"
#include "lazyllm/engine.h"
#include "lazyllm/memory.h"

namespace lazyllm::cli {

namespace {

struct RunArgs {
    EngineFlags engine;
    PruneFlags prune;
    SamplingParams sampling;
    std::string prompt, file;
    std::optional<std::string> system;  // given, even empty: a system message
    bool chat = false;
    bool no_parse_special = false;
    int n_predict = 256;
    int64_t n_ctx = 0;
    std::vector<std::string> stop;
    bool ignore_eos = false;
    bool json = false;
    bool verbose = false;
    bool profile = false;
    bool truncate_middle = false;
    bool compare = false;
    int compare_reps = 3;
    bool conversation = false;
    CLI::Option* prompt_opt = nullptr;
    CLI::Option* file_opt = nullptr;
    CLI::Option* n_predict_opt = nullptr;
};

double resident_mib() { return static_cast<double>(resident_bytes()) / (1 << 20); }

// With -n -1 the token budget is the context's room (prompt_ids), so a run that spends it
// stopped because the context is full: the engine, given only the budget, says "length".
// A stop by the text callback is Ctrl-C's (CatchInterrupt).
void name_context_stop(const RunArgs& a, GenerateResult& r) {
    if (a.n_predict == -1 && r.stop_reason == "length") r.stop_reason = "context";
    if (r.stop_reason == "callback" && g_interrupted.load()) r.stop_reason = "interrupted";
}

// One run's result; its fields are documented in docs/cli_json.md (schema:
// docs/cli_run.schema.json).
nlohmann::json result_json(const GenerateResult& r, const ModelSummary& s, uint64_t seed) {
    nlohmann::json j;
    j["text"] = r.text;
    j["model"] = s.path;
    j["policy"] = r.policy;
    j["schedule"] = r.schedule;
    j["n_prompt"] = r.n_prompt;
    j["n_gen"] = r.n_gen;
    j["tokens"] = r.tokens;
    j["stop_reason"] = r.stop_reason;
    j["ttft_ms"] = r.ttft_ms;
    j["prefill_tokens_per_s"] = r.prefill_tps;
    j["decode_ms"] = r.decode_ms;
    j["decode_tokens_per_s"] = r.decode_tps;
    j["total_ms"] = r.total_ms;
    j["prefill_pct_computed"] = 100.0 * r.prefill_fraction_computed;
    j["pct_computed"] = 100.0 * r.fraction_computed;
    j["first_token_verified"] = r.first_token_verified;
    j["prefill_rows_per_layer"] = r.prefill_rows_per_layer;
    j["prefill_tail_rows_per_layer"] = r.prefill_tail_rows_per_layer;
    j["revivals_per_step"] = r.revivals_per_step;
    j["threads"] = s.n_threads;
    j["isa"] = s.isa;
    j["gemm"] = s.gemm;
    j["decode_weights"] = s.decode;
    j["prefill_weights"] = s.prefill_weights;
    j["seed"] = seed;
    const auto ops = [](const std::vector<OpTime>& times) {
        nlohmann::json p = nlohmann::json::array();
        for (const auto& o : times) p.push_back({{"op", o.op}, {"ms", o.ms}, {"gflops", o.gflops}});
        return p;
    };
    if (!r.profile.empty()) j["profile"] = ops(r.profile);
    if (!r.decode_profile.empty()) j["decode_profile"] = ops(r.decode_profile);
    return j;
}

void print_op_times(const char* title, const std::vector<OpTime>& times) {
    double total = 0.0;
    for (const auto& o : times) total += o.ms;
    std::fprintf(stderr, "\n%-16s %10s %7s %10s\n", title, "ms", "share", "GFLOP/s");
    for (const auto& o : times) {
        std::fprintf(stderr, "%-16s %10.2f %6.1f%% %10s\n", o.op.c_str(), o.ms, 100.0 * o.ms / total,
                     o.gflops > 0 ? fmt::format("{:.0f}", o.gflops).c_str() : "");
    }
}

void print_profile(const GenerateResult& r) {
    print_op_times("prefill op", r.profile);
    if (!r.decode_profile.empty()) {
        const std::string title = fmt::format("decode op ({})", r.revivals_per_step.size());
        print_op_times(title.c_str(), r.decode_profile);
    }
}

// --compare: the same prompt with full prefill and with the pruning policy (lazy by default),
// after a short warm-up, in `compare_reps` alternating rounds (full, then pruned); each policy
// reports its fastest round (interference on a shared machine only adds time), answers and TTFT
// side by side.
int run_compare(const RunArgs& a, const Engine& e, const std::vector<TokenId>& ids, RunOptions ro) {
    RunOptions full = ro;
    full.prune = PruneOptions{};
    {
        RunOptions warm = full;
        warm.max_new_tokens = 2;
        const size_t n_warm = std::min<size_t>(ids.size(), 64);
        auto w = e.generate(std::span<const TokenId>(ids.data(), n_warm), warm);
        if (!w.ok()) return report(w.error());
    }
    struct Runs {
        std::optional<GenerateResult> best;
        std::vector<double> ttft_ms;
    };
    Runs rf, rl;
    for (int rep = 0; rep < a.compare_reps; ++rep) {
        for (auto [runs, opts] : {std::pair{&rf, &full}, std::pair{&rl, &ro}}) {
            auto r = e.generate(ids, *opts);
            if (!r.ok()) return report(r.error());
            name_context_stop(a, *r);
            runs->ttft_ms.push_back(r->ttft_ms);
            if (!runs->best || r->ttft_ms < runs->best->ttft_ms) runs->best = std::move(r).value();
        }
    }
    const GenerateResult& f = *rf.best;
    const GenerateResult& l = *rl.best;
    const double speedup = f.ttft_ms / l.ttft_ms;
    if (a.json) {
        nlohmann::json j;
        j["full"] = result_json(f, e.summary(), *full.sampling.seed);
        j["pruned"] = result_json(l, e.summary(), *ro.sampling.seed);
        j["ttft_speedup"] = speedup;
        j["same_answer"] = f.text == l.text;
        j["reps"] = a.compare_reps;
        j["full_ttft_ms_runs"] = rf.ttft_ms;
        j["pruned_ttft_ms_runs"] = rl.ttft_ms;
        std::printf("%s\n", j.dump(2).c_str());
        return kExitOk;
    }
    auto one_line = [](std::string t) {
        for (char& ch : t) if (ch == '\n') ch = ' ';
        return t;
    };
    auto join = [](const std::vector<double>& v) {
        std::string out;
        for (double x : v) out += fmt::format("{}{:.1f}", out.empty() ? "" : ", ", x);
        return out;
    };
    std::printf("prompt: %lld tokens\n\n", static_cast<long long>(f.n_prompt));
    std::printf("[full] %s\n", one_line(f.text).c_str());
    std::printf("[%s] %s\n\n", l.policy.c_str(), one_line(l.text).c_str());
    // The last column is the end-to-end latency: prompt in -> the last token out.
    std::printf("%-10s %10s %14s %12s %12s %14s\n", "policy", "TTFT ms", "prefill tok/s",
                "% prefill", "decode tok/s", "last token ms");
    for (const GenerateResult* r : {&f, &l}) {
        std::printf("%-10s %10.1f %14.1f %11.1f%% %12.1f %14.1f\n", r->policy.c_str(), r->ttft_ms,
                    r->prefill_tps, 100.0 * r->prefill_fraction_computed, r->decode_tps,
                    r->token_ms.empty() ? r->ttft_ms : r->token_ms.back());
    }
    if (l.first_token_verified) {
        std::printf(
            "\n%s found its first token a near tie (its two best logits within verify_margin) "
            "and repaired before it: the first token is full's, and TTFT includes the repair\n",
            l.policy.c_str());
    } else if (l.schedule.find("repair=true") != std::string::npos && l.n_gen > 1 &&
               l.prefill_fraction_computed < 1.0) {
        std::printf(
            "\n%s repairs in its first decode step: it computes the deeper layers its "
            "prefill skipped, so that every later token is full's; that step counts in "
            "its decode tok/s\n",
            l.policy.c_str());
    }
    if (a.compare_reps > 1) {
        std::printf("\nbest of %d alternating runs; TTFT per run (ms): full %s; %s %s\n",
                    a.compare_reps, join(rf.ttft_ms).c_str(), l.policy.c_str(),
                    join(rl.ttft_ms).c_str());
    }
    std::printf("\nschedule: %s\nTTFT speedup: %.2fx, answers %s\n", l.schedule.c_str(), speedup,
                f.text == l.text ? "identical" : "differ");
    return kExitOk;
}

// -v: the model, its load time and memory, the kernels that run.
void print_model(const ModelSummary& s) {
    std::fprintf(stderr,
                 "lazyllm: %s (%s, %d layers), loaded in %.0f ms, weights %.0f MiB, resident %.0f "
                 "MiB\n",
                 s.path.c_str(), s.arch.c_str(), s.n_layer, s.load_ms,
                 static_cast<double>(s.weight_bytes) / (1 << 20), resident_mib());
    std::fprintf(stderr, "lazyllm: isa %s, gemm %s, decode weights %s, %d thread%s\n",
                 s.isa.c_str(), s.gemm.c_str(), s.decode.c_str(), s.n_threads,
                 s.n_threads == 1 ? "" : "s");
    std::fprintf(stderr, "lazyllm: prefill weights %s\n", s.prefill_weights.c_str());
}

// The prompt's token ids, fitted to the context with -n: sets ro.n_ctx and ro.max_new_tokens
// (-n -1: until end of text or a full context); --truncate-middle cuts a prompt that does not
// fit, else it is an error.
Result<std::vector<TokenId>> prompt_ids(const RunArgs& a, const Engine& e,
                                        const std::string& prompt_text, bool chat, RunOptions& ro) {
    const ModelSummary& s = e.summary();
    // Special-token texts (<|im_start|>) become their ids, as llama.cpp's prompt; chat prompts
    // always carry the template's.
    const bool parse_special = chat || !a.no_parse_special;
    LAZYLLM_TRY(check_bytes_encodable(e.tokenizer(), prompt_text, "the prompt"));
    std::vector<TokenId> ids = e.tokenizer().encode(prompt_text, parse_special);
    if (ids.empty()) return Error(ErrorCode::kInvalidArgument, "the prompt has no tokens");
    warn_double_bos(e.tokenizer(), ids);
    const int64_t ctx = a.n_ctx > 0 ? a.n_ctx : s.n_ctx_train;
    const char* ctx_from = a.n_ctx > 0 ? "-c" : "the model's";
    const std::string n_flag =
        fmt::format("{}-n {}", a.n_predict_opt->count() > 0 ? "" : "the default ", a.n_predict);
    const auto n_ids = static_cast<int64_t>(ids.size());
    // What would make it fit, of the flags that can still change.
    const auto ways_out = [&](std::vector<std::string> ways) {
        if (a.n_predict > 1 && n_ids < ctx) ways.push_back("a smaller -n");  // else no help
        if (a.n_ctx > 0 && a.n_ctx < s.n_ctx_train) ways.push_back("a larger -c");
        return ways.empty() ? std::string() : fmt::format(" (use {})", fmt::join(ways, ", or "));
    };
    if (a.n_predict >= ctx && n_ids < ctx) {  // -n alone at fault
        return make_error(ErrorCode::kOutOfRange, "{} does not fit the context of {} tokens ({}){}",
                          n_flag, ctx, ctx_from,
                          ways_out({"-n -1 to generate until the context is full"}));
    }
    const int n_predict =
        a.n_predict == -1 ? static_cast<int>(std::max<int64_t>(1, ctx - n_ids)) : a.n_predict;
    ro.n_ctx = a.n_ctx;
    ro.max_new_tokens = n_predict;
    const int64_t room = ctx - n_predict;
    if (n_ids <= room) return ids;
    if (!a.truncate_middle || room < 2) {
        std::vector<std::string> ways;
        if (!a.truncate_middle && room >= 2) ways.push_back("--truncate-middle to cut the middle");
        return make_error(ErrorCode::kOutOfRange,
                          "the prompt has {} tokens; with {} the context of {} ({}) holds at "
                          "most {}{}",
                          ids.size(), n_flag, ctx, ctx_from, std::max<int64_t>(room, 0),
                          ways_out(std::move(ways)));
    }
    // LongBench-style middle truncation: keep the head and the tail.
    const int64_t half = room / 2;
    std::vector<TokenId> cut(ids.begin(), ids.begin() + half);
    cut.insert(cut.end(), ids.end() - (room - half), ids.end());
    std::fprintf(stderr, "lazyllm: prompt truncated in the middle from %zu to %zu tokens\n",
                 ids.size(), cut.size());
    return cut;
}

// After the streamed text: the run's figures on stderr.
void print_result(const RunArgs& a, const GenerateResult& r, const PruneOptions& asked) {
    std::printf("\n");
    std::fflush(stdout);
    std::fprintf(stderr, "\nlazyllm: policy %s%s%s\n", r.policy.c_str(),
                 r.schedule.empty() ? "" : ", ", r.schedule.c_str());
    if (asked.policy != Policy::kFull && r.policy == "full") {  // engine.cpp, session_options
        std::fprintf(stderr,
                     "lazyllm: the model's %s preset has no layer to cut after: "
                     "nothing was pruned\n",
                     std::string(preset_name(asked.preset)).c_str());
    }
    std::fprintf(stderr, "lazyllm: prompt %lld tokens, TTFT %.1f ms, prefill %.1f tok/s\n",
                 static_cast<long long>(r.n_prompt), r.ttft_ms, r.prefill_tps);
    std::fprintf(stderr,
                 "lazyllm: prompt token-layers computed: %.1f%% in prefill, %.1f%% by the end of "
                 "generation (with decode-step revivals)\n",
                 100.0 * r.prefill_fraction_computed, 100.0 * r.fraction_computed);
    if (r.first_token_verified) {
        std::fprintf(stderr,
                     "lazyllm: the first token was a near tie: repaired before it, so it is "
                     "full's (TTFT includes the repair)\n");
    }
    std::fprintf(stderr, "lazyllm: generated %lld tokens (%s), decode %.1f tok/s\n",
                 static_cast<long long>(r.n_gen), r.stop_reason.c_str(), r.decode_tps);
    if (a.verbose && !r.prefill_rows_per_layer.empty()) {
        std::fprintf(stderr, "lazyllm: prefill rows per layer: %s\n",
                     fmt::format("{}", fmt::join(r.prefill_rows_per_layer, " ")).c_str());
    }
    if (a.verbose) {
        std::fprintf(stderr, "lazyllm: peak resident %.0f MiB while generating\n",
                     static_cast<double>(peak_resident_bytes()) / (1 << 20));
    }
    if (a.profile) print_profile(r);
}

// What --conversation cannot take: one answer's flags, and stdin, which carries its messages.
Status check_conversation_flags(const RunArgs& a) {
    const std::pair<bool, const char*> one_answer[] = {{a.json, "--json"},
                                                       {a.compare, "--compare"},
                                                       {a.truncate_middle, "--truncate-middle"},
                                                       {a.profile, "--profile"},
                                                       {a.no_parse_special, "--no-parse-special"}};
    for (const auto& [given, flag] : one_answer) {
        if (given) {
            return make_error(ErrorCode::kInvalidArgument,
                              "{} is for one answer; --conversation holds a chat", flag);
        }
    }
    if (a.file == "-") {
        return Error(ErrorCode::kInvalidArgument,
                     "-f - reads stdin, which carries --conversation's messages: give the first "
                     "message with -p or -f FILE");
    }
    return {};
}

int run_run(RunArgs& a) {
    const bool prompt_given = a.prompt_opt->count() > 0 || a.file_opt->count() > 0;
    if (a.prompt_opt->count() > 0 && a.file_opt->count() > 0) {
        return report(Error(ErrorCode::kInvalidArgument, "give one of -p TEXT or -f FILE"));
    }
    if (!prompt_given && !a.conversation) {
        return report(Error(ErrorCode::kInvalidArgument,
                            "give one of -p TEXT or -f FILE (or --conversation for a chat)"));
    }
    if (a.conversation) {
        if (auto st = check_conversation_flags(a); !st.ok()) return report(st.error());
    }
    std::string text = a.prompt;
    if (!a.file.empty()) {
        auto t = read_prompt_file(a.file);
        if (!t.ok()) return report_usage(t.error());
        text = std::move(t).value();
    }
    if (text.empty() && prompt_given) {
        return report(Error(ErrorCode::kInvalidArgument, "the prompt is empty"));
    }
    if (a.n_predict < 1 && a.n_predict != -1) {
        return report(make_error(ErrorCode::kInvalidArgument,
                                 "-n must be -1 (until end of text or context) or at least 1, "
                                 "got {}",
                                 a.n_predict));
    }
    // --system applies the chat template as llama.cpp's -sys does (conversation mode).
    const bool chat = a.chat || a.system.has_value() || a.conversation;
    if (!a.engine.chat_template.empty() && !chat) {
        return report(Error(ErrorCode::kInvalidArgument,
                            "--chat-template formats chats: give --chat or --system too"));
    }
    if (auto st = validate(a.sampling); !st.ok()) return report(st.error());
    resolve_seed(a.sampling);
    auto prune = to_prune_options(a.prune, a.engine);
    if (!prune.ok()) return report(prune.error());
    if (a.compare && a.prune.policy == "full") {
        return report(Error(ErrorCode::kInvalidArgument,
                            "--compare runs full beside a pruning policy: --policy full leaves "
                            "nothing to compare (drop it for lazy, or name another policy)"));
    }
    if (a.n_ctx > 0) {  // before the load, as serve's -c (read without the weights)
        auto model = inspect_model(a.engine);
        if (!model.ok()) return report(model.error());
        if (a.n_ctx > model->n_ctx_train) {
            return report(make_error(ErrorCode::kOutOfRange,
                                     "-c {} is over the model's training context of {}", a.n_ctx,
                                     model->n_ctx_train));
        }
    }

    auto engine = load_engine(a.engine);
    if (!engine.ok()) return report(engine.error());
    const Engine& e = **engine;
    const ModelSummary& s = e.summary();
    if (a.verbose) print_model(s);

    if (chat) warn_chat_template(e);
    if (chat && a.verbose) {
        std::fprintf(stderr, "lazyllm: chat template %s (%s)\n", s.chat_template.c_str(),
                     s.chat_template_source.c_str());
    }
    // An empty --system is an empty system message, as HF's apply_chat_template renders it (a
    // template's default system message is for when none is given).
    std::vector<ChatMessage> messages;
    if (a.system) messages.push_back({"system", *a.system});
    messages.push_back({"user", text});
    const std::string prompt_text = chat ? e.chat_prompt(messages) : text;
    RunOptions ro;
    ro.sampling = a.sampling;
    ro.stop = a.stop;
    ro.ignore_eos = a.ignore_eos;
    ro.prune = *prune;
    ro.profile = a.profile;
    if (a.conversation) {
        if (auto st = e.validate(ro); !st.ok()) return report_usage(st.error());
        ConversationSetup setup;
        setup.system = a.system;
        setup.first_message = text;
        setup.n_predict = a.n_predict;
        setup.n_ctx = a.n_ctx;
        setup.turn.sampling = ro.sampling;
        setup.turn.stop = ro.stop;
        setup.turn.ignore_eos = ro.ignore_eos;
        setup.prune = ro.prune;
        std::fprintf(stderr, "lazyllm: seed %llu\n",
                     static_cast<unsigned long long>(*ro.sampling.seed));
        return run_conversation(e, setup);
    }
    auto ids = prompt_ids(a, e, prompt_text, chat, ro);
    if (!ids.ok()) return report(ids.error());
    // The schedule (flags or --schedule FILE) is the user's input: a fault in it is a usage error.
    if (auto st = e.validate(ro); !st.ok()) return report_usage(st.error());
    if (a.compare) {
        std::fprintf(stderr, "lazyllm: seed %llu\n",
                     static_cast<unsigned long long>(*ro.sampling.seed));
        if (ro.prune.policy == Policy::kFull) ro.prune.policy = Policy::kLazy;  // the default
        return run_compare(a, e, *ids, ro);
    }
    const CatchInterrupt interrupt;  // before the seed line: a script may signal once it reads it
    std::fprintf(stderr, "lazyllm: seed %llu\n",
                 static_cast<unsigned long long>(*ro.sampling.seed));

    const bool json = a.json;
    const TextCallback on_text = [json](std::string_view piece) {
        if (!json) {
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
            // Text that cannot be written (a full disk) ends the generation; main() reports it.
            if (std::ferror(stdout)) return false;
        }
        return !g_interrupted.load(std::memory_order_relaxed);
    };
    if (a.verbose) reset_peak_resident();  // -v reports the generation's peak, not the load's
    auto r = e.generate(*ids, ro, on_text);
    if (!r.ok()) return report(r.error());
    name_context_stop(a, *r);
    if (a.json) {
        std::printf("%s\n", result_json(*r, s, *ro.sampling.seed).dump(2).c_str());
    } else {
        print_result(a, *r, ro.prune);
    }
    return r->stop_reason == "interrupted" ? kExitInterrupted : kExitOk;
}

}  // namespace

Runner add_run(CLI::App& app) {
    auto a = std::make_shared<RunArgs>();
    add_engine_flags(app, a->engine);
    a->prompt_opt = app.add_option("-p,--prompt", a->prompt, "Prompt text");
    a->file_opt = app.add_option("-f,--file", a->file,
                                 "Read the prompt from a file (- = stdin); one trailing newline "
                                 "is dropped, as llama.cpp");
    app.add_flag("--chat", a->chat, "Wrap the prompt in the model's chat template as a user message");
    app.add_option("--system", a->system,
                   "System message, also empty; implies --chat (as llama.cpp's -sys)");
    add_chat_template_flag(app, a->engine);
    app.add_flag("--no-parse-special", a->no_parse_special,
                 "Encode special-token texts in the prompt (e.g. <|im_start|>) as plain text "
                 "(default: they become their ids, as llama.cpp's llama-completion; the flag is "
                 "llama-tokenize's; --chat always parses them)");
    a->n_predict_opt = app.add_option(
        "-n,--n-predict", a->n_predict,
        "Maximum new tokens; -1 = until end of text or a full context (default 256)");
    app.add_option("-c,--ctx-size", a->n_ctx,
                   "Context size, at most the model's training context (default: prompt + n, up "
                   "to the model's)")
        ->check(kNonNegative);
    app.add_option("--stop", a->stop, "Stop string (repeatable); not included in the output");
    app.add_flag("--ignore-eos", a->ignore_eos,
                 "Never sample an end-of-generation token: generate -n tokens (as llama.cpp's "
                 "--ignore-eos, which bans them)");
    app.add_flag("--truncate-middle", a->truncate_middle, "Cut the middle of a prompt that does not fit");
    add_sampling_flags(app, a->sampling);
    add_prune_flags(app, a->prune);
    app.add_flag("--json", a->json, "Print one JSON result (fields: docs/cli_json.md)");
    app.add_flag("-v,--verbose", a->verbose, "Load time, memory, ISA, rows per layer");
    app.add_flag("--profile", a->profile, "Time per op kind, for prefill and for the decode steps");
    CLI::Option* compare = app.add_flag(
        "--compare", a->compare,
        "Run full prefill and the pruning policy (default lazy) on the same prompt; print "
        "both answers, TTFT and the speedup");
    app.add_flag("--conversation", a->conversation,
                 "Chat in the terminal (llama-cli's -cnv): each line of stdin is a message ('\\' "
                 "at its end goes on), answers stream to stdout, the cache stays between turns; "
                 "-p / -f give the first message, -n caps each answer, -c the chat (default "
                 "8192, more for a long first message, at most the model's context)");
    app.add_option("--compare-reps", a->compare_reps,
                   "Alternating rounds of --compare (full, then the policy); each policy reports "
                   "its fastest round (default 3)")
        ->check(kPositive)
        ->needs(compare);
    return [a] { return run_run(*a); };
}

}  // namespace lazyllm::cli
