#include "prune/schedule.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <system_error>
#include <tuple>

namespace lazyllm {

namespace {

// The rules of design.md 1.2 / 1.4, shared by flags and files. `name(i)` describes entry i in the
// caller's terms ("layers item 2 '0.3' (layer 9)" or "layers[1] = 9"). n_layer <= 0 means the
// model is unknown: only the order and the lower bound are checked.
template <typename NameFn>
Status check_boundaries(const std::vector<int>& boundaries, int n_layer, std::string_view what,
                        NameFn name) {
    if (n_layer > 0 && boundaries.size() > static_cast<size_t>(n_layer - 1)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "{} has {} boundaries but a {}-layer model allows at most {} "
                          "(n_layer - 1)",
                          what, boundaries.size(), n_layer, n_layer - 1);
    }
    for (size_t i = 0; i < boundaries.size(); ++i) {
        const int b = boundaries[i];
        if (b < 1 || (n_layer > 0 && b > n_layer - 1)) {
            if (n_layer > 0) {
                return make_error(ErrorCode::kInvalidArgument,
                                  "{}: boundary layers must be in [1, {}] for a {}-layer model "
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

Status check_counts(size_t n_layers, size_t n_keep, std::string_view layers_name,
                    std::string_view keep_name) {
    if (n_layers != n_keep) {
        return make_error(ErrorCode::kInvalidArgument,
                          "{} has {} entries but {} has {}: one keep fraction per boundary",
                          layers_name, n_layers, keep_name, n_keep);
    }
    return {};
}

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

// Shortest decimal form of a float as a double (0.1f -> 0.1), so files read "0.1", not
// "0.10000000149011612", and reading back gives the same float.
double float_for_json(float f) {
    double d = 0.0;
    const std::string s = fmt::format("{}", f);
    std::from_chars(s.data(), s.data() + s.size(), d);
    return d;
}

Error file_error(const std::string& path, const Error& e) {
    return e.with_context(fmt::format("schedule file '{}'", path));
}

}  // namespace

Status validate_schedule(const Schedule& schedule, int n_layer) {
    if (n_layer < 1) {
        return make_error(ErrorCode::kInvalidArgument, "n_layer must be >= 1, got {}", n_layer);
    }
    LAZYLLM_TRY(check_counts(schedule.boundaries.size(), schedule.keep.size(), "layers", "keep"));
    LAZYLLM_TRY(check_boundaries(schedule.boundaries, n_layer, "layers", [&](size_t i) {
        return fmt::format("layers[{}] = {}", i, schedule.boundaries[i]);
    }));
    LAZYLLM_TRY(check_keep(schedule.keep, [&](size_t i) {
        return fmt::format("keep[{}] = {}", i, schedule.keep[i]);
    }));
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
    return {};
}

Result<Schedule> parse_schedule(std::string_view layers, std::string_view keep, int n_layer) {
    if (n_layer < 2) {
        return make_error(ErrorCode::kInvalidArgument,
                          "a {}-layer model has no layer to prune before (n_layer must be >= 2)",
                          n_layer);
    }
    LAZYLLM_ASSIGN_OR_RETURN(std::vector<std::string_view> layer_items,
                             split_list(layers, "layers"));
    LAZYLLM_ASSIGN_OR_RETURN(std::vector<std::string_view> keep_items, split_list(keep, "keep"));
    if (layer_items.size() > static_cast<size_t>(n_layer - 1)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "layers has {} items but a {}-layer model allows at most {} boundaries "
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
    if (schedule.repair) out += " repair=true";
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
    // Decode steps that select, or that never revive, are the user's choice over a preset's
    // repair: it turns off unless asked for too (then validate_schedule names the conflict).
    if ((o.prune_decode.value_or(false) || o.revive_max.value_or(-1) == 0) && !o.repair) {
        s.repair = false;
    }
    if (o.repair) s.repair = *o.repair;
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

namespace {

using nlohmann::json;

// The file's JSON object, with no key outside the format's.
Result<json> read_json_object(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(ErrorCode::kNotFound, "cannot open for reading");
    std::stringstream buffer;
    buffer << in.rdbuf();
    json doc;
    try {
        doc = json::parse(buffer.str());
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number overflow
        return make_error(ErrorCode::kCorrupt, "invalid JSON: {}", e.what());
    }
    if (!doc.is_object()) return make_error(ErrorCode::kCorrupt, "top level must be an object");
    constexpr std::array<std::string_view, 14> kKeys = {
        "version",    "model",       "n_layer",     "layers",       "keep",
        "keep_first", "keep_recent", "min_context", "prune_decode", "score_layers",
        "score_pool", "revive_max",  "repair",      "meta"};
    for (const auto& [key, value] : doc.items()) {
        if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
            return make_error(ErrorCode::kInvalidArgument,
                              "unknown key '{}' (allowed: {}; put free-form data in \"meta\")",
                              key, fmt::join(kKeys, ", "));
        }
    }
    return doc;
}

Result<int> get_int(const json& doc, const char* key, int64_t lo) {
    const json& v = doc.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < lo ||
        v.get<int64_t>() > std::numeric_limits<int>::max()) {
        return make_error(ErrorCode::kInvalidArgument, "\"{}\" must be an integer >= {}, got {}",
                          key, lo, v.dump());
    }
    return static_cast<int>(v.get<int64_t>());
}

// "version", "model", "n_layer" (must match the model's) and "meta".
Result<ScheduleFileInfo> read_info(const json& doc, int n_layer) {
    ScheduleFileInfo info;
    if (doc.contains("version")) {
        const json& v = doc["version"];
        if (!v.is_number_integer() || v.get<int64_t>() != 1) {
            return make_error(ErrorCode::kUnsupported, "version {} is not supported (expected 1)",
                              v.dump());
        }
    }
    if (doc.contains("model")) {
        if (!doc["model"].is_string()) {
            return make_error(ErrorCode::kInvalidArgument, "\"model\" must be a string, got {}",
                              doc["model"].dump());
        }
        info.model = doc["model"].get<std::string>();
    }
    if (doc.contains("n_layer")) {
        LAZYLLM_ASSIGN_OR_RETURN(info.n_layer, get_int(doc, "n_layer", 1));
        if (info.n_layer != n_layer) {
            return make_error(ErrorCode::kInvalidArgument,
                              "made for a {}-layer model{} but this model has {} layers",
                              info.n_layer,
                              info.model.empty() ? "" : fmt::format(" ('{}')", info.model),
                              n_layer);
        }
    }
    if (doc.contains("meta")) {
        if (!doc["meta"].is_object()) {
            return make_error(ErrorCode::kInvalidArgument, "\"meta\" must be an object, got {}",
                              doc["meta"].dump());
        }
        info.meta_json = doc["meta"].dump();
    }
    return info;
}

// The schedule's fields, typed but not yet validated against the model.
Result<Schedule> read_fields(const json& doc) {
    Schedule schedule;
    for (const char* key : {"layers", "keep"}) {
        if (!doc.contains(key) || !doc[key].is_array()) {
            return make_error(ErrorCode::kInvalidArgument, "\"{}\" must be present and an array",
                              key);
        }
    }
    const json& layers = doc["layers"];
    for (size_t i = 0; i < layers.size(); ++i) {
        const json& v = layers[i];
        if (!v.is_number_integer() || v.get<int64_t>() < std::numeric_limits<int>::min() ||
            v.get<int64_t>() > std::numeric_limits<int>::max()) {
            return make_error(ErrorCode::kInvalidArgument,
                              "layers[{}] = {} is not an integer layer index", i, v.dump());
        }
        schedule.boundaries.push_back(static_cast<int>(v.get<int64_t>()));
    }
    const json& keep = doc["keep"];
    for (size_t i = 0; i < keep.size(); ++i) {
        if (!keep[i].is_number()) {
            return make_error(ErrorCode::kInvalidArgument, "keep[{}] = {} is not a number", i,
                              keep[i].dump());
        }
        schedule.keep.push_back(static_cast<float>(keep[i].get<double>()));
    }
    for (const auto& [key, field, lo] : {std::tuple{"keep_first", &schedule.keep_first, 0},
                                          std::tuple{"keep_recent", &schedule.keep_recent, 0},
                                          std::tuple{"min_context", &schedule.min_context, 0},
                                          std::tuple{"score_layers", &schedule.score_layers, 1},
                                          std::tuple{"score_pool", &schedule.score_pool, 1},
                                          std::tuple{"revive_max", &schedule.revive_max, -1}}) {
        if (!doc.contains(key)) continue;
        LAZYLLM_ASSIGN_OR_RETURN(*field, get_int(doc, key, lo));
    }
    for (const auto& [key, field] : {std::pair{"prune_decode", &schedule.prune_decode},
                                     std::pair{"repair", &schedule.repair}}) {
        if (!doc.contains(key)) continue;
        if (!doc[key].is_boolean()) {
            return make_error(ErrorCode::kInvalidArgument, "\"{}\" must be true or false, got {}",
                              key, doc[key].dump());
        }
        *field = doc[key].get<bool>();
    }
    return schedule;
}

Result<ScheduleFile> read_schedule(const std::string& path, int n_layer) {
    LAZYLLM_ASSIGN_OR_RETURN(const json doc, read_json_object(path));
    ScheduleFile file;
    LAZYLLM_ASSIGN_OR_RETURN(file.info, read_info(doc, n_layer));
    LAZYLLM_ASSIGN_OR_RETURN(file.schedule, read_fields(doc));
    LAZYLLM_TRY(validate_schedule(file.schedule, n_layer));
    return file;
}

}  // namespace

Result<ScheduleFile> read_schedule_file(const std::string& path, int n_layer) {
    auto file = read_schedule(path, n_layer);
    if (!file.ok()) return file_error(path, file.error());
    return file;
}

Result<Schedule> load_schedule_file(const std::string& path, int n_layer) {
    LAZYLLM_ASSIGN_OR_RETURN(ScheduleFile file, read_schedule_file(path, n_layer));
    return std::move(file.schedule);
}

Status save_schedule_file(const std::string& path, const Schedule& schedule,
                          const ScheduleFileInfo& info) {
    using nlohmann::ordered_json;
    if (info.n_layer > 0) {
        Status valid = validate_schedule(schedule, info.n_layer);
        if (!valid.ok()) return file_error(path, valid.error());
    } else {
        // Model unknown: check what can be checked without n_layer.
        LAZYLLM_TRY(
            check_counts(schedule.boundaries.size(), schedule.keep.size(), "layers", "keep"));
        LAZYLLM_TRY(check_boundaries(schedule.boundaries, 0, "layers", [&](size_t i) {
            return fmt::format("layers[{}] = {}", i, schedule.boundaries[i]);
        }));
        LAZYLLM_TRY(check_keep(schedule.keep, [&](size_t i) {
            return fmt::format("keep[{}] = {}", i, schedule.keep[i]);
        }));
    }
    ordered_json meta;
    try {
        meta = ordered_json::parse(info.meta_json.empty() ? "{}" : info.meta_json);
    } catch (const ordered_json::parse_error& e) {
        return file_error(
            path, make_error(ErrorCode::kInvalidArgument, "meta is not valid JSON: {}", e.what()));
    }
    if (!meta.is_object()) {
        return file_error(path, make_error(ErrorCode::kInvalidArgument,
                                           "meta must be a JSON object, got {}", meta.dump()));
    }

    ordered_json doc;
    doc["version"] = 1;
    if (!info.model.empty()) doc["model"] = info.model;
    if (info.n_layer > 0) doc["n_layer"] = info.n_layer;
    doc["layers"] = schedule.boundaries;
    doc["keep"] = ordered_json::array();
    for (float k : schedule.keep) doc["keep"].push_back(float_for_json(k));
    doc["keep_first"] = schedule.keep_first;
    doc["keep_recent"] = schedule.keep_recent;
    doc["min_context"] = schedule.min_context;
    doc["prune_decode"] = schedule.prune_decode;
    doc["score_layers"] = schedule.score_layers;
    doc["score_pool"] = schedule.score_pool;
    if (schedule.revive_max >= 0) doc["revive_max"] = schedule.revive_max;  // older readers
    if (schedule.repair) doc["repair"] = true;
    doc["meta"] = std::move(meta);

    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) {
            return file_error(path,
                              make_error(ErrorCode::kIo, "cannot open '{}' for writing", tmp));
        }
        out << doc.dump(2) << '\n';
        out.close();
        if (!out) return file_error(path, make_error(ErrorCode::kIo, "write to '{}' failed", tmp));
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        const std::string reason = ec.message();
        std::filesystem::remove(tmp, ec);
        return file_error(path, make_error(ErrorCode::kIo, "cannot rename '{}': {}", tmp, reason));
    }
    return {};
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
