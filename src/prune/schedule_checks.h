// The checks of a schedule's boundaries and keep fractions (design.md 1.2 / 1.4), shared by
// the flag parser, validate_schedule and the schedule file (schedule.cpp, schedule_file.cpp).
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "lazyllm/result.h"
#include "lazyllm/schedule.h"

namespace lazyllm::schedule_checks {

// The rules of design.md 1.2 / 1.4, shared by flags and files. `name(i)` describes entry i in the
// caller's terms ("layers item 2 '0.3' (layer 9)" or "layers[1] = 9"). n_layer <= 0 means the
// model is unknown: only the order and the lower bound are checked.
template <typename NameFn>
Status check_boundaries(const std::vector<int>& boundaries, int n_layer, std::string_view what,
                        NameFn name) {
    if (n_layer > 0 && boundaries.size() > static_cast<size_t>(n_layer - 1)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "{} has {} boundaries but a model of {} layers allows at most {} "
                          "(n_layer - 1)",
                          what, boundaries.size(), n_layer, n_layer - 1);
    }
    for (size_t i = 0; i < boundaries.size(); ++i) {
        const int b = boundaries[i];
        if (b < 1 || (n_layer > 0 && b > n_layer - 1)) {
            if (n_layer > 0) {
                return make_error(ErrorCode::kInvalidArgument,
                                  "{}: boundary layers must be in [1, {}] for a model of {} layers "
                                  "(pruning happens before the layer, scored at the one before)",
                                  name(i), n_layer - 1, n_layer);
            }
            return make_error(ErrorCode::kInvalidArgument, "{}: boundary layers must be >= 1",
                              name(i));
        }
        if (i > 0 && b == boundaries[i - 1]) {
            return make_error(ErrorCode::kInvalidArgument,
                              "{} duplicates {}: boundary layers must be distinct", name(i),
                              name(i - 1));
        }
        if (i > 0 && b < boundaries[i - 1]) {
            return make_error(ErrorCode::kInvalidArgument,
                              "{} comes after {}: boundary layers must be in increasing order",
                              name(i), name(i - 1));
        }
    }
    return {};
}

template <typename NameFn>
Status check_keep(const std::vector<float>& keep, NameFn name) {
    for (size_t i = 0; i < keep.size(); ++i) {
        if (!(keep[i] > 0.0f && keep[i] <= 1.0f)) {
            return make_error(ErrorCode::kInvalidArgument, "{}: keep fractions must be in (0, 1]",
                              name(i));
        }
        if (i > 0 && keep[i] > keep[i - 1]) {
            return make_error(ErrorCode::kInvalidArgument,
                              "{} is larger than {}: keep fractions are cumulative (of the whole "
                              "context) and must be non-increasing",
                              name(i), name(i - 1));
        }
    }
    return {};
}

inline Status check_counts(size_t n_layers, size_t n_keep, std::string_view layers_name,
                           std::string_view keep_name) {
    if (n_layers != n_keep) {
        return make_error(ErrorCode::kInvalidArgument,
                          "{} has {} entries but {} has {}: one keep fraction per boundary",
                          layers_name, n_layers, keep_name, n_keep);
    }
    return {};
}

// A boundary list and its keep fractions; `prefix` ("" or "tiers[0].") starts the names in errors
// ("tiers[0].layers[1] = 9"). n_layer <= 0: the model is unknown.
inline Status check_cuts(const std::vector<int>& boundaries, const std::vector<float>& keep,
                         int n_layer, const std::string& prefix) {
    LAZYLLM_TRY(check_counts(boundaries.size(), keep.size(), prefix + "layers", prefix + "keep"));
    LAZYLLM_TRY(check_boundaries(boundaries, n_layer, prefix + "layers", [&](size_t i) {
        return fmt::format("{}layers[{}] = {}", prefix, i, boundaries[i]);
    }));
    return check_keep(keep,
                      [&](size_t i) { return fmt::format("{}keep[{}] = {}", prefix, i, keep[i]); });
}

// The tiers' rules (Schedule::tiers); n_layer <= 0: the model is unknown.
Status validate_tiers(const Schedule& schedule, int n_layer);

}  // namespace lazyllm::schedule_checks
