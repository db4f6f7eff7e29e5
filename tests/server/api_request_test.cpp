// Request parsing and validation of `lazyllm serve` (tools/server/api_request.cpp): every
// malformed case gives a 400 whose error names the field.
#include "server/api_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace lazyllm::server {
namespace {

GenRequest chat_ok(const std::string& body) {
    auto r = parse_chat_request(body);
    if (auto* e = std::get_if<ApiError>(&r)) ADD_FAILURE() << body << " -> " << e->message;
    return std::holds_alternative<GenRequest>(r) ? std::get<GenRequest>(r) : GenRequest{};
}

ApiError chat_err(const std::string& body) {
    auto r = parse_chat_request(body);
    if (!std::holds_alternative<ApiError>(r)) {
        ADD_FAILURE() << body << " was accepted";
        return {};
    }
    return std::get<ApiError>(r);
}

ApiError completion_err(const std::string& body) {
    auto r = parse_completion_request(body);
    if (!std::holds_alternative<ApiError>(r)) {
        ADD_FAILURE() << body << " was accepted";
        return {};
    }
    return std::get<ApiError>(r);
}

TEST(ApiRequest, ChatFieldsAreRead) {
    GenRequest r = chat_ok(R"({"model":"m","messages":[{"role":"system","content":"be brief"},
        {"role":"user","content":[{"type":"text","text":"hi "},{"type":"text","text":"there"}]}],
        "max_tokens":7,"temperature":0,"top_p":0.5,"top_k":3,"min_p":0.1,"seed":42,
        "stop":["a","b"],"stream":true,"stream_options":{"include_usage":true},"n":1,
        "presence_penalty":0.5,"frequency_penalty":-1.5,
        "lazyllm":{"policy":"lazy","preset":"fast","layers":[8,18],"keep":"0.5,0.2","revive_max":"all",
                   "revive_weight":0.5,"keep_recent":8,"min_context":100,"repair":false}})");
    ASSERT_EQ(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[0].role, "system");
    EXPECT_EQ(r.messages[1].content, "hi there");
    EXPECT_EQ(*r.max_tokens, 7);
    EXPECT_EQ(r.sampling.temperature, 0.0f);
    EXPECT_EQ(r.sampling.top_p, 0.5f);
    EXPECT_EQ(r.sampling.top_k, 3);
    EXPECT_FLOAT_EQ(r.sampling.min_p, 0.1f);
    EXPECT_EQ(r.sampling.seed, 42u);
    EXPECT_EQ(r.sampling.presence_penalty, 0.5f);
    EXPECT_EQ(r.sampling.frequency_penalty, -1.5f);
    EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(r.stream);
    EXPECT_TRUE(r.include_usage);
    ASSERT_TRUE(r.prune);
    EXPECT_EQ(r.prune->policy, "lazy");
    EXPECT_EQ(r.prune->layers, "8,18");
    EXPECT_EQ(r.prune->keep, "0.5,0.2");
    EXPECT_EQ(*r.prune->overrides.revive_max, -1);
    EXPECT_EQ(*r.prune->overrides.revive_weight, 0.5f);
    EXPECT_EQ(r.prune->preset, "fast");
    EXPECT_EQ(r.prune->overrides.keep_recent, 8);
    EXPECT_EQ(r.prune->overrides.min_context, 100);
    EXPECT_EQ(r.prune->overrides.repair, false);
}

