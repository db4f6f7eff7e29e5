// Fuzz target: the GGUF reader (src/gguf) and the vocabulary loader on top of it. Any bytes must
// give a GgufFile or an error with a message; an accepted file's tensors must lie inside the
// buffer, and its metadata must print.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_support.h"
#include "lazyllm/gguf.h"
#include "lazyllm/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace lazyllm;
    auto g = GgufFile::from_memory(data, size, "fuzz.gguf");
    if (!g.ok()) {
        if (g.error().message().empty()) fuzz::fail("error without a message");
        return 0;
    }
    for (const auto& [key, value] : g->metadata()) {
        (void)value.to_display(8);
        if (g->find(key) == nullptr) fuzz::fail("metadata key not found again", key);
    }
    (void)g->get_uint("general.alignment");
    (void)g->get_string("general.architecture");
    for (const GgufTensorInfo& t : g->tensors()) {
        const uint8_t* p = g->tensor_data(t);
        const uint64_t n = t.n_bytes();
        if (p < data || static_cast<uint64_t>(p - data) > size ||
            n > size - static_cast<uint64_t>(p - data)) {
            fuzz::fail("tensor outside the buffer", t.name);
        }
        if (g->find_tensor(t.name) == nullptr) fuzz::fail("tensor not found again", t.name);
    }
    auto tok = Tokenizer::from_gguf(*g);
    if (tok.ok()) {
        const auto ids = tok->encode("Hello <|im_start|> w\xff", true);
        (void)tok->decode(ids, true);
    } else if (tok.error().message().empty()) {
        fuzz::fail("tokenizer error without a message");
    }
    return 0;
}

#include "fuzz/fuzz_main.h"
