// Byte-level BPE on a tiny hand-made vocabulary: merge order, tie-breaking, special tokens,
// decoding. Expected ids are worked out by hand in the comments.
#include "tokenizer/bpe.h"

#include <gtest/gtest.h>

#include <random>

#include "tokenizer/tokenizer_test_util.h"
#include "tokenizer/vocab.h"

namespace lazyllm {
namespace {

using testing::ids_of;
using testing::TinyBpe;
using testing::tokenizer_from;

// Ranks are positions in this list.
const std::vector<std::string> kMerges = {
    "h e",     // 0
    "l l",     // 1
    "he ll",   // 2
    "hell o",  // 3
    "Ġ w",     // 4
    "o r",     // 5
    "Ġw or",   // 6
    "l d",     // 7
    "a a",     // 8
    "y z",     // 9
    "x y",     // 10
    "Ġ Ġ",     // 11
};

Tokenizer bpe_tok(const std::string& pre = "gpt-2") {
    auto tok = tokenizer_from(TinyBpe(kMerges).writer(pre));
    EXPECT_TRUE(tok.ok()) << tok.error().message();
    return std::move(tok).value();
}

TEST(Bpe, LoadsKindAndSpecialIds) {
    Tokenizer tok = bpe_tok();
    EXPECT_EQ(tok.kind(), TokenizerKind::kBpe);
    EXPECT_EQ(tok.kind_name(), "gpt2 (gpt-2)");
    EXPECT_EQ(tok.pre(), "gpt-2");
    EXPECT_EQ(tok.n_vocab(), 4 + 256 + static_cast<int32_t>(kMerges.size()));
    EXPECT_EQ(tok.bos(), 1);
    EXPECT_EQ(tok.eos(), 2);
    EXPECT_TRUE(tok.is_end_of_generation(2));
    EXPECT_TRUE(tok.is_end_of_generation(0));  // <|endoftext|> by its text
    EXPECT_FALSE(tok.is_end_of_generation(1));
    EXPECT_EQ(tok.token_text(1), "<|im_start|>");
    EXPECT_EQ(tok.token_text(-1), "");
    EXPECT_EQ(tok.token_text(1 << 20), "");
}

TEST(Bpe, MergesByRank) {
    Tokenizer tok = bpe_tok();
    // "hello": he (0), ll (1), hell (2), hello (3).
    EXPECT_EQ(tok.encode("hello"), ids_of(tok, {"hello"}));
    // " world" -> Ġ w o r l d: Ġw (4), or (5), Ġwor (6), ld (7).
    EXPECT_EQ(tok.encode(" world"), ids_of(tok, {"Ġwor", "ld"}));
    // Pre-tokenized into "hello" and " world" first, so no merge crosses the space.
    EXPECT_EQ(tok.encode("hello world"), ids_of(tok, {"hello", "Ġwor", "ld"}));
    // "hel": he, then (he, l) has no merge.
    EXPECT_EQ(tok.encode("hel"), ids_of(tok, {"he", "l"}));
}

TEST(Bpe, LowestRankBeatsLeftmost) {
    Tokenizer tok = bpe_tok();
    // x y z: (x,y) rank 10 and (y,z) rank 9: yz first, then (x, yz) has no merge.
    EXPECT_EQ(tok.encode("xyz"), ids_of(tok, {"x", "yz"}));
}

TEST(Bpe, EqualRanksMergeLeftmostFirst) {
    Tokenizer tok = bpe_tok();
    EXPECT_EQ(tok.encode("aaa"), ids_of(tok, {"aa", "a"}));
    EXPECT_EQ(tok.encode("aaaa"), ids_of(tok, {"aa", "aa"}));
    EXPECT_EQ(tok.encode("aaaaa"), ids_of(tok, {"aa", "aa", "a"}));
}

TEST(Bpe, SpacesAndBytes) {
    Tokenizer tok = bpe_tok();
    // "a  b" -> "a", " " (\s+(?!\S) leaves the last space), " b".
    EXPECT_EQ(tok.encode("a  b"), ids_of(tok, {"a", "Ġ", "Ġ", "b"}));
    // Three trailing spaces are one piece: ĠĠ (11) then Ġ.
    EXPECT_EQ(tok.encode("x   "), ids_of(tok, {"x", "ĠĠ", "Ġ"}));
    // Non-ASCII text falls to byte tokens: é is C3 A9 -> "Ã", "©".
    EXPECT_EQ(tok.encode("é"), ids_of(tok, {"Ã", "©"}));
    EXPECT_EQ(tok.decode(tok.encode("é")), "é");
    // Invalid UTF-8 still encodes byte by byte and decodes back.
    const std::string bad = "a\xff\xfe\x80z";
    EXPECT_EQ(tok.decode(tok.encode(bad)), bad);
    EXPECT_TRUE(tok.encode("").empty());
}

TEST(Bpe, AddBosFollowsMetadataUnlessOverridden) {
    Tokenizer tok = bpe_tok();
    EXPECT_EQ(tok.encode("a"), ids_of(tok, {"a"}));  // add_bos_token = false
    EXPECT_EQ(tok.encode("a", false, true), (std::vector<TokenId>{1, *tok.find_token("a")}));

    TinyBpe v(kMerges);
    GgufWriter w = v.writer();
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    auto tok2 = tokenizer_from(w);
    ASSERT_TRUE(tok2.ok()) << tok2.error().message();
    EXPECT_EQ(tok2->encode("a"), (std::vector<TokenId>{1, *tok2->find_token("a")}));
    EXPECT_EQ(tok2->encode("a", false, false), ids_of(*tok2, {"a"}));
}

TEST(Bpe, ControlTokensOnlyWithParseSpecial) {
    Tokenizer tok = bpe_tok();
    const std::string text = "a<|im_start|>b";
    std::vector<TokenId> with = tok.encode(text, true);
    EXPECT_EQ(with, (std::vector<TokenId>{*tok.find_token("a"), 1, *tok.find_token("b")}));
    std::vector<TokenId> without = tok.encode(text, false);
    EXPECT_EQ(std::count(without.begin(), without.end(), 1), 0);
    EXPECT_GT(without.size(), 3u);
    EXPECT_EQ(tok.decode(without), text);
    // Control tokens decode to nothing unless rendered.
    EXPECT_EQ(tok.decode(with), "ab");
    EXPECT_EQ(tok.decode(with, true), text);
    EXPECT_EQ(tok.token_to_piece(1), "");
    EXPECT_EQ(tok.token_to_piece(1, true), "<|im_start|>");
}

TEST(Bpe, UserDefinedTokensAlwaysSplit) {
    Tokenizer tok = bpe_tok();
    // HF added tokens and llama.cpp: user-defined tokens are matched even without parse_special.
    const std::vector<TokenId> expect = {*tok.find_token("x"), 3, *tok.find_token("y")};
    EXPECT_EQ(tok.encode("x<tool>y", false), expect);
    EXPECT_EQ(tok.encode("x<tool>y", true), expect);
    EXPECT_EQ(tok.token_to_piece(3), "<tool>");
    EXPECT_EQ(tok.decode(expect), "x<tool>y");
}

TEST(Bpe, SpecialTokensLeftmostLongest) {
    TinyBpe v(kMerges);
    v.tokens.push_back("<|im_start|>user");
    v.types.push_back(testing::kControl);
    auto tok = tokenizer_from(v.writer());
    ASSERT_TRUE(tok.ok()) << tok.error().message();
    const TokenId longer = tok->n_vocab() - 1;
    EXPECT_EQ(tok->encode("<|im_start|>user", true), (std::vector<TokenId>{longer}));
    EXPECT_EQ(tok->encode("<|im_start|>use", true)[0], 1);
    EXPECT_EQ(tok->encode("<|im_end|><|im_start|>user", true), (std::vector<TokenId>{2, longer}));
}

// Thousands of specials sharing a first byte (Gemma 3 has 6,321 starting with '<'): the search
// walks the sorted texts a byte at a time; leftmost-longest, control ones only with
// parse_special, a user-defined one inside a longer control one when that one is off.
TEST(Bpe, ManySpecialsWithOnePrefix) {
    TinyBpe v(kMerges);
    const int base = static_cast<int>(v.tokens.size());
    for (int i = 0; i < 6000; ++i) {
        v.tokens.push_back("<unused" + std::to_string(i) + ">");
        v.types.push_back(testing::kControl);
    }
    v.tokens.push_back("<un");  // user-defined, a prefix of the control ones
    v.types.push_back(testing::kUserDefined);
    auto tok = tokenizer_from(v.writer());
    ASSERT_TRUE(tok.ok()) << tok.error().message();
    const TokenId un = tok->n_vocab() - 1;
    const TokenId x = *tok->find_token("x");
    EXPECT_EQ(tok->encode("x<unused42>x<unused5999>", true),
              (std::vector<TokenId>{x, base + 42, x, base + 5999}));
    EXPECT_EQ(tok->encode("<unused600", true)[0], un);  // no '>': the user-defined prefix
    const std::vector<TokenId> off = tok->encode("<unused42>", false);
    EXPECT_EQ(off[0], un);
    EXPECT_EQ(tok->decode(off), "<unused42>");
    // 100,000 '<' and 20,000 '<un': each '<' looked up once (it took 38 us each by trying every
    // candidate); every "<un" becomes the user-defined token.
    std::string text(100000, '<');
    for (int i = 0; i < 20000; ++i) text += "<un";
    const std::vector<TokenId> ids = tok->encode(text, true);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), un), 20000);
    EXPECT_EQ(tok->decode(ids), text);
}