// A schedule object as `lazyllm tune` writes it may carry tiers; they become the schedule's, and
// a fault in them is named.
TEST(ApiRequest, ScheduleTiersAreCarried) {
    GenRequest r = chat_ok(R"({"messages":[{"role":"user","content":"x"}],
        "lazyllm":{"schedule":{"layers":[21,27],"keep":[0.35,0.1],"prune_decode":false,"repair":true,
                   "tiers":[{"min_context":3072,"layers":[9,15,27],"keep":[0.4,0.25,0.15]}],
                   "meta":{}}}})");
    ASSERT_TRUE(r.prune);
    auto p = to_prune_options(*r.prune, 30);
    ASSERT_TRUE(p.ok()) << p.error().message();
    ASSERT_TRUE(p->schedule);
    ASSERT_EQ(p->schedule->tiers.size(), 1u);
    EXPECT_EQ(p->schedule->tiers[0].min_context, 3072);
    EXPECT_EQ(p->schedule->tiers[0].boundaries, (std::vector<int>{9, 15, 27}));
    EXPECT_EQ(p->overrides.repair, true);
    GenRequest verify = chat_ok(R"({"messages":[{"role":"user","content":"x"}],
        "lazyllm":{"schedule":{"layers":[21,27],"keep":[0.35,0.1],"prune_decode":false,"repair":true,
                   "verify_margin":0.5}}})");
    auto pv = to_prune_options(*verify.prune, 30);
    ASSERT_TRUE(pv.ok()) << pv.error().message();
    EXPECT_EQ(pv->overrides.verify_margin, 0.5f);
    const ApiError bad_margin = chat_err(R"({"messages":[{"role":"user","content":"x"}],
        "lazyllm":{"verify_margin":-1}})");
    EXPECT_EQ(bad_margin.param, "lazyllm.verify_margin") << bad_margin.message;

    GenRequest bad = chat_ok(R"({"messages":[{"role":"user","content":"x"}],
        "lazyllm":{"policy":"lazy","layers":[21],"keep":[0.35],"tiers":[{"min_context":3072,"layers":[9,"x"],"keep":[0.4,0.2]}]}})");
    auto e = to_prune_options(*bad.prune, 30);
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.error().message().find("tiers[0].layers[1]"), std::string::npos)
        << e.error().message();
    GenRequest alone = chat_ok(R"({"messages":[{"role":"user","content":"x"}],
        "lazyllm":{"policy":"lazy","tiers":[{"min_context":3072,"layers":[9],"keep":[0.4]}]}})");
    auto a = to_prune_options(*alone.prune, 30);
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.error().message().find("tiers need layers and keep"), std::string::npos);
    // Tiers the request gives itself, without repair, are refused, not dropped.
    for (const char* extra : {"", R"(,"repair":false)", R"(,"prune_decode":true)"}) {
        GenRequest no_repair =
            chat_ok(std::string(R"({"messages":[{"role":"user","content":"x"}],
            "lazyllm":{"policy":"lazy","layers":[21],"keep":[0.35])") +
                    extra + R"(,"tiers":[{"min_context":3072,"layers":[9],"keep":[0.4]}]}})");
        auto n = to_prune_options(*no_repair.prune, 30);
        ASSERT_FALSE(n.ok()) << extra;
        EXPECT_NE(n.error().message().find("tiers need repair"), std::string::npos)
            << n.error().message();
    }
}

