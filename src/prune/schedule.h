// Schedules inside the library (docs/design.md 1.2, 1.4): the public types and parsers of
// include/lazyllm/schedule.h under prune::, and schedules laid out by depth. Pure data and
// parsing: no SIMD, no model.
#pragma once

#include <span>

#include "lazyllm/schedule.h"

namespace lazyllm::prune {

using ::lazyllm::cuts_for;
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
using ::lazyllm::ScheduleTier;
using ::lazyllm::StepCuts;
using ::lazyllm::to_string;
using ::lazyllm::validate_schedule;

// A schedule with boundary j at depth[j] of the n_layer layers keeping keep[j] (only
// boundaries and keep set). Boundaries are rounded, clamped into [1, n_layer - 1] and pushed up
// to stay strictly increasing; those that no longer fit are dropped with their keep entries
// (n_layer = 2 gives one boundary, n_layer < 2 none).
Schedule depth_schedule(int n_layer, std::span<const double> depth, std::span<const float> keep);

}  // namespace lazyllm::prune