TEST(Bpe, StreamingMatchesDecode) {
    Tokenizer tok = bpe_tok();
    const std::string text = "héllo wörld 😀 中文 \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9";
    const std::vector<TokenId> ids = tok.encode(text);
    StreamDecoder sd(tok);
    std::string streamed;
    for (TokenId id : ids) {
        const std::string part = sd.push(id);
        // Every emitted part is whole UTF-8.
        for (size_t i = 0; i < part.size();) {
            size_t len = 0;
            ASSERT_EQ(tokenizer::classify_utf8_prefix(std::string_view(part).substr(i), &len),
                      tokenizer::Utf8Prefix::kComplete);
            i += len;
        }
        streamed += part;
    }
    streamed += sd.flush();
    EXPECT_EQ(streamed, text);
    EXPECT_EQ(streamed, tok.decode(ids));
}

TEST(Bpe, StreamHoldsPartialSequencesAndReplacesInvalid) {
    Tokenizer tok = bpe_tok();
    auto byte_id = [&](uint8_t b) {
        tokenizer::ByteUnicodeMap map;
        return *tok.find_token(map.byte_to_utf8(b));
    };
    StreamDecoder sd(tok);
    // 😀 = F0 9F 98 80, one byte token at a time.
    EXPECT_EQ(sd.push(byte_id(0xF0)), "");
    EXPECT_EQ(sd.push(byte_id(0x9F)), "");
    EXPECT_EQ(sd.push(byte_id(0x98)), "");
    EXPECT_EQ(sd.push(byte_id(0x80)), "😀");
    // A stray continuation byte cannot start a sequence: replaced at once.
    EXPECT_EQ(sd.push(byte_id(0x80)), "\xEF\xBF\xBD");
    // E4 B8 then 'a': the two bytes are one ill-formed subpart, one U+FFFD, then 'a'.
    EXPECT_EQ(sd.push(byte_id(0xE4)), "");
    EXPECT_EQ(sd.push(byte_id(0xB8)), "");
    EXPECT_EQ(sd.push(byte_id('a')),
              "\xEF\xBF\xBD"
              "a");
    // An unfinished sequence at the end is flushed as U+FFFD.
    EXPECT_EQ(sd.push(byte_id(0xE4)), "");
    EXPECT_EQ(sd.flush(), "\xEF\xBF\xBD");
    EXPECT_EQ(sd.flush(), "");
    // Control tokens add nothing to a stream.
    EXPECT_EQ(sd.push(1), "");
}