// A request's fields go on top of the server's own pruning flags, field by field.
TEST(ApiRequest, RequestFieldsGoOnTopOfTheServersFlags) {
    PruneOptions server;
    server.policy = Policy::kLazy;
    server.preset = Preset::kFast;
    server.overrides.keep_first = 8;
    server.overrides.min_context = 256;
    server.seed = 7;
    auto with = [](const std::string& ext, const PruneOptions& base) {
        GenRequest r =
            chat_ok(R"({"messages":[{"role":"user","content":"x"}],"lazyllm":)" + ext + "}");
        auto p = to_prune_options(*r.prune, 30, base);
        EXPECT_TRUE(p.ok()) << ext << ": " << p.error().message();
        return p.ok() ? *p : PruneOptions{};
    };
    const PruneOptions a = with(R"({"keep_recent":16})", server);
    EXPECT_EQ(a.policy, Policy::kLazy);
    EXPECT_EQ(a.preset, Preset::kFast);
    EXPECT_EQ(a.overrides.keep_first, 8);
    EXPECT_EQ(a.overrides.keep_recent, 16);
    EXPECT_EQ(a.overrides.min_context, 256);
    EXPECT_EQ(a.seed, 7u);
    const PruneOptions b = with(R"({"min_context":0,"seed":3})", server);
    EXPECT_EQ(b.overrides.min_context, 0);
    EXPECT_EQ(b.seed, 3u);
    const PruneOptions f = with(R"({"policy":"full"})", server);
    EXPECT_EQ(f.policy, Policy::kFull);
    EXPECT_TRUE(f.overrides.empty());
    // A schedule of the server's: a preset the request names replaces it, and so do layers.
    server.schedule = Schedule{};
    server.schedule->boundaries = {20};
    server.schedule->keep = {0.3f};
    EXPECT_TRUE(with(R"({"keep_recent":16})", server).schedule);
    const PruneOptions c = with(R"({"preset":"safe"})", server);
    EXPECT_FALSE(c.schedule);
    EXPECT_EQ(c.preset, Preset::kSafe);
    EXPECT_EQ(c.overrides.keep_first, 8);
    const PruneOptions d = with(R"({"layers":[10],"keep":[0.5]})", server);
    ASSERT_TRUE(d.schedule);
    EXPECT_EQ(d.schedule->boundaries, (std::vector<int>{10}));
    // Over a full server, pruning fields without a policy mean lazy; a seed alone does not.
    const PruneOptions e = with(R"({"keep_first":4})", PruneOptions{});
    EXPECT_EQ(e.policy, Policy::kLazy);
    EXPECT_EQ(e.overrides.keep_first, 4);
    EXPECT_EQ(with(R"({"preset":"fast"})", PruneOptions{}).policy, Policy::kLazy);
    EXPECT_EQ(with(R"({"seed":5})", PruneOptions{}).policy, Policy::kFull);
}

TEST(ApiRequest, Defaults) {
    GenRequest r = chat_ok(R"({"messages":[{"role":"user","content":"x"}]})");
    EXPECT_FALSE(r.max_tokens);
    EXPECT_FALSE(r.stream);
    EXPECT_FALSE(r.prune);
    EXPECT_TRUE(r.cache_prompt);
    EXPECT_FLOAT_EQ(r.sampling.temperature, 0.8f);
    GenRequest s = chat_ok(R"({"messages":[{"role":"user","content":"x"}],"stop":"END"})");
    EXPECT_EQ(s.stop, std::vector<std::string>{"END"});
}

TEST(ApiRequest, MaxCompletionTokensWins) {
    GenRequest r = chat_ok(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":5,"max_completion_tokens":9})");
    EXPECT_EQ(*r.max_tokens, 9);
    EXPECT_EQ(r.max_tokens_field, "max_completion_tokens");
}

TEST(ApiRequest, MalformedJson) {
    for (const char* body : {"", "{", "{\"messages\": [}", "[1,2]", "\"x\"", "null"}) {
        ApiError e = chat_err(body);
        EXPECT_EQ(e.status, 400) << body;
        EXPECT_EQ(e.code, "invalid_json") << body;
    }
}

