// Fuzz target for the request parser of `lazyllm serve`: any byte string must give a request or
// an ApiError with status 400 and a message, never a crash, hang or exception.
// Built with clang -fsanitize=fuzzer (LAZYLLM_LIBFUZZER) it is a libFuzzer target; otherwise
// main() runs a bounded seeded mutation loop over a corpus of valid and broken requests (ctest
// ServerRequestFuzz, also under ASan+UBSan).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_request.h"

namespace {

void check(const lazyllm::server::ApiError& e) {
    if (e.status != 400 || e.message.empty()) {
        std::fprintf(stderr, "bad error: status %d message '%s'\n", e.status, e.message.c_str());
        std::abort();
    }
    (void)lazyllm::server::error_json(e).dump();
}

template <typename T>
void check(const lazyllm::server::ApiResult<T>& r) {
    if (auto* e = std::get_if<lazyllm::server::ApiError>(&r)) check(*e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace lazyllm::server;
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    auto chat = parse_chat_request(body);
    check(chat);
    if (auto* r = std::get_if<GenRequest>(&chat)) {
        for (int64_t n_prompt : {0, 1, 5000}) check(check_lengths(*r, n_prompt, 4096, 512));
    }
    check(parse_completion_request(body));
    check(parse_tokenize_request(body));
    check(parse_detokenize_request(body, 49152));
    return 0;
}

#ifndef LAZYLLM_LIBFUZZER
int main(int argc, char** argv) {
    const long iters = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 20000;
    const std::vector<std::string> corpus = {
        R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true})",
        R"({"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"t"}]}],"stop":["a","b"],"temperature":0.5,"top_p":0.9,"top_k":5,"min_p":0.1,"seed":3})",
        R"({"messages":[{"role":"user","content":"x"}],"lazyllm":{"policy":"lazy","layers":[8,18],"keep":[0.5,0.2],"revive_max":"all","schedule":null}})",
        R"({"messages":[{"role":"user","content":"x"}],"lazyllm":{"schedule":{"layers":[8],"keep":[0.5],"keep_first":4,"meta":{}}}})",
        R"({"prompt":"The capital of France is","max_tokens":4,"stream_options":{"include_usage":true}})",
        R"({"prompt":[1,2,3,4],"n":1,"echo":false})",
        R"({"content":"hello","with_pieces":true,"add_special":true})",
        R"({"tokens":[1,2,3,49151]})",
        R"({"messages":[{"role":"user","content":"x"}],"n":3,"tools":[{}],"max_completion_tokens":1e300})",
    };
    const std::string alphabet = "{}[]\":,.-+0123456789eE truefalsnul\\u\x01\xff\xc3\xa9";
    std::mt19937_64 rng(20241125);
    long n = 0;
    for (long i = 0; i < iters; ++i) {
        std::string s = corpus[rng() % corpus.size()];
        const int edits = 1 + static_cast<int>(rng() % 8);
        for (int k = 0; k < edits && !s.empty(); ++k) {
            const size_t pos = rng() % (s.size() + 1);
            switch (rng() % 4) {
                case 0: s.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
                case 1: if (pos < s.size()) s.erase(pos, 1 + rng() % 4); break;
                case 2: if (pos < s.size()) s[pos] = alphabet[rng() % alphabet.size()]; break;
                default: s.insert(pos, corpus[rng() % corpus.size()].substr(0, rng() % 40)); break;
            }
        }
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
        ++n;
    }
    std::printf("request fuzz: %ld inputs, no failure\n", n);
    return 0;
}
#endif
