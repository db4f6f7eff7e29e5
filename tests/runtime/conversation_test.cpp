// Conversation (the server's turns): a sampled token's text goes out before the decode step that
// follows it, and a turn generates what Engine::generate does for the same prompt and policy.
// Engine::generate's profile: prefill and the decode steps apart.
#include "lazyllm/conversation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lazyllm/engine.h"
#include "runtime/eos_first.h"
#include "support/tiny_model.h"

namespace lazyllm {
namespace {

testing::TinyModelSpec four_layers() {
    testing::TinyModelSpec spec;
    spec.n_layer = 4;
    spec.seed = 11;
    return spec;
}

std::unique_ptr<Engine> tiny_engine(const std::string& name,
                                    const testing::TinyModelSpec& spec = four_layers()) {
    return load_tiny_engine(name, spec);
}

// LazyLLM whose decode steps only revive (the safe preset's rule) with no context floor, so the
// prompt step defers tokens and the first decode step revives them.
PruneOptions lazy_revive_in_decode() {
    PruneOptions p;
    p.policy = Policy::kLazy;
    Schedule s;
    s.boundaries = {1, 3};
    s.keep = {0.5f, 0.25f};
    s.prune_decode = false;
    p.schedule = s;
    return p;
}

// Schedule::tiers are LazyLLM's: the baselines resolve the same schedule without them.
TEST(Conversation, TiersAreLazysAlone) {
    auto engine = tiny_engine("lazyllm_conv_tiers.gguf");
    ASSERT_NE(engine, nullptr);
    PruneOptions p = lazy_revive_in_decode();
    p.schedule->repair = true;
    p.schedule->tiers = {{32, {2}, {0.5f}}};
    auto lazy = engine->resolve_schedule(p);
    ASSERT_TRUE(lazy.ok()) << lazy.error().message();
    EXPECT_EQ(lazy->tiers.size(), 1u);
    p.policy = Policy::kStatic;
    auto baseline = engine->resolve_schedule(p);
    ASSERT_TRUE(baseline.ok()) << baseline.error().message();
    EXPECT_TRUE(baseline->tiers.empty());
}

TEST(Conversation, FirstTokenGoesOutBeforeTheStepThatRevives) {
    auto engine = tiny_engine("lazyllm_conv_first.gguf");
    ASSERT_NE(engine, nullptr);
    auto conv = engine->open_conversation(lazy_revive_in_decode(), 128);
    ASSERT_TRUE(conv.ok()) << conv.error().message();
    Conversation& c = **conv;
    const std::vector<TokenId> prompt = prompt_ids(40, engine->summary().n_vocab);
    TurnOptions to;
    to.max_new_tokens = 6;
    to.ignore_eos = true;
    to.sampling.temperature = 0.0f;
    ASSERT_TRUE(c.start_turn(prompt, to).ok());
    EXPECT_EQ(c.n_past(), 40);
    auto first = c.next();
    ASSERT_TRUE(first.ok()) << first.error().message();
    EXPECT_FALSE(first->done);
    EXPECT_EQ(c.n_past(), 40) << "the first token went out only after a decode step";
    EXPECT_EQ(c.stats().revived, 0);
    auto second = c.next();
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(c.n_past(), 41);
    EXPECT_GT(c.stats().revived, 0) << "the second call's step revives the deferred tokens";
}

TEST(Conversation, TurnEqualsGenerateAlone) {
    auto engine = tiny_engine("lazyllm_conv_gen.gguf");
    ASSERT_NE(engine, nullptr);
    const std::vector<TokenId> prompt = prompt_ids(36, engine->summary().n_vocab);
    for (const PruneOptions& prune : {PruneOptions{}, lazy_revive_in_decode()}) {
        RunOptions ro;
        ro.max_new_tokens = 7;
        ro.ignore_eos = true;
        ro.sampling.temperature = 0.0f;
        ro.prune = prune;
        auto gen = engine->generate(prompt, ro);
        ASSERT_TRUE(gen.ok()) << gen.error().message();

        auto conv = engine->open_conversation(prune, 128);
        ASSERT_TRUE(conv.ok()) << conv.error().message();
        TurnOptions to;
        to.max_new_tokens = 7;
        to.ignore_eos = true;
        to.sampling.temperature = 0.0f;
        ASSERT_TRUE((*conv)->start_turn(prompt, to).ok());
        std::string text;
        int calls = 0;
        while (true) {
            auto d = (*conv)->next();
            ASSERT_TRUE(d.ok()) << d.error().message();
            text += d->text;
            ++calls;
            if (d->done) break;
            ASSERT_LT(calls, 20);
        }
        EXPECT_EQ(text, gen->text) << policy_name(prune.policy);
        EXPECT_EQ((*conv)->stats().n_gen, 7);
        // 7 tokens: the first from the prompt step, 6 decode steps, none after the last token.
        EXPECT_EQ((*conv)->n_past(), 36 + 6);
    }
}

// Generated ids of a whole turn (greedy, EOS ignored).
std::vector<TokenId> run_turn(Conversation& c, const std::vector<TokenId>& prompt, int n) {
    TurnOptions to;
    to.max_new_tokens = n;
    to.ignore_eos = true;
    to.sampling.temperature = 0.0f;
    if (!c.start_turn(prompt, to).ok()) return {};
    for (int calls = 0; calls < 2 * n + 2; ++calls) {
        auto d = c.next();
        if (!d.ok() || d->done) break;
    }
    return c.generated();
}

// Log-probabilities of a greedy turn's tokens (EOS ignored).
std::vector<float> turn_logprobs(Conversation& c, const std::vector<TokenId>& prompt, int n) {
    TurnOptions to;
    to.max_new_tokens = n;
    to.ignore_eos = true;
    to.sampling.temperature = 0.0f;
    to.logprobs = 1;
    std::vector<float> out;
    if (!c.start_turn(prompt, to).ok()) return out;
    for (int calls = 0; calls < 2 * n + 2; ++calls) {
        auto d = c.next();
        if (!d.ok()) break;
        for (const TokenLogprob& t : d->logprobs) out.push_back(t.logprob);
        if (d->done) break;
    }
    return out;
}

// A prompt sent again (a retry, a regeneration) answers as its first run, to the bit: from the
// logits its first run's prompt step gave, with no step (a one-token step over the cache would
// round differently from that step's last row); or, where decode steps revived its tokens from
// Aux since (LazyLLM without repair), by running it again whole. Any other prompt, or one whose
// cache was cut, runs a step.
TEST(Conversation, TheSamePromptAgainSamplesFromItsPromptStep) {
    auto engine = tiny_engine("lazyllm_conv_again.gguf");
    ASSERT_NE(engine, nullptr);
    const std::vector<TokenId> prompt = prompt_ids(36, engine->summary().n_vocab);
    for (const PruneOptions& prune : {PruneOptions{}, lazy_revive_in_decode()}) {
        auto conv = engine->open_conversation(prune, 128);
        ASSERT_TRUE(conv.ok()) << conv.error().message();
        Conversation& c = **conv;
        const std::vector<float> first = turn_logprobs(c, prompt, 5);
        ASSERT_EQ(first.size(), 5u);
        EXPECT_EQ(c.stats().n_cached, 0);
        const bool revives = prune.policy != Policy::kFull;  // the first decode step revives
        if (revives) {
            EXPECT_GT(c.stats().revived, 0);
        }
        const std::vector<float> again = turn_logprobs(c, prompt, 5);
        EXPECT_EQ(again, first) << policy_name(prune.policy);  // the same steps, row for row
        EXPECT_EQ(c.stats().n_cached, revives ? 0 : 36) << policy_name(prune.policy);
        if (!revives) {
            EXPECT_EQ(c.stats().prompt_ms, 0.0);
        }

        std::vector<TokenId> longer = prompt;
        longer.insert(longer.end(), {5, 6, 7});
        run_turn(c, longer, 2);
        EXPECT_EQ(c.stats().n_cached, 36);
        run_turn(c, prompt, 2);  // the kept logits are the longer prompt's now
        EXPECT_EQ(c.stats().n_cached, 35);
        ASSERT_TRUE(c.truncate(10).ok());
        run_turn(c, prompt, 2);
        EXPECT_EQ(c.stats().n_cached, 10);
    }
}

// A prompt that continues a cached prefix (a request sharing a system prompt or an earlier
// question's text) answers as the same prompt run cold, to the bit: a prompt step's rows attend
// as they would in a longer step (AttentionArgs::row_invariant) and its linear layers give each
// row the same values whatever the rows beside it. Head dim 64 and groups of 3 query heads, so
// that cold prompts of 40-48 tokens take the attention tiles (the bf16 ones from 64 query
// vectors per KV head, where the CPU has them) and suffixes of 1 to 30 tokens fewer; Gemma 3's
// sliding windows of 8 keys too. Prefixes of 8 to 40 tokens.
TEST(Conversation, APromptOverACachedPrefixAnswersAsCold) {
    for (const char* arch : {"llama", "gemma3"}) {
        testing::TinyModelSpec spec;
        spec.arch = arch;
        spec.n_layer = 3;
        spec.n_embd = 192;
        spec.n_head = 3;
        spec.n_head_kv = 1;
        spec.n_ff = 256;
        spec.seed = 12;
        auto engine = tiny_engine(std::string("lazyllm_conv_prefix_") + arch + ".gguf", spec);
        ASSERT_NE(engine, nullptr) << arch;
        const int n_vocab = engine->summary().n_vocab;
        const std::vector<TokenId> first = prompt_ids(48, n_vocab);
        for (const auto& [kept, added] :
             std::vector<std::pair<int, int>>{{40, 1}, {40, 7}, {8, 30}, {20, 2}}) {
            std::vector<TokenId> prompt(first.begin(), first.begin() + kept);
            for (int i = 0; i < added; ++i) prompt.push_back((11 * i + 5) % n_vocab);
            auto cold = engine->open_conversation(PruneOptions{}, 128);
            ASSERT_TRUE(cold.ok());
            const std::vector<float> want = turn_logprobs(**cold, prompt, 6);
            ASSERT_EQ(want.size(), 6u);
            auto warm = engine->open_conversation(PruneOptions{}, 128);
            ASSERT_TRUE(warm.ok());
            ASSERT_EQ(turn_logprobs(**warm, first, 3).size(), 3u);
            const std::vector<float> got = turn_logprobs(**warm, prompt, 6);
            EXPECT_EQ((*warm)->stats().n_cached, kept);
            EXPECT_EQ(got, want) << arch << ": kept " << kept << ", added " << added;
        }
    }
}

// A model whose logits are not finite (token_embd.weight all NaN): a turn stops with the error
// Engine::generate gives, not with a silent end of text (the sampler reads NaN as -inf, so
// token 0, often the end of text, was sampled and the answer was empty).
TEST(Conversation, NonFiniteLogitsEndTheTurnWithAnError) {
    const std::string path = ::testing::TempDir() + "lazyllm_conv_nan.gguf";
    ASSERT_TRUE(testing::write_tiny_model(four_layers(), path).ok());
    ASSERT_TRUE(testing::fill_with_nan(path, "token_embd.weight").ok());
    EngineOptions eo;
    eo.model_path = path;
    eo.n_threads = 1;
    auto engine = Engine::load(eo);
    ASSERT_TRUE(engine.ok()) << engine.error().message();
    auto conv = (*engine)->open_conversation(PruneOptions{}, 64);
    ASSERT_TRUE(conv.ok());
    TurnOptions to;
    to.max_new_tokens = 4;
    auto st = (*conv)->start_turn(prompt_ids(8, (*engine)->summary().n_vocab), to);
    ASSERT_FALSE(st.ok()) << "a turn over NaN logits started";
    EXPECT_NE(st.error().message().find("logits are not finite"), std::string::npos)
        << st.error().message();
}

// next_batch over more conversations than one batched forward takes (Session::max_batch(), 8
// where decode runs on VNNI): the steps go in several forwards, and every turn generates what
// it generates alone.
TEST(Conversation, NextBatchOverMoreThanOneForward) {
    auto engine = tiny_engine("lazyllm_conv_many.gguf");
    ASSERT_NE(engine, nullptr);
    constexpr int kN = 20;
    const int V = engine->summary().n_vocab;
    TurnOptions to;
    to.max_new_tokens = 6;
    to.ignore_eos = true;
    const auto prompt = [&](int i) {
        std::vector<TokenId> ids = prompt_ids(12 + i, V);
        ids[0] = i % V;
        return ids;
    };
    std::vector<std::unique_ptr<Conversation>> convs;
    std::vector<Conversation*> ptrs;
    for (int i = 0; i < kN; ++i) {
        auto c = engine->open_conversation(PruneOptions{}, 64);
        ASSERT_TRUE(c.ok());
        ASSERT_TRUE((*c)->start_turn(prompt(i), to).ok());
        ptrs.push_back(c->get());
        convs.push_back(std::move(*c));
    }
    std::vector<TurnDelta> deltas;
    for (int calls = 0; calls < 12; ++calls) {
        auto st = Conversation::next_batch(ptrs, deltas);
        ASSERT_TRUE(st.ok()) << st.error().message();
        if (std::all_of(deltas.begin(), deltas.end(), [](const TurnDelta& d) { return d.done; })) {
            break;
        }
    }
    for (int i = 0; i < kN; ++i) {
        ASSERT_EQ(ptrs[i]->generated().size(), 6u) << "conversation " << i;
        auto alone = engine->open_conversation(PruneOptions{}, 64);
        ASSERT_TRUE(alone.ok());
        ASSERT_TRUE((*alone)->start_turn(prompt(i), to).ok());
        for (int calls = 0; calls < 12; ++calls) {
            auto d = (*alone)->next();
            ASSERT_TRUE(d.ok());
            if (d->done) break;
        }
        EXPECT_EQ(ptrs[i]->generated(), (*alone)->generated()) << "conversation " << i;
    }
}

// TurnOptions::logprobs: each emitted token's log-softmax and its k most likely alternatives
// (greedy picks the first of them), in start_turn/next and in next_batch alike.
TEST(Conversation, LogprobsOfEachEmittedToken) {
    auto engine = tiny_engine("lazyllm_conv_logprobs.gguf");
    ASSERT_NE(engine, nullptr);
    const std::vector<TokenId> prompt = prompt_ids(20, engine->summary().n_vocab);
    std::vector<std::vector<TokenLogprob>> runs;
    for (bool batched : {false, true}) {
        auto conv = engine->open_conversation(PruneOptions{}, 64);
        ASSERT_TRUE(conv.ok());
        Conversation* c = conv->get();
        TurnOptions to;
        to.max_new_tokens = 5;
        to.ignore_eos = true;
        to.logprobs = 3;
        ASSERT_TRUE(c->start_turn(prompt, to).ok());
        std::vector<TokenLogprob> got;
        std::vector<TurnDelta> deltas;
        for (int calls = 0; calls < 12; ++calls) {
            TurnDelta d;
            if (batched) {
                ASSERT_TRUE(
                    Conversation::next_batch(std::span<Conversation* const>(&c, 1), deltas).ok());
                d = deltas[0];
            } else {
                auto r = c->next();
                ASSERT_TRUE(r.ok());
                d = *r;
            }
            for (const TokenLogprob& t : d.logprobs) got.push_back(t);
            if (d.done) break;
        }
        ASSERT_EQ(got.size(), 5u);
        for (size_t i = 0; i < got.size(); ++i) {
            const TokenLogprob& t = got[i];
            EXPECT_EQ(t.id, c->generated()[i]);
            ASSERT_EQ(t.top.size(), 3u);
            EXPECT_EQ(t.top[0].first, t.id) << "greedy takes the most likely";
            EXPECT_EQ(t.top[0].second, t.logprob);
            EXPECT_LE(t.logprob, 0.0f);
            EXPECT_GE(t.top[0].second, t.top[1].second);
            EXPECT_GE(t.top[1].second, t.top[2].second);
            EXPECT_LE(
                std::exp(t.top[0].second) + std::exp(t.top[1].second) + std::exp(t.top[2].second),
                1.0001f);
        }
        runs.push_back(got);
    }
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(runs[0][i].logprob, runs[1][i].logprob);

    auto conv = engine->open_conversation(PruneOptions{}, 64);
    ASSERT_TRUE(conv.ok());
    TurnOptions off;
    off.max_new_tokens = 2;
    ASSERT_TRUE((*conv)->start_turn(prompt, off).ok());
    auto d = (*conv)->next();
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->logprobs.empty());
    off.logprobs = 21;
    EXPECT_FALSE((*conv)->start_turn(prompt, off).ok());
}

// A matched stop string takes its tokens' logprob entries with its text: the entries cover the
// returned text (OpenAI's and llama-server's), those of the tokens that start before the match.
TEST(Conversation, LogprobsStopWithTheTextAtAStopString) {
    auto engine = tiny_engine("lazyllm_conv_logprobs_stop.gguf");
    ASSERT_NE(engine, nullptr);
    const std::vector<TokenId> prompt = prompt_ids(20, engine->summary().n_vocab);
    struct Run {
        std::string text;
        std::vector<size_t> token_start;  // each emitted token's first byte in text
        std::vector<TokenId> generated, logprob_ids;
    };
    auto run = [&](std::vector<std::string> stop) {
        Run r;
        auto conv = engine->open_conversation(PruneOptions{}, 64);
        EXPECT_TRUE(conv.ok());
        TurnOptions to;
        to.max_new_tokens = 12;
        to.ignore_eos = true;
        to.logprobs = 0;
        to.stop = std::move(stop);
        EXPECT_TRUE((*conv)->start_turn(prompt, to).ok());
        for (int calls = 0; calls < 20; ++calls) {
            auto d = (*conv)->next();
            EXPECT_TRUE(d.ok());
            r.token_start.push_back(r.text.size());
            r.text += d->text;
            for (const TokenLogprob& t : d->logprobs) r.logprob_ids.push_back(t.id);
            // Never an entry ahead of its text: the entries so far cover released text only.
            EXPECT_LE(r.logprob_ids.size(), r.token_start.size());
            if (d->done) break;
        }
        r.generated = (*conv)->generated();
        return r;
    };
    const Run all = run({});
    ASSERT_EQ(all.logprob_ids, all.generated);
    // A stop string of one to three tokens' text, starting at a token after the first, found
    // nowhere earlier.
    size_t k = 0;
    std::string stop;
    for (size_t n = 1; n <= 3 && stop.empty(); ++n) {
        for (size_t i = 1; i + n < all.token_start.size() && stop.empty(); ++i) {
            const size_t begin = all.token_start[i], end = all.token_start[i + n];
            if (begin > 0 && end > begin &&
                all.text.find(all.text.substr(begin, end - begin)) == begin) {
                k = i;
                stop = all.text.substr(begin, end - begin);
            }
        }
    }
    ASSERT_FALSE(stop.empty()) << "no token text to stop at in " << all.text;
    const Run cut = run({stop});
    EXPECT_EQ(cut.text, all.text.substr(0, all.token_start[k]));
    std::vector<TokenId> want;
    for (size_t i = 0; i < k; ++i) {
        if (all.token_start[i] < all.token_start[k]) want.push_back(all.generated[i]);
    }
    EXPECT_EQ(cut.logprob_ids, want) << "stop " << stop << " at token " << k;
    EXPECT_EQ(cut.generated.size(), k + 1) << "the stop string's token was generated";
}

// ignore_eos bans the end-of-generation tokens (llama.cpp's --ignore-eos): on a model whose EOS
// is the token greedy decoding picks first, a run stops at once without it and never samples
// that token with it, in Engine::generate and in a Conversation.
TEST(Conversation, IgnoreEosNeverSamplesTheEndToken) {
    const EosFirst m = eos_first_model("lazyllm_eos_first");
    ASSERT_NE(m.engine, nullptr);
    const TokenId first = m.eos;
    RunOptions ro;
    ro.max_new_tokens = 6;
    auto stops = m.engine->generate(m.prompt, ro);
    ASSERT_TRUE(stops.ok());
    EXPECT_TRUE(stops->tokens.empty());
    ro.ignore_eos = true;
    auto goes_on = m.engine->generate(m.prompt, ro);
    ASSERT_TRUE(goes_on.ok());
    EXPECT_EQ(goes_on->tokens.size(), 6u);
    EXPECT_EQ(std::count(goes_on->tokens.begin(), goes_on->tokens.end(), first), 0);

    auto conv = m.engine->open_conversation(PruneOptions{}, 64);
    ASSERT_TRUE(conv.ok());
    const std::vector<TokenId> turn = run_turn(**conv, m.prompt, 6);
    EXPECT_EQ(turn, goes_on->tokens);
}

// min_new_tokens holds the end-of-generation token back until that many are out (vLLM's
// min_tokens), and a stop id ends the turn when sampled, outside the output (stop_token_ids).
TEST(Conversation, MinTokensAndStopIds) {
    const EosFirst m = eos_first_model("lazyllm_min_first");
    ASSERT_NE(m.engine, nullptr);
    const std::vector<TokenId>& prompt = m.prompt;
    auto conv = m.engine->open_conversation(PruneOptions{}, 64);
    ASSERT_TRUE(conv.ok());
    Conversation& c = **conv;
    auto turn = [&](const TurnOptions& to) {
        auto st = c.start_turn(prompt, to);
        EXPECT_TRUE(st.ok()) << st.error().message();
        for (int calls = 0; st.ok() && calls < 40; ++calls) {
            auto d = c.next();
            if (!d.ok() || d->done) break;
        }
        return c.generated();
    };
    TurnOptions to;
    to.max_new_tokens = 8;
    to.sampling.temperature = 0.0f;
    EXPECT_TRUE(turn(to).empty());  // the end token at once
    EXPECT_EQ(c.stats().stop_reason, "eos");
    to.min_new_tokens = 3;
    const std::vector<TokenId> held = turn(to);
    ASSERT_GE(held.size(), 3u);
    EXPECT_EQ(std::count(held.begin(), held.begin() + 3, m.eos), 0);
    // A stop id: the turn ends before it, with reason stop.
    to.min_new_tokens = 0;
    to.ignore_eos = true;
    const std::vector<TokenId> all = turn(to);
    ASSERT_EQ(all.size(), 8u);
    size_t k = 2;
    while (k < all.size() && std::find(all.begin(), all.begin() + static_cast<ptrdiff_t>(k),
                                       all[k]) != all.begin() + static_cast<ptrdiff_t>(k)) {
        ++k;
    }
    ASSERT_LT(k, all.size()) << "no token after the second that is new";
    to.stop_ids = {all[k]};
    EXPECT_EQ(turn(to), std::vector<TokenId>(all.begin(), all.begin() + static_cast<ptrdiff_t>(k)));
    EXPECT_EQ(c.stats().stop_reason, "stop");
    // ... unless min_new_tokens holds it back past k.
    to.min_new_tokens = static_cast<int>(k) + 1;
    const std::vector<TokenId> past = turn(to);
    ASSERT_GT(past.size(), k);
    EXPECT_NE(past[k], all[k]);
    to.min_new_tokens = 9;
    EXPECT_FALSE(c.start_turn(prompt, to).ok());
    to.min_new_tokens = 0;
    to.stop_ids = {-1};
    EXPECT_FALSE(c.start_turn(prompt, to).ok());
}

// FLOPs of one op kind in a profile (0 if absent).
double op_flops(const std::vector<OpTime>& times, const std::string& op) {
    for (const OpTime& t : times) {
        if (t.op == op) return t.gflops * t.ms * 1e6;
    }
    return 0.0;
}

TEST(EngineProfile, PrefillAndDecodeStepsApart) {
    auto engine = tiny_engine("lazyllm_profile_split.gguf");
    ASSERT_NE(engine, nullptr);
    const std::vector<TokenId> prompt = prompt_ids(40, engine->summary().n_vocab);
    double decode_qkv[2] = {};
    int i = 0;
    for (const PruneOptions& prune : {PruneOptions{}, lazy_revive_in_decode()}) {
        RunOptions ro;
        ro.ignore_eos = true;
        ro.sampling.temperature = 0.0f;
        ro.prune = prune;
        ro.profile = true;
        ro.max_new_tokens = 0;
        auto prefill_only = engine->generate(prompt, ro);
        ro.max_new_tokens = 3;
        auto with_decode = engine->generate(prompt, ro);
        ASSERT_TRUE(prefill_only.ok() && with_decode.ok());
        EXPECT_TRUE(prefill_only->decode_profile.empty());
        ASSERT_FALSE(with_decode->decode_profile.empty());
        // Its rows add up to the prefill's wall time: the last one, "other", is what no timed
        // op covers.
        double total_ms = 0.0;
        for (const OpTime& t : prefill_only->profile) total_ms += t.ms;
        EXPECT_EQ(prefill_only->profile.back().op, "other");
        EXPECT_NEAR(total_ms,
                    1000.0 * static_cast<double>(prompt.size()) / prefill_only->prefill_tps,
                    1e-6 * total_ms);
        // The prefill table is the prompt step alone, whatever follows it.
        ASSERT_EQ(with_decode->profile.size(), prefill_only->profile.size());
        for (const OpTime& t : prefill_only->profile) {
            EXPECT_NEAR(op_flops(with_decode->profile, t.op), op_flops(prefill_only->profile, t.op),
                        1e-6 * op_flops(prefill_only->profile, t.op) + 1.0)
                << t.op;
        }
        decode_qkv[i++] = op_flops(with_decode->decode_profile, "qkv_gemm");
        EXPECT_GT(decode_qkv[i - 1], 0.0);
    }
    // Lazy's decode steps also finish the tokens its prefill deferred.
    EXPECT_GT(decode_qkv[1], decode_qkv[0]);
}

}  // namespace
}  // namespace lazyllm
