// Measured default schedules per model (design.md 1.4: the schedule is a tuned trade-off, per
// model). Models without an entry get a generic schedule per preset (below).
#pragma once

#include <string_view>
#include <vector>

#include "lazyllm/result.h"
#include "prune/schedule.h"

namespace lazyllm::prune {

struct ModelShape {
    std::string_view arch;  // general.architecture
    int n_layer = 0;
    int n_embd = 0;
    int n_head = 0;
    int n_vocab = 0;
    // Layers that attend to the whole context, when the model also has sliding-window layers
    // (gemma3); empty otherwise. A boundary's score comes from a global layer of its stage.
    std::vector<int> global_layers = {};
};

// The measured schedule of a preset for a known model shape, else a generic one: fast is the
// default model's fast preset laid out by depth (cuts at 30/60/70% of the depth keeping
// 0.2/0.15/0.1, the first 40 tokens protected, the score over 3 layers pooled over 11; on a
// sliding-window model: one cut after each of the first global layers, up to three, none at
// the last layer, keeping the paper's 0.5/0.25/0.1); safe is one cut nearest 70% of the depth
// keeping 0.25 (after a global layer on a sliding-window model), with a recent window, a
// context floor, decode steps that do not select, and repair (Schedule::repair: the step after
// a pruned prompt step recomputes its rows from the cut on). `source` (optional) receives where
// it came from: a docs reference or "generic".
Schedule model_default_schedule(const ModelShape& shape, Preset preset = Preset::kSafe,
                                std::string_view* source = nullptr);

}  // namespace lazyllm::prune