// A body nested 100,000 deep once crashed the server (recursive dump of lazyllm.tiers).
TEST(ApiRequest, DeepNestingIsRefused) {
    const auto nested = [](int depth) {
        return std::string(static_cast<size_t>(depth), '[') +
               std::string(static_cast<size_t>(depth), ']');
    };
    const std::string head =
        R"({"messages":[{"role":"user","content":"Hi"}],"lazyllm":{"policy":"lazy",)"
        R"("layers":[10],"keep":[0.5],"tiers":)";
    for (int depth : {65, 100000}) {
        ApiError e = chat_err(head + nested(depth) + "}}");
        EXPECT_EQ(e.status, 400) << depth;
        EXPECT_EQ(e.code, "invalid_json") << depth;
    }
    // Brackets inside strings do not count, and 60 levels of metadata are fine.
    chat_ok(R"({"messages":[{"role":"user","content":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[)"
            R"([[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"{"}],)"
            R"("metadata":{"a":)" +
            nested(59) + "}}");
}

TEST(ApiRequest, WrongTypesNameTheField) {
    struct Case {
        const char* body;
        const char* param;
    };
    const Case cases[] = {
        {R"({"messages":"hi"})", "messages"},
        {R"({"messages":[]})", "messages"},
        {R"({})", "messages"},
        {R"({"messages":[1]})", "messages[0]"},
        {R"({"messages":[{"content":"x"}]})", "messages[0].role"},
        {R"({"messages":[{"role":"wizard","content":"x"}]})", "messages[0].role"},
        {R"({"messages":[{"role":"user"}]})", "messages[0].content"},
        {R"({"messages":[{"role":"user","content":5}]})", "messages[0].content"},
        {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":"5"})", "max_tokens"},
        {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})", "max_tokens"},
        {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":2.5})", "max_tokens"},
        {R"({"messages":[{"role":"user","content":"x"}],"max_completion_tokens":-1})",
         "max_completion_tokens"},
        {R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})", "temperature"},
        {R"({"messages":[{"role":"user","content":"x"}],"temperature":3})", "temperature"},
        {R"({"messages":[{"role":"user","content":"x"}],"top_p":0})", "top_p"},
        {R"({"messages":[{"role":"user","content":"x"}],"top_k":-2})", "top_k"},
        {R"({"messages":[{"role":"user","content":null}]})", "messages[0].content"},
        {R"({"messages":[{"role":"system","content":null},{"role":"user","content":"x"}]})",
         "messages[0].content"},
        {R"({"messages":[{"role":"user","content":"x"}],"min_p":1})", "min_p"},
        {R"({"messages":[{"role":"user","content":"x"}],"seed":"1"})", "seed"},
        {R"({"messages":[{"role":"user","content":"x"}],"presence_penalty":2.5})",
         "presence_penalty"},
        {R"({"messages":[{"role":"user","content":"x"}],"frequency_penalty":"1"})",
         "frequency_penalty"},
        {R"({"messages":[{"role":"user","content":"x"}],"stop":5})", "stop"},
        {R"({"messages":[{"role":"user","content":"x"}],"stop":["a",1]})", "stop[1]"},
        {R"({"messages":[{"role":"user","content":"x"}],"stream":"yes"})", "stream"},
        {R"({"messages":[{"role":"user","content":"x"}],"stream_options":true})", "stream_options"},
        {R"({"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":1}})",
         "stream_options.include_usage"},
        {R"({"messages":[{"role":"user","content":"x"}],"stream_options":{"x":1}})",
         "stream_options.x"},
        {R"({"messages":[{"role":"user","content":"x"}],"bogus":1})", "bogus"},
        {R"({"messages":[{"role":"user","content":"x"}],"lazyllm":"lazy"})", "lazyllm"},
        {R"({"messages":[{"role":"user","content":"x"}],"lazyllm":{"polcy":"lazy"}})",
         "lazyllm.polcy"},
        {R"({"messages":[{"role":"user","content":"x"}],"lazyllm":{"keep_first":"3"}})",
         "lazyllm.keep_first"},
        {R"({"messages":[{"role":"user","content":"x"}],"lazyllm":{"preset":1}})",
         "lazyllm.preset"},
        {R"({"messages":[{"role":"user","content":"x"}],"lazyllm":{"min_context":-5}})",
         "lazyllm.min_context"},
        {R"({"messages":[{"role":"user","content":"x"}],"lazyllm":{"layers":[1,"a"]}})",
         "lazyllm.layers[1]"},
        {R"({"messages":[{"role":"user","content":"x"}],"lazyllm":{"revive_max":"some"}})",
         "lazyllm.revive_max"},
        {R"({"messages":[{"role":"user","content":"x"}],"lazyllm":{"repair":"on"}})",
         "lazyllm.repair"},
        {R"({"messages":[{"role":"user","content":"x"}],"lazyllm":{"revive_weight":1.5}})",
         "lazyllm.revive_weight"},
        {R"({"messages":[{"role":"user","content":"x"}],"lazyllm":{"policy":"full","keep":"0.5"}})",
         "lazyllm.policy"},
    };
    for (const Case& c : cases) {
        ApiError e = chat_err(c.body);
        EXPECT_EQ(e.status, 400) << c.body;
        EXPECT_EQ(e.param, c.param) << c.body << " -> " << e.message;
        EXPECT_NE(e.message.find(c.param), std::string::npos) << e.message;
    }
}

