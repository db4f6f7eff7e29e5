// Sizes a built-in task's prompt to a token budget: filler pieces are added until the prompt,
// rendered with its needles placed at their depths, measures close to the target with the real
// tokenizer. Pieces are counted one by one (cheap, nearly additive for BPE and SentencePiece), the
// whole prompt is then measured and corrected a few times, so an 8k prompt takes a handful of
// full encodes, not a search over every size.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "eval/synth_text.h"
#include "lazyllm/result.h"
#include "lazyllm/tokenizer.h"

namespace lazyllm::eval {

// One element of the rendered body, in order.
struct BodyItem {
    enum class Kind { kFiller, kShortFiller, kNeedle };
    Kind kind;
    const std::string* text;
    int needle = -1;  // index into HaystackSpec::needles for kNeedle
};

struct Needle {
    double depth;      // fraction of the filler's tokens before it, in [0, 1]
    std::string text;  // needles at the same place keep their order in HaystackSpec::needles
};

struct HaystackSpec {
    std::function<std::string(synth::Rng&)> filler;        // next filler piece
    std::function<std::string(synth::Rng&)> short_filler;  // a short piece to close the gap
    std::string filler_sep;  // what precedes a filler piece in the body (for counting it)
    std::string short_sep;   // what precedes a short piece
    std::vector<Needle> needles;
    // The full text that is measured (prompt + answer prefix) from the ordered body.
    std::function<std::string(const std::vector<BodyItem>&)> render;
};

struct SizedText {
    std::string text;
    int64_t n_tokens = 0;
};

// Token count of `text` as the model sees it: no BOS, special-token text kept as plain text.
int64_t count_tokens(const Tokenizer& tok, const std::string& text);

// Renders `spec` with filler drawn from `rng` so that the text measures within
// [n_tokens - max(4, 1%), n_tokens] where the filler's granularity allows; otherwise the closest
// found (never more than 2% over). Fails when the needles and template alone exceed the budget.
Result<SizedText> build_haystack(const HaystackSpec& spec, int64_t n_tokens, const Tokenizer& tok,
                                 synth::Rng& rng);

// Tolerance band of the sizing: [n - slack(n), n].
int64_t size_slack(int64_t n_tokens);

}  // namespace lazyllm::eval
