// Shared pieces of the libFuzzer targets in tests/fuzz (docs/fuzzing.md): a small byte-level
// BPE vocabulary written as GGUF, a UTF-8 check, and the failure report.
//
// Built with clang and -fsanitize=fuzzer (LAZYLLM_FUZZ=ON, preset `fuzz`) each file is a
// libFuzzer target. Otherwise (any compiler, ctest Fuzz*Replay) fuzz_main.h's main() replays the
// seed corpus and a bounded seeded mutation loop over it, as tests/server/api_request_fuzz.cpp.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "lazyllm/gguf.h"

namespace lazyllm::fuzz {

// Reports a broken property (bytes outside printable ASCII escaped as \xNN) and aborts, which
// libFuzzer records as a finding.
[[noreturn]] inline void fail(const char* what, std::string_view detail = {}) {
    std::string shown;
    for (char c : detail) {
        const auto b = static_cast<uint8_t>(c);
        if (b >= 0x20 && b < 0x7f) {
            shown += c;
        } else {
            char hex[8];
            std::snprintf(hex, sizeof(hex), "\\x%02x", b);
            shown += hex;
        }
    }
    std::fprintf(stderr, "fuzz: %s: %s\n", what, shown.c_str());
    std::abort();
}

// RFC 3629: well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
inline bool valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<uint8_t>(s[i]);
        size_t n = 0;
        uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3, cp = c & 0x07;
        } else {
            return false;
        }
        if (s.size() - i <= n) return false;
        for (size_t k = 1; k <= n; ++k) {
            const auto d = static_cast<uint8_t>(s[i + k]);
            if ((d & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (d & 0x3F);
        }
        static constexpr uint32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
        if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += n + 1;
    }
    return true;
}

// GPT-2's bytes_to_unicode (openai/gpt-2 encoder.py): printable bytes map to themselves, the
// others to U+0100 upwards, so every byte has a one-character token.
inline std::string gpt2_byte_token(uint8_t b) {
    uint32_t cp = b;
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    if (!printable) {
        uint32_t n = 0;
        for (uint32_t x = 0; x < b; ++x) {
            if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174)) ++n;
        }
        cp = 256 + n;
    }
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
}

// A byte-level BPE vocabulary (tokenizer.ggml.model gpt2, pre smollm): the 256 byte tokens, a
// few merges, and control tokens <|endoftext|>, <|im_start|>, <|im_end|> (ChatML, as SmolLM2).
// `chat_template` becomes tokenizer.chat_template when not empty; `markers` adds the other
// formats' marker tokens to the vocabulary (the detector looks them up).
inline GgufWriter fuzz_vocab_writer(const std::string& chat_template = {}, bool markers = false) {
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(gpt2_byte_token(static_cast<uint8_t>(b)));
        types.push_back(1);  // normal
    }
    const std::string sp = gpt2_byte_token(' ');
    const std::vector<std::string> merges = {"h e",     sp + " t", "t h", "th e",
                                             sp + " a", "i n",     "e r"};
    for (const std::string& m : merges) {
        const size_t cut = m.find(' ');
        tokens.push_back(m.substr(0, cut) + m.substr(cut + 1));
        types.push_back(1);
    }
    std::vector<std::string> specials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    if (markers) {
        for (const char* t : {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                              "<start_of_turn>", "<end_of_turn>", "[INST]", "[/INST]"}) {
            specials.push_back(t);
        }
    }
    for (const std::string& t : specials) {
        tokens.push_back(t);
        types.push_back(3);  // control
    }
    GgufWriter w(32);
    w.set_string("general.architecture", "llama");
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "smollm");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_int32_array("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", merges);
    w.set_uint32("tokenizer.ggml.bos_token_id", 263);
    w.set_uint32("tokenizer.ggml.eos_token_id", 263);
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    if (!chat_template.empty()) w.set_string("tokenizer.chat_template", chat_template);
    return w;
}

// A small SentencePiece vocabulary (tokenizer.ggml.model llama): <unk>, <s>, </s>, a few pieces
// and the chat formats' control tokens; no byte tokens (other text encodes as <unk>) and no
// pre-tokenizer regex to compile, so that a target can build one per input quickly (the
// chat-template target does).
inline GgufWriter fuzz_spm_vocab_writer(const std::string& chat_template, bool markers) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};  // unknown, control, control
    for (const char* piece :
         {"\xe2\x96\x81", "\xe2\x96\x81the", "he", "user", "assistant", "system"}) {
        tokens.push_back(piece);
        types.push_back(1);
    }
    std::vector<const char*> specials = {"<|im_start|>", "<|im_end|>"};
    if (markers) {
        specials.insert(specials.end(), {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                                         "<start_of_turn>", "<end_of_turn>"});
    }
    for (const char* t : specials) {
        tokens.push_back(t);
        types.push_back(3);
    }
    std::vector<float> scores(tokens.size());
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = -static_cast<float>(i);
    GgufWriter w(32);
    w.set_string("general.architecture", "llama");
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_float32_array("tokenizer.ggml.scores", scores);
    w.set_int32_array("tokenizer.ggml.token_type", types);
    w.set_uint32("tokenizer.ggml.bos_token_id", 1);
    w.set_uint32("tokenizer.ggml.eos_token_id", 2);
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    // No space before the text and after each special token (llama.cpp's default for SPM adds
    // one, which decode() then keeps), so that decode(encode(s)) == s holds with specials too.
    w.set_bool("tokenizer.ggml.add_space_prefix", false);
    if (!chat_template.empty()) w.set_string("tokenizer.chat_template", chat_template);
    return w;
}

}  // namespace lazyllm::fuzz
