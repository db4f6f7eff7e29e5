// StreamDecoder: token pieces in, whole UTF-8 out. A byte-level or byte-fallback vocabulary
// can split one character over several tokens (an emoji is often 2-4 byte tokens), so bytes of
// an unfinished sequence wait in `pending_` until the sequence completes. Ill-formed bytes
// become U+FFFD, one per maximal ill-formed subpart (Unicode 15, section 3.9, as Rust's
// String::from_utf8_lossy and Python's errors="replace").
//
// Unlike Tokenizer::decode, no leading space is dropped for SentencePiece vocabularies: a
// stream continues text that came before it.
#include "lazyllm/tokenizer.h"
#include "tokenizer/unicode.h"

namespace lazyllm {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Moves the whole sequences at the front of `pending` to `out`; with `final`, an incomplete
// tail is replaced as well.
void drain(std::string& pending, std::string& out, bool final) {
    size_t i = 0;
    while (i < pending.size()) {
        size_t len = 1;
        const auto st = tokenizer::classify_utf8_prefix(std::string_view(pending).substr(i), &len);
        if (st == tokenizer::Utf8Prefix::kComplete) {
            out.append(pending, i, len);
            i += len;
        } else if (st == tokenizer::Utf8Prefix::kInvalid) {
            out += kReplacement;
            i += len;
        } else {  // incomplete: wait for more bytes unless this is the end
            if (final) out += kReplacement;
            i = final ? pending.size() : i;
            break;
        }
    }
    pending.erase(0, i);
}

}  // namespace

std::string StreamDecoder::push(TokenId id) {
    pending_ += tok_->token_to_piece(id);
    std::string out;
    drain(pending_, out, /*final=*/false);
    return out;
}

std::string StreamDecoder::flush() {
    std::string out;
    drain(pending_, out, /*final=*/true);
    pending_.clear();
    return out;
}

}  // namespace lazyllm