// Chat: logprobs true with top_logprobs alternatives; completions: logprobs N.
TEST(ApiRequest, LogprobsInBothForms) {
    const std::string msg = R"({"messages":[{"role":"user","content":"x"}],)";
    EXPECT_EQ(chat_ok(msg + R"("logprobs":true,"top_logprobs":5})").logprobs, 5);
    EXPECT_EQ(chat_ok(msg + R"("logprobs":true})").logprobs, 0);
    EXPECT_EQ(chat_ok(msg + R"("logprobs":false,"top_logprobs":0})").logprobs, -1);
    EXPECT_EQ(chat_ok(msg + R"("logprobs":null})").logprobs, -1);
    EXPECT_EQ(chat_err(msg + R"("top_logprobs":3})").param, "top_logprobs");
    EXPECT_EQ(chat_err(msg + R"("logprobs":true,"top_logprobs":21})").param, "top_logprobs");
    EXPECT_EQ(chat_err(msg + R"("logprobs":1})").param, "logprobs");
    auto c = parse_completion_request(R"({"prompt":"x","logprobs":3})");
    ASSERT_TRUE(std::holds_alternative<GenRequest>(c));
    EXPECT_EQ(std::get<GenRequest>(c).logprobs, 3);
    c = parse_completion_request(R"({"prompt":"x","logprobs":true})");
    ASSERT_TRUE(std::holds_alternative<ApiError>(c));
    EXPECT_EQ(std::get<ApiError>(c).param, "logprobs");
    c = parse_completion_request(R"({"prompt":"x","top_logprobs":2})");
    ASSERT_TRUE(std::holds_alternative<ApiError>(c));
    EXPECT_EQ(std::get<ApiError>(c).code, "unsupported");
}

TEST(ApiRequest, UnsupportedFeaturesAreRefused) {
    const char* bodies[] = {
        R"({"messages":[{"role":"user","content":"x"}],"n":2})",
        R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]})",
        R"({"messages":[{"role":"tool","content":"x"}]})",
        R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})",
        R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{}}})",
        R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":5}})",
        R"({"messages":[{"role":"user","content":"x"}],"response_format":"json"})",
    };
    for (const char* b : bodies) {
        ApiError e = chat_err(b);
        EXPECT_EQ(e.status, 400) << b;
        EXPECT_EQ(e.code, "unsupported") << b;
        EXPECT_NE(e.message.find("unsupported"), std::string::npos) << e.message;
    }
}

// JSON mode: response_format json_object; text is the default.
TEST(ApiRequest, ResponseFormatJsonObject) {
    const std::string msg = R"({"messages":[{"role":"user","content":"x"}])";
    EXPECT_TRUE(chat_ok(msg + R"(,"response_format":{"type":"json_object"}})").json_object);
    EXPECT_FALSE(chat_ok(msg + R"(,"response_format":{"type":"text"}})").json_object);
    EXPECT_FALSE(chat_ok(msg + "}").json_object);
}

