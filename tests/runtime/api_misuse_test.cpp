// The public API used wrongly, as an integrator might: every misuse is an error that names it,
// never an abort (a server process holds other sessions), and nothing is corrupted.
#include <gtest/gtest.h>
#include <omp.h>

#include <memory>
#include <string>
#include <vector>

#include "lazyllm/conversation.h"
#include "lazyllm/engine.h"
#include "runtime/eos_first.h"
#include "support/tiny_model.h"

namespace lazyllm {
namespace {

std::unique_ptr<Engine> misuse_engine(const std::string& name) {
    testing::TinyModelSpec spec;
    spec.n_layer = 2;
    spec.seed = 9;
    return load_tiny_engine(name, spec, /*n_threads=*/1);
}

bool has(const Error& e, const std::string& what) {
    return e.message().find(what) != std::string::npos;
}

TEST(ApiMisuse, ConversationCallsOutOfOrderAreErrors) {
    auto engine = misuse_engine("lazyllm_misuse_conv.gguf");
    ASSERT_NE(engine, nullptr);
    auto opened = engine->open_conversation(PruneOptions{}, 64);
    ASSERT_TRUE(opened.ok());
    Conversation& c = **opened;
    auto early = c.next();  // before any turn
    ASSERT_FALSE(early.ok());
    EXPECT_TRUE(has(early.error(), "outside a turn")) << early.error().message();
    TurnOptions t;
    t.max_new_tokens = 3;
    t.ignore_eos = true;
    const std::vector<TokenId> prompt = prompt_ids(10, engine->summary().n_vocab);
    ASSERT_TRUE(c.start_turn(prompt, t).ok());
    auto during = c.truncate(2);  // a turn in progress
    ASSERT_FALSE(during.ok());
    EXPECT_TRUE(has(during.error(), "during a turn")) << during.error().message();
    c.abandon();  // a cancelled request, then a late next()
    auto late = c.next();
    ASSERT_FALSE(late.ok());
    EXPECT_TRUE(has(late.error(), "abandoned")) << late.error().message();
    c.abandon();  // twice: nothing
    for (int64_t n : {int64_t{-1}, c.n_past() + 1}) {
        auto bad = c.truncate(n);
        ASSERT_FALSE(bad.ok()) << n;
        EXPECT_TRUE(has(bad.error(), "outside [0, n_past")) << bad.error().message();
    }
    // A full turn after all that, and next() once it is done.
    ASSERT_TRUE(c.truncate(0).ok());
    auto d = c.start_turn(prompt, t);
    ASSERT_TRUE(d.ok());
    while (!d->done) {
        d = c.next();
        ASSERT_TRUE(d.ok()) << d.error().message();
    }
    EXPECT_EQ(c.generated().size(), 3u);
    EXPECT_FALSE(c.next().ok());
}

// next_batch checks every conversation before any steps: each once, in a turn, of one engine.
// A conversation keeps its engine's model and tokenizer: it goes on after the Engine is gone,
// answering as one whose engine lives.
TEST(ApiMisuse, AConversationOutlivesItsEngine) {
    auto engine = misuse_engine("lazyllm_misuse_outlive.gguf");
    ASSERT_NE(engine, nullptr);
    const std::vector<TokenId> prompt = prompt_ids(10, engine->summary().n_vocab);
    TurnOptions t;
    t.max_new_tokens = 4;
    t.ignore_eos = true;
    const auto answer = [&](Conversation& c) {
        auto d = c.start_turn(prompt, t);
        EXPECT_TRUE(d.ok());
        while (d.ok() && !d->done) d = c.next();
        return c.generated();
    };
    auto alive = engine->open_conversation(PruneOptions{}, 64);
    auto orphan = engine->open_conversation(PruneOptions{}, 64);
    ASSERT_TRUE(alive.ok() && orphan.ok());
    const std::vector<TokenId> want = answer(**alive);
    alive->reset();
    engine.reset();
    EXPECT_EQ(answer(**orphan), want);
}

TEST(ApiMisuse, NextBatchRefusesDuplicatesAndStrangers) {
    auto engine = misuse_engine("lazyllm_misuse_batch.gguf");
    auto other = misuse_engine("lazyllm_misuse_batch_other.gguf");
    ASSERT_NE(engine, nullptr);
    ASSERT_NE(other, nullptr);
    const std::vector<TokenId> prompt = prompt_ids(10, engine->summary().n_vocab);
    TurnOptions t;
    t.max_new_tokens = 4;
    t.ignore_eos = true;
    auto a = engine->open_conversation(PruneOptions{}, 64);
    auto b = engine->open_conversation(PruneOptions{}, 64);
    auto s = other->open_conversation(PruneOptions{}, 64);
    ASSERT_TRUE(a.ok() && b.ok() && s.ok());
    ASSERT_TRUE((*a)->start_turn(prompt, t).ok());
    ASSERT_TRUE((*a)->next().ok());  // emits the first token: a decode step is due
    ASSERT_TRUE((*s)->start_turn(prompt, t).ok());
    std::vector<TurnDelta> deltas;
    const auto refused = [&](std::vector<Conversation*> convs, const std::string& what) {
        const int64_t before = (*a)->n_past();
        const Status st = Conversation::next_batch(convs, deltas);
        ASSERT_FALSE(st.ok()) << what;
        EXPECT_TRUE(has(st.error(), what)) << st.error().message();
        EXPECT_EQ((*a)->n_past(), before) << what;  // nothing stepped
    };
    refused({a->get(), a->get()}, "conversation 1 is conversation 0 again");
    refused({a->get(), b->get()}, "conversation 1 is not in a turn");
    refused({a->get(), s->get()}, "conversation 1 is of another engine");
    refused({a->get(), nullptr}, "conversation 1 is null");
    // Alone, the same conversation goes on as if nothing had happened.
    std::vector<TokenId> got;
    while (true) {
        auto d = (*a)->next();
        ASSERT_TRUE(d.ok());
        if (d->done) break;
    }
    got = (*a)->generated();
    auto fresh = engine->open_conversation(PruneOptions{}, 64);
    ASSERT_TRUE(fresh.ok());
    auto d = (*fresh)->start_turn(prompt, t);
    ASSERT_TRUE(d.ok());
    while (!d->done) d = (*fresh)->next();
    EXPECT_EQ(got, (*fresh)->generated());
}

TEST(ApiMisuse, OptionsOutOfRangeAreNamed) {
    auto engine = misuse_engine("lazyllm_misuse_opts.gguf");
    ASSERT_NE(engine, nullptr);
    const std::vector<TokenId> prompt = prompt_ids(10, engine->summary().n_vocab);
    RunOptions ro;
    ro.max_new_tokens = -5;
    auto g = engine->generate(prompt, ro);
    ASSERT_FALSE(g.ok());
    EXPECT_TRUE(has(g.error(), "max new tokens must be >= 0, got -5")) << g.error().message();
    EXPECT_FALSE(engine->validate(ro).ok());
    ro.max_new_tokens = 2;
    ro.prune.policy = static_cast<Policy>(42);
    g = engine->generate(prompt, ro);
    ASSERT_FALSE(g.ok());
    EXPECT_TRUE(has(g.error(), "unknown policy 42")) << g.error().message();
    EXPECT_FALSE(engine->open_conversation(ro.prune, 64).ok());
    auto neg = engine->open_conversation(PruneOptions{}, -1);
    ASSERT_FALSE(neg.ok());
    EXPECT_TRUE(has(neg.error(), "context size must be >= 0, got -1")) << neg.error().message();
    EngineOptions eo;
    eo.model_path = "unused.gguf";
    eo.n_threads = 100000;  // beyond what libgomp can create
    const Status st = Engine::check_options(eo);
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(has(st.error(), "threads must be in [0, 1024], got 100000"))
        << st.error().message();
}

// Loading with n_threads leaves the caller's OpenMP thread count as it was.
TEST(ApiMisuse, LoadKeepsTheCallersOpenMpThreads) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(3);
    auto engine = misuse_engine("lazyllm_misuse_omp.gguf");
    EXPECT_EQ(omp_get_max_threads(), 3);
    omp_set_num_threads(before);
    ASSERT_NE(engine, nullptr);
    RunOptions ro;
    ro.max_new_tokens = 2;
    EXPECT_TRUE(engine->generate(prompt_ids(10, engine->summary().n_vocab), ro).ok());
}

}  // namespace
}  // namespace lazyllm
