#include "prune/schedule.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <span>
#include <string>

#include "prune/schedule_checks.h"

namespace lazyllm {

using schedule_checks::check_boundaries;
using schedule_checks::check_counts;
using schedule_checks::check_keep;

namespace {

std::string_view trim(std::string_view s) {
    const auto is_space = [](char c) { return c == ' ' || c == '\t'; };
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

// Splits a comma list into trimmed items; every item must be non-empty.
Result<std::vector<std::string_view>> split_list(std::string_view list, std::string_view what) {
    std::vector<std::string_view> items;
    if (trim(list).empty()) {
        return make_error(ErrorCode::kInvalidArgument, "{} is empty: give a comma list", what);
    }
    size_t start = 0;
    while (true) {
        const size_t comma = list.find(',', start);
        const std::string_view item =
            trim(list.substr(start, comma == std::string_view::npos ? list.npos : comma - start));
        if (item.empty()) {
            return make_error(ErrorCode::kInvalidArgument, "{} item {} is empty (in '{}')", what,
                              items.size() + 1, list);
        }
        items.push_back(item);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return items;
}

bool parse_int(std::string_view s, int& out) {
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr == s.data() + s.size();
}

bool parse_double(std::string_view s, double& out) {
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(out);
}

// One item of a layers list: a layer index, or (`fraction`) a depth fraction in (0, 1) that maps
// to layer round(f * n_layer). `i` numbers the item in errors.
Result<int> parse_layer_item(std::string_view item, size_t i, bool fraction, int n_layer) {
    int index = 0;
    if (!fraction && parse_int(item, index)) return index;
    if (!fraction) {
        return make_error(ErrorCode::kInvalidArgument,
                          "layers item {} '{}' is not a layer index (an integer) or a depth "
                          "fraction",
                          i + 1, item);
    }
    double f = 0.0;
    if (!parse_double(item, f)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "layers item {} '{}' is not a number (the list holds depth fractions "
                          "because an item contains '.')",
                          i + 1, item);
    }
    if (f > 0.0 && f < 1.0) return static_cast<int>(std::lround(f * n_layer));
    return make_error(ErrorCode::kInvalidArgument,
                      "layers item {} '{}': depth fractions must be in (0, 1)", i + 1, item);
}

}  // namespace

Status validate_schedule(const Schedule& schedule, int n_layer) {
    if (n_layer < 1) {
        return make_error(ErrorCode::kInvalidArgument, "n_layer must be >= 1, got {}", n_layer);
    }
    LAZYLLM_TRY(schedule_checks::check_cuts(schedule.boundaries, schedule.keep, n_layer, ""));
    for (const auto& [name, value] : {std::pair{"keep_first", schedule.keep_first},
                                       std::pair{"keep_recent", schedule.keep_recent},
                                       std::pair{"min_context", schedule.min_context}}) {
        if (value < 0) {
            return make_error(ErrorCode::kInvalidArgument, "{} must be >= 0, got {}", name, value);
        }
    }
    if (schedule.score_layers < 1 || schedule.score_layers > kMaxScoreLayers) {
        return make_error(ErrorCode::kInvalidArgument, "score_layers must be in [1, {}], got {}",
                          kMaxScoreLayers, schedule.score_layers);
    }
    if (schedule.score_pool < 1 || schedule.score_pool > kMaxScorePool ||
        schedule.score_pool % 2 == 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          "score_pool must be an odd number in [1, {}], got {}", kMaxScorePool,
                          schedule.score_pool);
    }
    if (schedule.revive_max < -1) {
        return make_error(ErrorCode::kInvalidArgument,
                          "revive_max must be >= 0, or -1 for no bound, got {}",
                          schedule.revive_max);
    }
    if (!(schedule.revive_weight > 0.0f && schedule.revive_weight <= 1.0f)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "revive_weight must be in (0, 1] (1: the paper's selection), got {}",
                          schedule.revive_weight);
    }
    if (schedule.repair && (schedule.prune_decode || schedule.revive_max == 0)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "repair recomputes what a prompt step deferred in the next step, so it "
                          "needs decode steps that neither select (prune_decode {}) nor leave "
                          "deferred tokens out (revive_max {})",
                          schedule.prune_decode ? "on: turn it off" : "off",
                          schedule.revive_max == 0  ? std::string("0: use all")
                          : schedule.revive_max < 0 ? std::string("all")
                                                    : std::to_string(schedule.revive_max));
    }
    if (!(schedule.verify_margin >= 0.0f) || std::isinf(schedule.verify_margin)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "verify_margin must be >= 0 and finite (0: off), got {}",
                          schedule.verify_margin);
    }
    if (schedule.verify_margin > 0.0f && !schedule.repair) {
        return make_error(ErrorCode::kInvalidArgument,
                          "verify_margin {} needs repair: a near tie is settled by running the "
                          "repair before the next token (set repair, or verify_margin 0)",
                          schedule.verify_margin);
    }
    return schedule_checks::validate_tiers(schedule, n_layer);
}

