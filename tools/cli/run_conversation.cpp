#include "cli/run_conversation.h"

#include <fmt/format.h>
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

// The prompt of the chat so far, ending with the assistant's opening, as token ids (the
// template's special-token texts parsed, as run --chat and serve).
Result<std::vector<TokenId>> chat_ids(const Engine& e, const std::vector<ChatMessage>& messages) {
    const std::string text = e.chat_prompt(messages);
    LAZYLLM_TRY(check_bytes_encodable(e.tokenizer(), text, "the message"));
    return e.tokenizer().encode(text, /*parse_special=*/true);
}

// The answer streamed to stdout as it comes. Ctrl-C ends it early (the text so far stays in the
// chat); output that cannot be written ends it too (main() reports that).
Result<std::string> stream_answer(Conversation& conv, std::span<const TokenId> ids,
                                  const TurnOptions& opts) {
    const CatchInterrupt interrupt;
    LAZYLLM_ASSIGN_OR_RETURN(TurnDelta delta, conv.start_turn(ids, opts));
    std::string answer;
    while (true) {
        if (!delta.text.empty()) {
            std::fwrite(delta.text.data(), 1, delta.text.size(), stdout);
            std::fflush(stdout);
            answer += delta.text;
        }
        if (delta.done) break;
        if (g_interrupted.load(std::memory_order_relaxed) || std::ferror(stdout)) {
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

}  // namespace

// The context of a chat without -c: kConversationContext, or more where the first turn needs
// it (its prompt, an answer and kConversationRoom tokens for more turns); never over the model's.
int64_t default_context(int64_t n_ctx_train, int64_t first_prompt, int n_predict) {
    const int64_t need = first_prompt + (n_predict > 0 ? n_predict : 256) + kConversationRoom;
    return std::min(n_ctx_train, std::max(kConversationContext, need));
}

int run_conversation(const Engine& e, const ConversationSetup& setup) {
    const int64_t n_ctx_train = e.summary().n_ctx_train;
    const bool tty = ::isatty(STDIN_FILENO) != 0;
    if (tty) {
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
        if (turn > 1 || message.empty()) {
            do {
                if (tty) {
                    std::fputs("\n> ", stdout);
                    std::fflush(stdout);
                }
                if (!read_message(message)) {
                    if (tty) std::fputs("\n", stdout);  // the shell's prompt on a line of its own
                    return kExitOk;
                }
            } while (message.empty());
        }
        messages.push_back({"user", message});
        auto ids = chat_ids(e, messages);
        if (!ids.ok()) {  // a byte the vocabulary cannot encode: say so, and read another
            report(ids.error());
            messages.pop_back();
            --turn;
            continue;
        }
        const auto n_ids = static_cast<int64_t>(ids->size());
        if (conv == nullptr) {
            if (n_ctx == 0) n_ctx = default_context(n_ctx_train, n_ids, setup.n_predict);
            auto opened = e.open_conversation(setup.prune, n_ctx);
            if (!opened.ok()) return report(opened.error());
            conv = std::move(opened).value();
        }
        const int64_t room = n_ctx - n_ids;
        if (room < std::max(1, setup.n_predict)) {
            const char* from = setup.n_ctx > 0 ? "-c" : n_ctx == n_ctx_train ? "the model's" : "the default";
            const bool larger = setup.n_ctx > 0 && setup.n_ctx < n_ctx_train;
            const bool smaller = setup.n_predict > 0 && room > 0;
            return report(make_error(
                ErrorCode::kOutOfRange,
                "the chat with this message has {} tokens; the context of {} ({}) leaves no "
                "room for {}{}",
                n_ids, n_ctx, from,
                setup.n_predict > 0 ? fmt::format("an answer of -n {}", setup.n_predict)
                                    : std::string("an answer"),
                larger || smaller ? fmt::format(" (start again with {}{}{})",
                                                larger ? "a larger -c" : "",
                                                larger && smaller ? " or " : "",
                                                smaller ? "a smaller -n" : "")
                                  : std::string()));
        }
        TurnOptions opts = setup.turn;
        opts.max_new_tokens = setup.n_predict == -1 ? static_cast<int>(room) : setup.n_predict;
        auto answer = stream_answer(*conv, *ids, opts);
        if (!answer.ok()) return report(answer.error());
        if (std::ferror(stdout)) return kExitFailure;  // main() names the failed write
        messages.push_back({"assistant", *answer});
        print_turn(turn, conv->stats(), g_interrupted.load());
    }
}

}  // namespace lazyllm::cli