// OpenAI SDKs send unset fields as null, and some send neutral values of fields this server has
// no use for: those are accepted; values that would change the answer are refused.
TEST(ApiRequest, OpenAiFieldsNullOrNeutralAreAccepted) {
    const std::string msg = R"({"messages":[{"role":"user","content":"x"}],)";
    for (const char* field :
         {R"("logit_bias":null)", R"("top_logprobs":null)", R"("service_tier":null)",
          R"("audio":null)", R"("prediction":null)", R"("frobnicate":null)", R"("logit_bias":{})",
          R"("top_logprobs":0)", R"("service_tier":"auto")", R"("reasoning_effort":"low")",
          R"("modalities":["text"])", R"("prediction":{"type":"content","content":"x"})",
          R"("metadata":{"k":"v"})", R"("store":false)", R"("verbosity":"low")",
          R"("prompt_cache_key":"conversation-7")", R"("safety_identifier":"user-1")",
          R"("stream_options":{"include_usage":true,"include_obfuscation":false})"}) {
        chat_ok(msg + field + "}");
    }
    EXPECT_EQ(chat_err(msg + R"("prompt_cache_key":7})").param, "prompt_cache_key");
    // vLLM's "no top-k" is -1; an assistant message that made tool calls has null content.
    EXPECT_EQ(chat_ok(msg + R"("top_k":-1})").sampling.top_k, 0);
    // A seed past 64 bits is out of range (JSON reads it as a float), not of the wrong type.
    const ApiError big = chat_err(msg + R"("seed":18446744073709551616})");
    EXPECT_EQ(big.param, "seed");
    EXPECT_NE(big.message.find("'seed' must be in"), std::string::npos) << big.message;
    // Within the range but past 2^53 as a float: no exact integer, so of the wrong type.
    const ApiError inexact = chat_err(msg + R"("seed":1e16})");
    EXPECT_EQ(inexact.param, "seed");
    EXPECT_EQ(inexact.message.find("must be in"), std::string::npos) << inexact.message;
    const GenRequest a = chat_ok(
        R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null},)"
        R"({"role":"user","content":"y"}]})");
    ASSERT_EQ(a.messages.size(), 3u);
    EXPECT_EQ(a.messages[1].content, "");
    EXPECT_EQ(chat_err(msg + R"("stream_options":{"include_obfuscation":"no"}})").param,
              "stream_options.include_obfuscation");
    // vLLM's repetition_penalty is repeat_penalty; a seed may be any 64-bit integer, 0 included,
    // and -1 asks for a random one (llama-server's default).
    EXPECT_FLOAT_EQ(chat_ok(msg + R"("repetition_penalty":1.3})").sampling.repetition_penalty,
                    1.3f);
    EXPECT_EQ(chat_err(msg + R"("repetition_penalty":0})").param, "repetition_penalty");
    EXPECT_EQ(chat_ok(msg + R"("seed":18446744073709551615})").sampling.seed,
              18446744073709551615ull);
    EXPECT_FALSE(chat_ok(msg + R"("seed":-1})").sampling.seed.has_value());
    EXPECT_EQ(chat_ok(msg + R"("seed":0})").sampling.seed, 0u);
    EXPECT_EQ(chat_ok(msg + R"("seed":-2})").sampling.seed, 18446744073709551614ull);
    EXPECT_FALSE(chat_ok(msg + R"("top_k":3})").sampling.seed.has_value());
    EXPECT_EQ(chat_err(msg + R"("seed":1.5})").param, "seed");
    // vLLM's min_tokens and stop_token_ids.
    GenRequest v = chat_ok(msg + R"("min_tokens":3,"stop_token_ids":[2,7]})");
    EXPECT_EQ(v.min_tokens, 3);
    EXPECT_EQ(v.stop_ids, (std::vector<TokenId>{2, 7}));
    EXPECT_EQ(chat_err(msg + R"("min_tokens":-1})").param, "min_tokens");
    EXPECT_EQ(chat_err(msg + R"("stop_token_ids":7})").param, "stop_token_ids");
    EXPECT_EQ(chat_err(msg + R"("stop_token_ids":[1,"x"]})").param, "stop_token_ids[1]");
    EXPECT_EQ(chat_err(msg + R"("stop_token_ids":[-3]})").param, "stop_token_ids[0]");
    for (const char* field : {R"("logit_bias":{"42":5})", R"("modalities":["text","audio"])",
                              R"("audio":{"voice":"x"})"}) {
        ApiError e = chat_err(msg + field + "}");
        EXPECT_EQ(e.code, "unsupported") << field;
    }
    EXPECT_EQ(chat_err(msg + R"("metadata":"x"})").param, "metadata");
    EXPECT_EQ(chat_err(msg + R"("service_tier":3})").param, "service_tier");
    // n_predict -1 is llama-server's "no limit": the default, as if absent.
    EXPECT_EQ(chat_ok(msg + R"("n_predict":-1})").max_tokens,
              chat_ok(R"({"messages":[{"role":"user","content":"x"}]})").max_tokens);
    EXPECT_EQ(chat_err(msg + R"("n_predict":-2})").param, "n_predict");
}