TEST(Bpe, Llama3IgnoresMergesForWholeTokens) {
    TinyBpe v(kMerges);
    v.tokens.push_back("hlo");  // no merge chain builds it
    v.types.push_back(testing::kNormal);
    auto gpt2 = tokenizer_from(v.writer("gpt-2"));
    ASSERT_TRUE(gpt2.ok()) << gpt2.error().message();
    EXPECT_EQ(gpt2->encode("hlo"), ids_of(*gpt2, {"h", "l", "o"}));
    auto llama3 = tokenizer_from(v.writer("llama-bpe"));
    ASSERT_TRUE(llama3.ok()) << llama3.error().message();
    EXPECT_EQ(llama3->kind_name(), "gpt2 (llama3)");
    EXPECT_EQ(llama3->encode("hlo"), ids_of(*llama3, {"hlo"}));
    // Llama 3's regex keeps up to three digits together.
    EXPECT_EQ(llama3->encode("12345"), ids_of(*llama3, {"1", "2", "3", "4", "5"}));
    EXPECT_EQ(llama3->decode(llama3->encode("x 12345 IT'S")), "x 12345 IT'S");
}

TEST(Bpe, Llama3AddsBosByDefault) {
    TinyBpe v(kMerges);
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "llama-bpe");
    w.set_string_array("tokenizer.ggml.tokens", v.tokens);
    w.set_int32_array("tokenizer.ggml.token_type", v.types);
    w.set_string_array("tokenizer.ggml.merges", v.merges);
    w.set_uint32("tokenizer.ggml.bos_token_id", 1);
    auto tok = tokenizer_from(w);
    ASSERT_TRUE(tok.ok()) << tok.error().message();
    EXPECT_EQ(tok->encode("a"), (std::vector<TokenId>{1, *tok->find_token("a")}));
}