Status schedule_checks::validate_tiers(const Schedule& schedule, int n_layer) {
    for (size_t t = 0; t < schedule.tiers.size(); ++t) {
        const ScheduleTier& tier = schedule.tiers[t];
        if (!schedule.repair) {
            return make_error(ErrorCode::kInvalidArgument,
                              "tiers need repair: a token deferred at one step's boundaries could "
                              "not revive at another tier's, so the next step must repair it "
                              "(set repair, or drop the tiers)");
        }
        if (tier.min_context < 1) {
            return make_error(ErrorCode::kInvalidArgument,
                              "tiers[{}].min_context must be >= 1, got {}", t, tier.min_context);
        }
        if (t > 0 && tier.min_context <= schedule.tiers[t - 1].min_context) {
            return make_error(ErrorCode::kInvalidArgument,
                              "tiers[{}].min_context {} is not above tiers[{}]'s {}: tiers are in "
                              "increasing order of min_context",
                              t, tier.min_context, t - 1, schedule.tiers[t - 1].min_context);
        }
        if (tier.boundaries.empty()) {
            return make_error(ErrorCode::kInvalidArgument, "tiers[{}] has no boundary", t);
        }
        LAZYLLM_TRY(check_cuts(tier.boundaries, tier.keep, n_layer, fmt::format("tiers[{}].", t)));
    }
    return {};
}

StepCuts cuts_for(const Schedule& schedule, int64_t n_total) {
    const std::vector<int>* boundaries = &schedule.boundaries;
    const std::vector<float>* keep = &schedule.keep;
    for (const ScheduleTier& tier : schedule.tiers) {
        if (n_total < tier.min_context) break;
        boundaries = &tier.boundaries;
        keep = &tier.keep;
    }
    return {*boundaries, *keep};
}

Result<Schedule> parse_schedule(std::string_view layers, std::string_view keep, int n_layer) {
    if (n_layer < 2) {
        return make_error(
            ErrorCode::kInvalidArgument,
            "a model of {} layers has no layer to prune before (n_layer must be >= 2)", n_layer);
    }
    LAZYLLM_ASSIGN_OR_RETURN(std::vector<std::string_view> layer_items,
                             split_list(layers, "layers"));
    LAZYLLM_ASSIGN_OR_RETURN(std::vector<std::string_view> keep_items, split_list(keep, "keep"));
    if (layer_items.size() > static_cast<size_t>(n_layer - 1)) {
        return make_error(
            ErrorCode::kInvalidArgument,
            "layers has {} items but a model of {} layers allows at most {} boundaries "
            "(n_layer - 1)",
            layer_items.size(), n_layer, n_layer - 1);
    }

    Schedule schedule;
    const bool fractions = std::any_of(layer_items.begin(), layer_items.end(), [](auto item) {
        return item.find('.') != std::string_view::npos;
    });
    for (size_t i = 0; i < layer_items.size(); ++i) {
        LAZYLLM_ASSIGN_OR_RETURN(const int b,
                                 parse_layer_item(layer_items[i], i, fractions, n_layer));
        schedule.boundaries.push_back(b);
    }
    LAZYLLM_TRY(check_boundaries(schedule.boundaries, n_layer, "layers", [&](size_t i) {
        return fractions ? fmt::format("layers item {} '{}' (layer {})", i + 1, layer_items[i],
                                       schedule.boundaries[i])
                         : fmt::format("layers item {} '{}'", i + 1, layer_items[i]);
    }));

    for (size_t i = 0; i < keep_items.size(); ++i) {
        double k = 0.0;
        if (!parse_double(keep_items[i], k)) {
            return make_error(ErrorCode::kInvalidArgument,
                              "keep item {} '{}' is not a number (keep fractions are in (0, 1])",
                              i + 1, keep_items[i]);
        }
        schedule.keep.push_back(static_cast<float>(k));
    }
    LAZYLLM_TRY(check_keep(schedule.keep, [&](size_t i) {
        return fmt::format("keep item {} '{}'", i + 1, keep_items[i]);
    }));
    LAZYLLM_TRY(check_counts(layer_items.size(), keep_items.size(), "layers", "keep"));
    return schedule;
}

std::vector<float> keep_profile(const Schedule& schedule, int n_layer) {
    std::vector<float> p(static_cast<size_t>(std::max(n_layer, 0)), 1.0f);
    for (size_t j = 0; j < schedule.boundaries.size(); ++j) {
        const int end = j + 1 < schedule.boundaries.size() ? schedule.boundaries[j + 1] : n_layer;
        for (int l = std::max(schedule.boundaries[j], 0); l < std::min(end, n_layer); ++l) {
            p[static_cast<size_t>(l)] = schedule.keep[j];
        }
    }
    return p;
}

