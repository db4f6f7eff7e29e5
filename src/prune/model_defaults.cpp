#include "prune/model_defaults.h"

namespace lazyllm::prune {

namespace {

struct Entry {
    ModelShape shape;
    int boundaries[3];
    float keep[3];
    int keep_first;
    int score_layers;
    int score_pool;
    std::string_view source;
};

// SmolLM2-135M (30 layers, d 576, 9 heads, vocab 49152): schedules/smollm2-135m-instruct.json,
// the output of
//   lazyllm tune --tasks passkey --lengths 2048,4096,8192 --depths 8   (docs/evaluation.md)
// the cheapest of 23 schedules searched that kept every passkey full got right (predicted 40.5% of
// prefill token-layers), with the score summed over 3 layers and max-pooled over 11 positions
// (docs/lazyllm.md); with the paper's one-layer score the same search found nothing cheaper than
// 53.5% that kept the keys. On the multi-needle calibration suite (passkey, niah_multivalue, vt,
// mdqa) no schedule up to 65.5% computed keeps 99% of full's score on this 135M model, so the
// single-needle suite decides. The first 40 tokens (the chat template's system turn) are
// protected: without it chat-wrapped multi-document QA scored 0 (docs/lazyllm.md).
constexpr Entry kEntries[] = {
    {{"llama", 30, 576, 9, 49152}, {9, 18, 21}, {0.2f, 0.15f, 0.1f}, 40, 3, 11,
     "lazyllm tune --tasks passkey --lengths 2048,4096,8192 --depths 8 (docs/evaluation.md)"},
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
            s.score_layers = e.score_layers;
            s.score_pool = e.score_pool;
            if (source) *source = e.source;
            return s;
        }
    }
    if (source) *source = "generic";
    return default_schedule(shape.n_layer);
}

}  // namespace lazyllm::prune
