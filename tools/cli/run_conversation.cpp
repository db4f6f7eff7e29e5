#include "cli/run_conversation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <vector>

#include "cli/common.h"
#include "cli/interrupt.h"
#include "lazyllm/tokenizer.h"

namespace lazyllm::cli {

namespace {

// One message from stdin: a line less its "\n" or "\r\n", joined with the next while it ends in
// '\' (llama-cli's continuation). False at the end of input with nothing read.
bool read_message(std::string& message) {
    message.clear();
    std::string line;
    bool any = false;
    while (std::getline(std::cin, line)) {
        any = true;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line.back() != '\\') {
            message += line;
            return true;
        }
        line.pop_back();
        message += line + "\n";
    }
    return any;
}

bool blank(std::string_view text) {
    return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// The context of a chat without -c: kConversationContext, or more where the first turn needs
// it (its prompt, an answer and kConversationRoom tokens for more turns); never over the model's.
int64_t default_context(int64_t n_ctx_train, int64_t first_prompt, int n_predict) {
    const int64_t need = first_prompt + (n_predict > 0 ? n_predict : 256) + kConversationRoom;
    return std::min(n_ctx_train, std::max(kConversationContext, need));
}

struct Answer {
    std::string text;
    bool interrupted = false;  // ended by Ctrl-C
};

// The answer streamed to stdout as it comes. Ctrl-C ends it early (the text so far stays in the
// chat); output that cannot be written ends it too (main() reports that).
Result<Answer> stream_answer(Conversation& conv, std::span<const TokenId> ids,
                             const TurnOptions& opts) {
    const CatchInterrupt interrupt;
    LAZYLLM_ASSIGN_OR_RETURN(TurnDelta delta, conv.start_turn(ids, opts));
    Answer answer;
    while (true) {
        if (!delta.text.empty()) {
            std::fwrite(delta.text.data(), 1, delta.text.size(), stdout);
            std::fflush(stdout);
            answer.text += delta.text;
        }
        if (delta.done) break;
        answer.interrupted = g_interrupted.load(std::memory_order_relaxed);
        if (answer.interrupted || std::ferror(stdout)) {
            conv.abandon();
            break;
        }
        LAZYLLM_ASSIGN_OR_RETURN(delta, conv.next());
    }
    std::fputs("\n", stdout);
    std::fflush(stdout);
    return answer;
}

void print_turn(int turn, const TurnStats& t, bool interrupted) {
    const double tps = t.n_gen > 1 && t.decode_ms > 0 ? (t.n_gen - 1) * 1e3 / t.decode_ms : 0.0;
    std::fprintf(stderr,
                 "lazyllm: turn %d: prompt %lld tokens (%lld cached), TTFT %.1f ms, %lld tokens "
                 "at %.1f tok/s (%s), %.1f%% of the new prompt's token-layers computed\n",
                 turn, static_cast<long long>(t.n_prompt), static_cast<long long>(t.n_cached),
                 t.ttft_ms, static_cast<long long>(t.n_gen), tps,
                 interrupted ? "interrupted" : t.stop_reason.c_str(),
                 100.0 * t.prefill_fraction_computed);
}

// A chat that no longer fits: what would make it fit, of what can still change.
Error no_room(const ConversationSetup& setup, int64_t n_ids, int64_t n_ctx, int64_t n_ctx_train,
              int64_t room) {
    const char* from = setup.n_ctx > 0        ? "-c"
                       : n_ctx == n_ctx_train ? "the model's"
                                              : "the default";
    std::vector<std::string> ways;
    if (n_ctx < n_ctx_train) ways.push_back("a larger -c");
    if (setup.n_predict > 1 && room > 0) ways.push_back("a smaller -n");
    return make_error(ErrorCode::kOutOfRange,
                      "the chat with this message has {} tokens; the context of {} ({}) leaves no "
                      "room for {}{}",
                      n_ids, n_ctx, from,
                      setup.n_predict > 0 ? fmt::format("an answer of -n {}", setup.n_predict)
                                          : std::string("an answer"),
                      ways.empty()
                          ? std::string()
                          : fmt::format(" (start again with {})", fmt::join(ways, " or ")));
}

}  // namespace

int run_conversation(const Engine& e, const ConversationSetup& setup) {
    const int64_t n_ctx_train = e.summary().n_ctx_train;
    // The texts given on the command line: a byte without a token is a usage error up front.
    if (setup.system) {
        if (Status st = check_bytes_encodable(e.tokenizer(), *setup.system, "--system"); !st.ok()) {
            return report_usage(st.error());
        }
    }
    if (Status st = check_bytes_encodable(e.tokenizer(), setup.first_message, "the first message");
        !st.ok()) {
        return report_usage(st.error());
    }
    const bool tty_in = ::isatty(STDIN_FILENO) != 0;
    // The "> " prompt: on stdout in a terminal, on stderr when stdout goes elsewhere.
    std::FILE* prompt_to = ::isatty(STDOUT_FILENO) != 0 ? stdout : stderr;
    if (tty_in) {
        std::fprintf(stderr,
                     "lazyllm: chat, policy %s: end a line with '\\' to go on, Ctrl-C stops an "
                     "answer, Ctrl-D ends the chat\n",
                     std::string(policy_name(setup.prune.policy)).c_str());
    }
    std::unique_ptr<Conversation> conv;  // opened at the first message, sized for it
    int64_t n_ctx = setup.n_ctx;
    std::vector<ChatMessage> messages;
    if (setup.system) messages.push_back({"system", *setup.system});
    std::string message = setup.first_message;
    for (int turn = 1;; ++turn) {
        while (blank(message)) {
            if (tty_in) {
                std::fputs("\n> ", prompt_to);
                std::fflush(prompt_to);
            }
            if (!read_message(message)) {
                if (tty_in) std::fputs("\n", prompt_to);  // the shell's prompt on a line of its own
                return kExitOk;
            }
            if (Status st = check_bytes_encodable(e.tokenizer(), message, "the message");
                !st.ok()) {
                report(st.error());  // say so, and read another
                message.clear();
            }
        }
        messages.push_back({"user", message});
        message.clear();
        const std::vector<TokenId> ids =
            e.tokenizer().encode(e.chat_prompt(messages), /*parse_special=*/true);
        const auto n_ids = static_cast<int64_t>(ids.size());
        if (conv == nullptr) {
            if (n_ctx == 0) n_ctx = default_context(n_ctx_train, n_ids, setup.n_predict);
            auto opened = e.open_conversation(setup.prune, n_ctx);
            if (!opened.ok()) return report(opened.error());
            conv = std::move(opened).value();
        }
        const int64_t room = n_ctx - n_ids;
        if (room < std::max(1, setup.n_predict)) {
            return report(no_room(setup, n_ids, n_ctx, n_ctx_train, room));
        }
        TurnOptions opts = setup.turn;
        opts.max_new_tokens = setup.n_predict == -1 ? static_cast<int>(room) : setup.n_predict;
        // Each turn its own draws (a seeded chat is reproducible, its answers not alike).
        if (opts.sampling.seed) *opts.sampling.seed += static_cast<uint64_t>(turn - 1);
        auto answer = stream_answer(*conv, ids, opts);
        if (!answer.ok()) return report(answer.error());
        if (std::ferror(stdout)) return kExitFailure;  // main() names the failed write
        messages.push_back({"assistant", answer->text});
        print_turn(turn, conv->stats(), answer->interrupted);
    }
}

}  // namespace lazyllm::cli
