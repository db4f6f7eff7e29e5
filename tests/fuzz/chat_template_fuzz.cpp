// Fuzz target: the chat-format detector and renderer (src/tokenizer/chat_detect.cpp,
// chat_template.cpp). The input is split at NUL bytes into the GGUF's tokenizer.chat_template, the
// architecture, a system and a user message (first byte's low bit: whether the vocabulary has the
// other formats' markers). Any template must give one of the known formats, a fallback must come
// with its warning, and the rendered chat must encode. The
// vocabulary is a small SentencePiece one (fuzz_support.h), built per input: a byte-level BPE one
// would compile its regex each time. Encode / decode round trips are tokenizer_fuzz's.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "lazyllm/gguf.h"
#include "lazyllm/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace lazyllm;
    if (size == 0) return 0;
    const bool markers = (data[0] & 1) != 0;
    std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    std::vector<std::string> parts;
    for (int k = 0; k < 3; ++k) {
        const size_t nul = rest.find('\0');
        parts.emplace_back(rest.substr(0, nul));
        rest = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
    }
    parts.emplace_back(rest);
    const std::vector<uint8_t> bytes = fuzz::fuzz_spm_vocab_writer(parts[0], markers).to_bytes();
    auto g = GgufFile::from_memory(bytes.data(), bytes.size(), "fuzz-chat");
    if (!g.ok()) fuzz::fail("fuzz vocabulary does not open", g.error().message());
    auto tok = Tokenizer::from_gguf(*g);
    if (!tok.ok()) fuzz::fail("fuzz vocabulary does not load", tok.error().message());
    if (tok->chat_template() != parts[0]) fuzz::fail("chat template changed on the way", parts[0]);
    const ChatTemplateChoice choice = detect_chat_template(*tok, parts[1]);
    if (chat_format_name(choice.tmpl.format) == "?") fuzz::fail("unknown chat format");
    if (choice.recognised != chat_template_from_text(parts[0]).has_value()) {
        fuzz::fail("detection disagrees with chat_template_from_text", parts[0]);
    }
    if (!choice.recognised && chat_template_warning(choice).empty()) {
        fuzz::fail("a fallback without a warning", parts[0]);
    }
    std::vector<ChatMessage> msgs;
    if (!parts[2].empty()) msgs.push_back({"system", parts[2]});
    msgs.push_back({"user", parts[3]});
    for (bool gen : {true, false}) {
        const std::string prompt = apply_chat_template(choice.tmpl, msgs, gen);
        if (prompt.empty()) fuzz::fail("empty chat prompt");
        for (TokenId id : tok->encode(prompt, /*parse_special=*/true)) {
            if (id < 0 || id >= tok->n_vocab()) fuzz::fail("token id outside the vocabulary");
        }
    }
    return 0;
}

#include "fuzz/fuzz_main.h"
