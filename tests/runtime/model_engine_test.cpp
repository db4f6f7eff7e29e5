// The default model through the public Engine: what a user sees from `run --chat --lazy`.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "lazyllm/engine.h"
#include "support/model_path.h"

namespace lazyllm {
namespace {

RunOptions greedy(const std::string& preset, const std::string& policy, int n) {
    RunOptions ro;
    ro.max_new_tokens = n;
    ro.sampling.temperature = 0.0f;
    ro.prune.policy = parse_policy(policy).value();
    ro.prune.preset = parse_preset(preset).value();
    return ro;
}

// The default model on 2 threads (the caller skips when it is not fetched).
std::unique_ptr<Engine> default_engine(const std::string& path) {
    EngineOptions eo;
    eo.model_path = path;
    eo.n_threads = 2;
    auto engine = Engine::load(eo);
    EXPECT_TRUE(engine.ok()) << engine.error().message();
    return engine.ok() ? std::move(engine).value() : nullptr;
}

// A chat asking for a pass key hidden in filler text, `reps` sentences of about 22 tokens.
std::vector<TokenId> passkey_chat(const Engine& e, int reps) {
    std::string text;
    for (int i = 0; i < reps; ++i) {
        if (i == reps * 3 / 8)
            text += "The pass key is 71432. Remember it. 71432 is the pass key. ";
        text +=
            "The grass is green. The sky is blue. The sun is yellow. Here we go. There and "
            "back again. ";
    }
    text += "\nWhat is the pass key? Answer with the number and one sentence about it.";
    return e.tokenizer().encode(e.chat_prompt(text), /*parse_special=*/true);
}

// Chats below the safe preset's context floor of 3072 tokens (where its cuts changed full's
// first token on a few prompts in 100): `--lazy` computes every (token, layer) pair and answers
// exactly as full does, token for token, on two short questions (the fast preset with decode
// steps that select, `--lazy=fast --lazy-decode on`, prunes the first and repeats itself:
// "Paris is Paris is ...") and on a 2k-token one.
TEST(ModelEngine, ChatsBelowTheFloorWithLazyEqualFull) {
    LAZYLLM_MODEL_OR_SKIP(path);
    const std::unique_ptr<Engine> engine = default_engine(path);
    ASSERT_NE(engine, nullptr);
    const Engine& e = *engine;
    std::vector<std::vector<TokenId>> prompts;
    for (const char* question :
         {"What is the capital of France?", "Explain what a CPU cache is."}) {
        prompts.push_back(e.tokenizer().encode(e.chat_prompt(question), /*parse_special=*/true));
    }
    prompts.push_back(passkey_chat(e, 90));
    ASSERT_GT(prompts.back().size(), 1800u);
    ASSERT_LT(prompts.back().size(), 3072u);
    for (const std::vector<TokenId>& ids : prompts) {
        auto full = e.generate(ids, greedy("safe", "full", 40));
        auto lazy = e.generate(ids, greedy("safe", "lazy", 40));
        ASSERT_TRUE(full.ok()) << full.error().message();
        ASSERT_TRUE(lazy.ok()) << lazy.error().message();
        EXPECT_EQ(lazy->tokens, full->tokens)
            << ids.size() << " tokens\nfull: " << full->text << "\nlazy: " << lazy->text;
        EXPECT_EQ(lazy->text, full->text);
        EXPECT_DOUBLE_EQ(lazy->fraction_computed, 1.0);
        EXPECT_FALSE(full->tokens.empty());
    }
}

// A chat whose last message is the assistant's is continued from its text (llama-server's
// assistant prefill): the prompt is the turns before it, the assistant's opening and that text,
// with no end of turn, and greedy decoding goes on from there.
TEST(ModelEngine, FinalAssistantMessageIsContinued) {
    LAZYLLM_MODEL_OR_SKIP(path);
    const std::unique_ptr<Engine> engine = default_engine(path);
    ASSERT_NE(engine, nullptr);
    const Engine& e = *engine;
    const ChatMessage user{"user", "What is the capital of France?"};
    const ChatMessage start{"assistant", "The capital of France is"};
    const std::string open = e.chat_prompt({user, start});
    EXPECT_EQ(open, e.chat_prompt({user}) + start.content);
    const std::string closed = e.chat_prompt({user, start}, /*continue_final=*/false);
    EXPECT_NE(closed.find(start.content + "<|im_end|>"), std::string::npos) << closed;
    EXPECT_GT(closed.size(), open.size());
    auto r =
        e.generate(e.tokenizer().encode(open, /*parse_special=*/true), greedy("safe", "full", 6));
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_NE(r->text.find("Paris"), std::string::npos) << r->text;
}

// A caller that stops the answer (Ctrl-C in `run`) keeps all the text of the tokens made: the
// text a stop string's possible start held back is given to the callback and is in the result.
TEST(ModelEngine, StoppedByTheCallbackKeepsTheHeldBackText) {
    LAZYLLM_MODEL_OR_SKIP(path);
    const std::unique_ptr<Engine> engine = default_engine(path);
    ASSERT_NE(engine, nullptr);
    const Engine& e = *engine;
    const std::vector<TokenId> ids = e.tokenizer().encode(
        e.chat_prompt("What is the capital of France?"), /*parse_special=*/true);
    std::string first;  // the first text given to the callback, which stops there
    auto r = e.generate(ids, greedy("safe", "full", 8), [&](std::string_view piece) {
        first = std::string(piece);
        return false;
    });
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_GE(first.size(), 2u) << first;  // "The"
    EXPECT_EQ(r->text, first);
    EXPECT_EQ(r->stop_reason, "callback");
    // A stop string that starts with that text's last byte: the matcher holds the byte back
    // and gives the callback the rest, which stops there.
    RunOptions ro = greedy("safe", "full", 8);
    ro.stop = {first.substr(first.size() - 1) + "\x01"};
    std::string given;
    r = e.generate(ids, ro, [&](std::string_view piece) {
        given += piece;
        return false;
    });
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->stop_reason, "callback");
    EXPECT_EQ(r->text, first);
    EXPECT_EQ(given, first);
}

// A long chat (a passkey in filler text, over the safe preset's floor of 3072 tokens) is pruned
// by the safe preset and by the fast one with repair (`--lazy=fast --lazy-decode off
// --lazy-repair on`), and every generated token is full's: the first came from the pruned
// prefill and is full's on this prompt; the step after it recomputes the pruned prompt from the
// first boundary on.
TEST(ModelEngine, LongChatWithRepairAnswersAsFull) {
    LAZYLLM_MODEL_OR_SKIP(path);
    const std::unique_ptr<Engine> engine = default_engine(path);
    ASSERT_NE(engine, nullptr);
    const Engine& e = *engine;
    const std::vector<TokenId> ids = passkey_chat(e, 150);
    ASSERT_GT(ids.size(), 3072u);
    auto full = e.generate(ids, greedy("safe", "full", 24));
    ASSERT_TRUE(full.ok()) << full.error().message();
    for (const char* preset : {"safe", "fast"}) {
        RunOptions ro = greedy(preset, "lazy", 24);
        if (std::string(preset) == "fast") {
            ro.prune.overrides.prune_decode = false;
            ro.prune.overrides.repair = true;
        }
        auto lazy = e.generate(ids, ro);
        ASSERT_TRUE(lazy.ok()) << lazy.error().message();
        EXPECT_LT(lazy->prefill_fraction_computed, 0.9) << preset;
        EXPECT_EQ(lazy->tokens, full->tokens)
            << preset << "\nfull: " << full->text << "\nlazy: " << lazy->text;
        ASSERT_FALSE(lazy->revivals_per_step.empty());
        EXPECT_GT(lazy->revivals_per_step.front(), 0) << preset << ": the repair step";
    }
}

}  // namespace
}  // namespace lazyllm