TEST(ApiRequest, Completions) {
    auto r = parse_completion_request(R"({"prompt":"The capital","max_tokens":4})");
    ASSERT_TRUE(std::holds_alternative<GenRequest>(r));
    EXPECT_EQ(std::get<GenRequest>(r).prompt, "The capital");
    auto ids = parse_completion_request(R"({"prompt":[1,2,3]})");
    ASSERT_TRUE(std::holds_alternative<GenRequest>(ids));
    EXPECT_EQ(std::get<GenRequest>(ids).prompt_ids, (std::vector<TokenId>{1, 2, 3}));
    EXPECT_EQ(completion_err(R"({"max_tokens":4})").param, "prompt");
    EXPECT_EQ(completion_err(R"({"prompt":{}})").param, "prompt");
    EXPECT_EQ(completion_err(R"({"prompt":[1,-2]})").param, "prompt[1]");
    // A batch of one prompt of token ids.
    auto nested = parse_completion_request(R"({"prompt":[[4,5]]})");
    ASSERT_TRUE(std::holds_alternative<GenRequest>(nested));
    EXPECT_EQ(std::get<GenRequest>(nested).prompt_ids, (std::vector<TokenId>{4, 5}));
    EXPECT_EQ(completion_err(R"({"prompt":[[4,"x"]]})").param, "prompt[0][1]");
    EXPECT_EQ(completion_err(R"({"prompt":[[]]})").param, "prompt[0]");
    EXPECT_EQ(completion_err(R"({"prompt":[]})").message, "'prompt' is an empty array");
    EXPECT_EQ(completion_err(R"({"prompt":[true]})").param, "prompt[0]");
    EXPECT_EQ(completion_err(R"({"prompt":[[1],[2]]})").code, "unsupported");
    EXPECT_EQ(completion_err(R"({"prompt":["a","b"]})").code, "unsupported");
    EXPECT_EQ(completion_err(R"({"prompt":"a","echo":true})").code, "unsupported");
    EXPECT_EQ(completion_err(R"({"prompt":"a","echo":"yes"})").param, "echo");
    EXPECT_EQ(completion_err(R"({"prompt":"a","best_of":"2"})").param, "best_of");
    EXPECT_EQ(completion_err(R"({"prompt":"a","best_of":3})").code, "unsupported");
    EXPECT_EQ(completion_err(R"({"prompt":"a","messages":[]})").param, "messages");
}

