#include "prune/model_defaults.h"

namespace lazyllm::prune {

namespace {

struct Entry {
    ModelShape shape;
    int boundaries[3];
    float keep[3];
    int keep_first;
    std::string_view source;
};

// SmolLM2-135M (30 layers, d 576, 9 heads, vocab 49152): chosen from passkey and multi-document
// measurements at ~4k tokens, docs/lazyllm.md "SmolLM2-135M default schedule". A first boundary
// before layer 8 kept every passkey answer; earlier ones (3-7) lost it. Protecting the first 40
// tokens (the chat template's system turn) took multi-document QA from 0 back to full's level.
constexpr Entry kEntries[] = {
    {{"llama", 30, 576, 9, 49152}, {8, 18, 26}, {0.4f, 0.2f, 0.1f}, 40,
     "docs/lazyllm.md (SmolLM2-135M, measured)"},
};

}  // namespace

Schedule model_default_schedule(const ModelShape& shape, std::string_view* source) {
    for (const Entry& e : kEntries) {
        if (e.shape.arch == shape.arch && e.shape.n_layer == shape.n_layer &&
            e.shape.n_embd == shape.n_embd && e.shape.n_head == shape.n_head &&
            e.shape.n_vocab == shape.n_vocab) {
            Schedule s;
            s.boundaries.assign(std::begin(e.boundaries), std::end(e.boundaries));
            s.keep.assign(std::begin(e.keep), std::end(e.keep));
            s.keep_first = e.keep_first;
            if (source) *source = e.source;
            return s;
        }
    }
    if (source) *source = "generic";
    return default_schedule(shape.n_layer);
}

}  // namespace lazyllm::prune
