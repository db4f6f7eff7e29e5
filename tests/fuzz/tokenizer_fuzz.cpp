// Fuzz target: byte-level BPE encode / decode (src/tokenizer). Where the vocabulary has a token
// for every byte, decode(encode(s)) == s for any bytes, invalid UTF-8 included, with special
// tokens parsed and rendered too. A vocabulary trained on valid UTF-8 only may lack the bytes
// that never occurred there (SmolLM2's has none for 0xC0, 0xC1, 0xF1, 0xF2, 0xF5-0xFF and the
// control bytes 0x04, 0x06, 0x13, 0x14, 0x16, 0x1D): those bytes, and only those, are dropped (as
// llama.cpp and HF tokenizers drop them; `lazyllm run` refuses such a prompt, naming the byte). The
// streaming decoder's output is always valid UTF-8, and equal to s when s is. The vocabulary is
// fuzz_support.h's; LAZYLLM_FUZZ_MODEL=FILE.gguf adds that model's tokenizer (docs/fuzzing.md ran
// it with SmolLM2's).
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "lazyllm/gguf.h"
#include "lazyllm/tokenizer.h"

namespace {

using namespace lazyllm;

struct Loaded {
    std::vector<uint8_t> bytes;      // the GGUF the tokenizer was read from
    std::unique_ptr<GgufFile> gguf;  // kept alive: the tokenizer may point into it
    std::unique_ptr<Tokenizer> tok;
    std::array<bool, 256> has_byte{};  // the vocabulary has the byte's token
};

std::vector<Loaded>& tokenizers() {
    static std::vector<Loaded> all = [] {
        std::vector<Loaded> v;
        auto add = [&v](Result<GgufFile> g, std::vector<uint8_t> bytes) {
            if (!g.ok()) fuzz::fail("cannot open the fuzz vocabulary", g.error().message());
            Loaded l;
            l.bytes = std::move(bytes);
            l.gguf = std::make_unique<GgufFile>(std::move(g).value());
            auto t = Tokenizer::from_gguf(*l.gguf);
            if (!t.ok()) fuzz::fail("cannot load the fuzz tokenizer", t.error().message());
            l.tok = std::make_unique<Tokenizer>(std::move(t).value());
            for (int b = 0; b < 256; ++b) {
                l.has_byte[b] =
                    l.tok->find_token(fuzz::gpt2_byte_token(static_cast<uint8_t>(b))).has_value();
            }
            v.push_back(std::move(l));
        };
        std::vector<uint8_t> b = fuzz::fuzz_vocab_writer().to_bytes();
        auto g = GgufFile::from_memory(b.data(), b.size(), "fuzz-vocab");
        add(std::move(g), std::move(b));
        // from_memory keeps a pointer to the bytes: the vector's heap buffer did not move.
        if (const char* m = std::getenv("LAZYLLM_FUZZ_MODEL"); m && *m) add(GgufFile::open(m), {});
        return v;
    }();
    return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string s(reinterpret_cast<const char*>(data), size);
    for (const Loaded& l : tokenizers()) {
        const Tokenizer& tok = *l.tok;
        std::string kept;  // s without the bytes the vocabulary has no token for
        for (char c : s) {
            if (l.has_byte[static_cast<uint8_t>(c)]) kept += c;
        }
        const std::vector<TokenId> ids = tok.encode(s, /*parse_special=*/false, /*add_bos=*/false);
        for (TokenId id : ids) {
            if (id < 0 || id >= tok.n_vocab()) fuzz::fail("token id outside the vocabulary");
        }
        if (tok.kind() == TokenizerKind::kBpe && tok.decode(ids) != kept) {
            fuzz::fail("decode(encode(s)) != s (less the bytes without a token)", s);
        }
        const std::vector<TokenId> sp = tok.encode(s, /*parse_special=*/true, /*add_bos=*/false);
        if (tok.kind() == TokenizerKind::kBpe && kept == s &&
            tok.decode(sp, /*render_special=*/true) != s) {
            fuzz::fail("decode(encode(s, special), special) != s", s);
        }
        StreamDecoder stream(tok);
        std::string streamed;
        for (TokenId id : ids) streamed += stream.push(id);
        streamed += stream.flush();
        if (!fuzz::valid_utf8(streamed)) fuzz::fail("stream decoder gave invalid UTF-8", streamed);
        if (tok.kind() == TokenizerKind::kBpe && kept == s && fuzz::valid_utf8(s) &&
            streamed != s) {
            fuzz::fail("stream decoder changed valid UTF-8", s);
        }
    }
    return 0;
}

#include "fuzz/fuzz_main.h"