// A final assistant message is continued (llama-server); vLLM's fields say so explicitly.
TEST(ApiRequest, FinalAssistantMessageIsContinued) {
    const std::string user = R"({"role":"user","content":"Name a colour."})";
    const std::string assistant = R"({"role":"assistant","content":"My favourite is"})";
    const std::string both = "{\"messages\":[" + user + "," + assistant + "]";
    const std::string only_user = "{\"messages\":[" + user + "]";
    EXPECT_TRUE(chat_ok(both + "}").continue_final);
    EXPECT_TRUE(chat_ok(both + R"(,"continue_final_message":true})").continue_final);
    EXPECT_TRUE(chat_ok(both + R"(,"continue_final_message":true,"add_generation_prompt":false})")
                    .continue_final);
    EXPECT_TRUE(chat_ok(both + R"(,"add_generation_prompt":false})").continue_final);
    EXPECT_FALSE(chat_ok(both + R"(,"continue_final_message":false})").continue_final);
    EXPECT_FALSE(chat_ok(both + R"(,"add_generation_prompt":true})").continue_final);
    EXPECT_FALSE(chat_ok(only_user + "}").continue_final);
    EXPECT_FALSE(chat_ok(only_user + R"(,"add_generation_prompt":true})").continue_final);
    EXPECT_EQ(chat_err(only_user + R"(,"continue_final_message":true})").param,
              "continue_final_message");
    EXPECT_EQ(
        chat_err(both + R"(,"continue_final_message":true,"add_generation_prompt":true})").param,
        "add_generation_prompt");
    EXPECT_EQ(chat_err(only_user + R"(,"add_generation_prompt":false})").code, "unsupported");
    EXPECT_EQ(
        chat_err(both + R"(,"continue_final_message":false,"add_generation_prompt":false})").code,
        "unsupported");
    EXPECT_EQ(chat_err(both + R"(,"continue_final_message":1})").param, "continue_final_message");
}

TEST(ApiRequest, Lengths) {
    GenRequest r = chat_ok(R"({"messages":[{"role":"user","content":"x"}]})");
    EXPECT_EQ(std::get<int>(check_lengths(r, 10, 100, 512)), 90);
    EXPECT_EQ(std::get<int>(check_lengths(r, 10, 1000, 512)), 512);
    ApiError over = std::get<ApiError>(check_lengths(r, 100, 100, 512));
    EXPECT_EQ(over.code, "context_length_exceeded");
    EXPECT_EQ(over.param, "messages");
    r.max_tokens = 200;
    r.max_tokens_field = "max_tokens";
    ApiError big = std::get<ApiError>(check_lengths(r, 10, 100, 512));
    EXPECT_EQ(big.param, "max_tokens");
    r.max_tokens = 95;
    ApiError room = std::get<ApiError>(check_lengths(r, 10, 100, 512));
    EXPECT_EQ(room.param, "max_tokens");
    EXPECT_EQ(room.code, "context_length_exceeded");
    r.max_tokens = 90;
    EXPECT_EQ(std::get<int>(check_lengths(r, 10, 100, 512)), 90);
}

TEST(ApiRequest, TokenizeAndDetokenize) {
    auto t = parse_tokenize_request(R"({"content":"hi","with_pieces":true})");
    ASSERT_TRUE(std::holds_alternative<TokenizeRequest>(t));
    EXPECT_TRUE(std::get<TokenizeRequest>(t).with_pieces);
    EXPECT_EQ(std::get<ApiError>(parse_tokenize_request(R"({"content":1})")).param, "content");
    EXPECT_EQ(std::get<ApiError>(parse_tokenize_request(R"({})")).param, "content");
    auto d = parse_detokenize_request(R"({"tokens":[1,2]})", 10);
    ASSERT_TRUE(std::holds_alternative<std::vector<TokenId>>(d));
    EXPECT_EQ(std::get<ApiError>(parse_detokenize_request(R"({"tokens":[1,20]})", 10)).param, "tokens[1]");
    EXPECT_EQ(std::get<ApiError>(parse_detokenize_request(R"({"tokens":"1"})", 10)).param, "tokens");
}

TEST(ApiRequest, ErrorObjectShape) {
    ApiError e;
    e.message = "m";
    e.param = "p";
    nlohmann::json j = error_json(e);
    EXPECT_EQ(j["error"]["message"], "m");
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    EXPECT_EQ(j["error"]["param"], "p");
    EXPECT_TRUE(j["error"]["code"].is_null());
}

}  // namespace
}  // namespace lazyllm::server
