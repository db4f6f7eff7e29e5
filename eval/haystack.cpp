// Prompt sizing for the built-in tasks (haystack.h). RULER binary-searches the haystack size with
// a full tokenization per probe (scripts/data/synthetic/niah.py generate_samples); counting each
// filler piece once and correcting the whole prompt gets the same answer in a few encodes.
#include "eval/haystack.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace lazyllm::eval {
namespace {

struct Filler {
    std::string text;
    int64_t cost = 0;  // tokens of sep + text
    bool is_short = false;
};

// Orders fillers and needles: each needle goes before the filler piece where the running filler
// token count comes nearest to depth * total.
std::vector<BodyItem> place(const std::vector<Filler>& fillers, const HaystackSpec& spec) {
    std::vector<int64_t> prefix(fillers.size() + 1, 0);
    for (size_t i = 0; i < fillers.size(); ++i) prefix[i + 1] = prefix[i] + fillers[i].cost;
    const auto total = static_cast<double>(prefix.back());
    std::vector<size_t> at(spec.needles.size(), 0);
    for (size_t k = 0; k < spec.needles.size(); ++k) {
        const double target = std::clamp(spec.needles[k].depth, 0.0, 1.0) * total;
        size_t best = 0;
        for (size_t i = 1; i < prefix.size(); ++i) {
            if (std::abs(static_cast<double>(prefix[i]) - target) <
                std::abs(static_cast<double>(prefix[best]) - target)) {
                best = i;
            }
        }
        at[k] = best;
    }
    std::vector<BodyItem> items;
    items.reserve(fillers.size() + spec.needles.size());
    for (size_t i = 0; i <= fillers.size(); ++i) {
        for (size_t k = 0; k < spec.needles.size(); ++k) {
            if (at[k] == i) {
                items.push_back(
                    {BodyItem::Kind::kNeedle, &spec.needles[k].text, static_cast<int>(k)});
            }
        }
        if (i < fillers.size()) {
            const auto kind =
                fillers[i].is_short ? BodyItem::Kind::kShortFiller : BodyItem::Kind::kFiller;
            items.push_back({kind, &fillers[i].text, -1});
        }
    }
    return items;
}

}  // namespace

int64_t count_tokens(const Tokenizer& tok, const std::string& text) {
    return static_cast<int64_t>(
        tok.encode(text, /*parse_special=*/false, /*add_bos=*/false).size());
}

int64_t size_slack(int64_t n_tokens) { return std::max<int64_t>(4, n_tokens / 100); }

Result<SizedText> build_haystack(const HaystackSpec& spec, int64_t n_tokens, const Tokenizer& tok,
                                 synth::Rng& rng) {
    const int64_t lo = n_tokens - size_slack(n_tokens);
    const int64_t over_limit = n_tokens + n_tokens / 50;
    std::vector<Filler> fillers;

    const std::string skeleton = spec.render(place(fillers, spec));
    const int64_t fixed = count_tokens(tok, skeleton);
    if (fixed > over_limit) {
        return make_error(ErrorCode::kOutOfRange,
                          "{} tokens requested, but the task's template and needles alone take {}",
                          n_tokens, fixed);
    }

    auto close_gap = [&](int64_t remaining) {
        for (int tries = 0; remaining > 0 && tries < 32; ++tries) {
            Filler f{spec.short_filler(rng), 0, true};
            f.cost = count_tokens(tok, spec.short_sep + f.text);
            if (f.cost <= remaining) {
                remaining -= f.cost;
                fillers.push_back(std::move(f));
            }
        }
    };
    auto fill = [&](int64_t remaining) {
        while (remaining > 0) {
            Filler f{spec.filler(rng), 0, false};
            f.cost = count_tokens(tok, spec.filler_sep + f.text);
            if (f.cost > remaining) break;
            remaining -= f.cost;
            fillers.push_back(std::move(f));
        }
        close_gap(remaining);
    };

    fill(n_tokens - fixed);
    SizedText best{skeleton, fixed};
    auto badness = [&](int64_t t) { return t <= n_tokens ? n_tokens - t : 2 * (t - n_tokens); };
    // Pieces are not exactly additive (merges across a boundary, numbering of documents), so the
    // whole prompt is measured and the filler corrected; two or three rounds are typical.
    for (int round = 0; round < 8; ++round) {
        std::string text = spec.render(place(fillers, spec));
        const int64_t t = count_tokens(tok, text);
        const bool in_band = t >= lo && t <= n_tokens;
        if (round == 0 || in_band || badness(t) < badness(best.n_tokens)) {
            best = {std::move(text), t};
        }
        if (in_band) break;
        if (t > n_tokens) {
            const int64_t excess = t - n_tokens;
            int64_t removed = 0;
            while (removed < excess && !fillers.empty()) {
                removed += fillers.back().cost;
                fillers.pop_back();
            }
            close_gap(removed - excess);
        } else {
            fill(n_tokens - t);
        }
    }
    return best;
}

}  // namespace lazyllm::eval