double predicted_prefill_fraction(const Schedule& schedule, int n_layer) {
    if (n_layer <= 0) return 1.0;
    double sum = 0.0;
    for (float k : keep_profile(schedule, n_layer)) sum += k;
    return sum / n_layer;
}

std::string to_string(const Schedule& schedule) {
    std::string out = "layers=";
    for (size_t i = 0; i < schedule.boundaries.size(); ++i) {
        out += fmt::format("{}{}", i ? "," : "", schedule.boundaries[i]);
    }
    out += " keep=";
    for (size_t i = 0; i < schedule.keep.size(); ++i) {
        out += fmt::format("{}{}", i ? "," : "", schedule.keep[i]);
    }
    if (schedule.keep_first != 0) out += fmt::format(" keep_first={}", schedule.keep_first);
    if (schedule.keep_recent != 0) out += fmt::format(" keep_recent={}", schedule.keep_recent);
    if (schedule.min_context != 0) out += fmt::format(" min_context={}", schedule.min_context);
    if (!schedule.prune_decode) out += " prune_decode=false";
    if (schedule.score_layers != 1) out += fmt::format(" score_layers={}", schedule.score_layers);
    if (schedule.score_pool != 1) out += fmt::format(" score_pool={}", schedule.score_pool);
    if (schedule.revive_max >= 0) out += fmt::format(" revive_max={}", schedule.revive_max);
    if (schedule.revive_weight != 1.0f) {
        out += fmt::format(" revive_weight={}", schedule.revive_weight);
    }
    if (schedule.repair) out += " repair=true";
    if (schedule.verify_margin != 0.0f) {
        out += fmt::format(" verify_margin={}", schedule.verify_margin);
    }
    for (size_t t = 0; t < schedule.tiers.size(); ++t) {
        const ScheduleTier& tier = schedule.tiers[t];
        out += fmt::format("{}{}:{}/{}", t ? ";" : " tiers=", tier.min_context,
                           fmt::join(tier.boundaries, ","), fmt::join(tier.keep, ","));
    }
    return out;
}

void apply(const ScheduleOverrides& o, Schedule& s) {
    if (o.keep_first) s.keep_first = *o.keep_first;
    if (o.keep_recent) s.keep_recent = *o.keep_recent;
    if (o.min_context) s.min_context = *o.min_context;
    if (o.prune_decode) s.prune_decode = *o.prune_decode;
    if (o.score_layers) s.score_layers = *o.score_layers;
    if (o.score_pool) s.score_pool = *o.score_pool;
    if (o.revive_max) s.revive_max = *o.revive_max;
    if (o.revive_weight) s.revive_weight = *o.revive_weight;
    // Decode steps that do not select have no selection to weigh: a preset's weight goes with
    // its selecting decode steps, unless asked for too (then Session::create names the conflict).
    if (o.prune_decode == false && !o.revive_weight) s.revive_weight = 1.0f;
    // Decode steps that select, or that never revive, are the user's choice over a preset's
    // repair: it turns off unless asked for too (then validate_schedule names the conflict).
    if ((o.prune_decode.value_or(false) || o.revive_max.value_or(-1) == 0) && !o.repair) {
        s.repair = false;
    }
    if (o.repair) s.repair = *o.repair;
    if (o.verify_margin) s.verify_margin = *o.verify_margin;
    if (!s.repair) {
        s.tiers.clear();  // chosen with repair; validate_schedule refuses them without
        if (!o.verify_margin) s.verify_margin = 0.0f;
    }
}

Schedule prune::depth_schedule(int n_layer, std::span<const double> depth,
                               std::span<const float> keep) {
    Schedule schedule;
    for (size_t j = 0; j < depth.size() && j < keep.size(); ++j) {
        int b = std::clamp(static_cast<int>(std::lround(depth[j] * n_layer)), 1,
                           std::max(1, n_layer - 1));
        if (!schedule.boundaries.empty()) b = std::max(b, schedule.boundaries.back() + 1);
        if (b > n_layer - 1) break;  // no room left: drop this and later boundaries
        schedule.boundaries.push_back(b);
        schedule.keep.push_back(keep[j]);
    }
    return schedule;
}

Result<Policy> parse_policy(std::string_view name) {
    constexpr std::array<Policy, 5> kAll = {Policy::kFull, Policy::kLazy, Policy::kStatic,
                                            Policy::kRandom, Policy::kGemFilter};
    for (Policy p : kAll) {
        if (policy_name(p) == name) return p;
    }
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown policy '{}' (expected full, lazy, static, random or gemfilter)",
                      name);
}

std::string_view policy_name(Policy policy) {
    switch (policy) {
        case Policy::kFull:
            return "full";
        case Policy::kLazy:
            return "lazy";
        case Policy::kStatic:
            return "static";
        case Policy::kRandom:
            return "random";
        case Policy::kGemFilter:
            return "gemfilter";
    }
    return "unknown";
}

}  // namespace lazyllm
