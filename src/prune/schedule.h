// Schedules inside the library (docs/design.md 1.2, 1.4): the public types and parsers of
// include/lazyllm/schedule.h under prune::, and the generic default schedule. Pure data and
// parsing: no SIMD, no model.
#pragma once

#include "lazyllm/schedule.h"

namespace lazyllm::prune {

using ::lazyllm::keep_profile;
using ::lazyllm::kMaxScoreLayers;
using ::lazyllm::kMaxScorePool;
using ::lazyllm::load_schedule_file;
using ::lazyllm::parse_policy;
using ::lazyllm::parse_preset;
using ::lazyllm::parse_schedule;
using ::lazyllm::Policy;
using ::lazyllm::policy_name;
using ::lazyllm::predicted_prefill_fraction;
using ::lazyllm::Preset;
using ::lazyllm::preset_name;
using ::lazyllm::read_schedule_file;
using ::lazyllm::save_schedule_file;
using ::lazyllm::Schedule;
using ::lazyllm::ScheduleFile;
using ::lazyllm::ScheduleFileInfo;
using ::lazyllm::to_string;
using ::lazyllm::validate_schedule;

// The generic schedule, the base of the presets of models without measured ones
// (model_defaults.cpp): boundaries at 28/59/88% of depth (the paper's Llama 2 7B analysis
// figure, before layers 9, 19, 28 of 32; docs/design.md 1.4) with keep 0.5 / 0.25 / 0.1.
// Boundaries are rounded, clamped into [1, n_layer - 1] and pushed up
// to stay strictly increasing; those that no longer fit are dropped with their keep entries
// (n_layer = 2 gives one boundary, n_layer < 2 none).
Schedule default_schedule(int n_layer);

}  // namespace lazyllm::prune