TEST(Bpe, Qwen2AndSmollmSplitDigits) {
    TinyBpe v({"Ġ 1", "1 2"});
    auto gpt2 = tokenizer_from(v.writer("gpt-2"));
    auto qwen2 = tokenizer_from(v.writer("qwen2"));
    auto smollm = tokenizer_from(v.writer("smollm"));
    ASSERT_TRUE(gpt2.ok() && qwen2.ok() && smollm.ok());
    EXPECT_EQ(qwen2->kind_name(), "gpt2 (qwen2)");
    EXPECT_EQ(smollm->kind_name(), "gpt2 (smollm)");
    // GPT-2 keeps " 12" in one piece, so the merges apply; the others split every digit.
    EXPECT_EQ(gpt2->encode(" 12"), ids_of(*gpt2, {"Ġ1", "2"}));
    EXPECT_EQ(qwen2->encode(" 12"), ids_of(*qwen2, {"Ġ", "1", "2"}));
    EXPECT_EQ(smollm->encode(" 12"), ids_of(*smollm, {"Ġ", "1", "2"}));
}

// The linear-scan and heap merge loops must agree (encode_piece switches between them by
// length), on random strings over a small alphabet that makes many merges apply.
TEST(Bpe, LinearAndHeapMergesAgree) {
    TinyBpe v(kMerges);
    auto m = testing::load_gguf(v.writer());
    ASSERT_TRUE(m.ok());
    auto vocab = tokenizer::load_vocab((*m)->file);
    ASSERT_TRUE(vocab.ok()) << vocab.error().message();
    auto bpe = tokenizer::BpeModel::create(*vocab, false);
    ASSERT_TRUE(bpe.ok()) << bpe.error().message();
    std::mt19937 rng(7);
    const std::string alphabet = "helowrdaxyz ";
    tokenizer::BpeModel::Scratch s;
    for (int iter = 0; iter < 500; ++iter) {
        std::string text(1 + rng() % 120, ' ');
        for (char& c : text) c = alphabet[rng() % alphabet.size()];
        std::vector<TokenId> a, b;
        bpe->load_bytes(text, s);
        bpe->merge_linear(s, a);
        bpe->load_bytes(text, s);
        bpe->merge_heap(s, b);
        ASSERT_EQ(a, b) << "'" << text << "'";
    }
}

}  // namespace
}  // namespace lazyllm
