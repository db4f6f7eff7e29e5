// Schedule files (include/lazyllm/schedule.h): JSON read with every field checked and a name for
// each fault, written through a temporary file and a rename.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>

#include "base/read_file.h"
#include "prune/schedule.h"
#include "prune/schedule_checks.h"

namespace lazyllm {

namespace {

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

using nlohmann::json;

// Unsigned JSON integers above this would wrap when read as int64_t.
constexpr uint64_t kIntMax = static_cast<uint64_t>(std::numeric_limits<int>::max());

// The file's JSON object, with no key outside the format's.
Result<json> read_json_object(const std::string& path) {
    auto text = read_whole_file(path);
    if (!text) return text.error();
    json doc;
    try {
        doc = json::parse(text.value());
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number overflow
        return make_error(ErrorCode::kCorrupt, "invalid JSON: {}", e.what());
    }
    if (!doc.is_object()) return make_error(ErrorCode::kCorrupt, "top level must be an object");
    constexpr std::array<std::string_view, 17> kKeys = {
        "version",       "model",       "n_layer",       "layers",       "keep",       "keep_first",
        "keep_recent",   "min_context", "prune_decode",  "score_layers", "score_pool", "revive_max",
        "revive_weight", "repair",      "verify_margin", "tiers",        "meta"};
    for (const auto& [key, value] : doc.items()) {
        if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
            return make_error(ErrorCode::kInvalidArgument,
                              "unknown key '{}' (allowed: {}; put free-form data in \"meta\")", key,
                              fmt::join(kKeys, ", "));
        }
    }
    return doc;
}

Result<int> get_int(const json& doc, const char* key, int64_t lo, std::string_view name = {}) {
    const json& v = doc.at(key);
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > kIntMax) ||
        v.get<int64_t>() < lo || v.get<int64_t>() > std::numeric_limits<int>::max()) {
        return make_error(ErrorCode::kInvalidArgument, "\"{}\" must be an integer >= {}, got {}",
                          name.empty() ? std::string_view(key) : name, lo, v.dump());
    }
    return static_cast<int>(v.get<int64_t>());
}

// "layers" and "keep" of the schedule or of a tier (`prefix` "tiers[0]." names it in errors).
Status read_cuts(const json& doc, const std::string& prefix, std::vector<int>& boundaries,
                 std::vector<float>& keep_out) {
    for (const char* key : {"layers", "keep"}) {
        if (!doc.contains(key) || !doc[key].is_array()) {
            return make_error(ErrorCode::kInvalidArgument, "\"{}{}\" must be present and an array",
                              prefix, key);
        }
    }
    const json& layers = doc["layers"];
    for (size_t i = 0; i < layers.size(); ++i) {
        const json& v = layers[i];
        if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > kIntMax) ||
            v.get<int64_t>() < std::numeric_limits<int>::min() ||
            v.get<int64_t>() > std::numeric_limits<int>::max()) {
            return make_error(ErrorCode::kInvalidArgument,
                              "{}layers[{}] = {} is not an integer layer index", prefix, i,
                              v.dump());
        }
        boundaries.push_back(static_cast<int>(v.get<int64_t>()));
    }
    const json& keep = doc["keep"];
    for (size_t i = 0; i < keep.size(); ++i) {
        if (!keep[i].is_number()) {
            return make_error(ErrorCode::kInvalidArgument, "{}keep[{}] = {} is not a number",
                              prefix, i, keep[i].dump());
        }
        keep_out.push_back(static_cast<float>(keep[i].get<double>()));
    }
    return {};
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
            return make_error(
                ErrorCode::kInvalidArgument,
                "made for a model of {} layers{} but this model has {} layers", info.n_layer,
                info.model.empty() ? "" : fmt::format(" ('{}')", info.model), n_layer);
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

// A schedule file's "tiers" array, typed but not yet validated (Schedule::tiers).
Result<std::vector<ScheduleTier>> read_tiers(const json& tiers) {
    std::vector<ScheduleTier> out;
    if (!tiers.is_array()) {
        return make_error(ErrorCode::kInvalidArgument, "\"tiers\" must be an array, got {}",
                          tiers.dump());
    }
    for (size_t t = 0; t < tiers.size(); ++t) {
        const std::string name = fmt::format("tiers[{}]", t);
        const json& v = tiers[t];
        if (!v.is_object()) {
            return make_error(ErrorCode::kInvalidArgument, "{} must be an object, got {}", name,
                              v.dump());
        }
        for (const auto& [key, value] : v.items()) {
            if (key != "min_context" && key != "layers" && key != "keep") {
                return make_error(ErrorCode::kInvalidArgument,
                                  "{}: unknown key '{}' (allowed: min_context, layers, keep)", name,
                                  key);
            }
        }
        ScheduleTier tier;
        if (!v.contains("min_context")) {
            return make_error(ErrorCode::kInvalidArgument, "{}.min_context must be present", name);
        }
        LAZYLLM_ASSIGN_OR_RETURN(tier.min_context,
                                 get_int(v, "min_context", 1, name + ".min_context"));
        LAZYLLM_TRY(read_cuts(v, name + ".", tier.boundaries, tier.keep));
        out.push_back(std::move(tier));
    }
    return out;
}

// The schedule's fields, typed but not yet validated against the model.
Result<Schedule> read_fields(const json& doc) {
    Schedule schedule;
    LAZYLLM_TRY(read_cuts(doc, "", schedule.boundaries, schedule.keep));
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
    for (const auto& [key, field] : {std::pair{"revive_weight", &schedule.revive_weight},
                                     std::pair{"verify_margin", &schedule.verify_margin}}) {
        if (!doc.contains(key)) continue;
        if (!doc[key].is_number()) {
            return make_error(ErrorCode::kInvalidArgument, "\"{}\" must be a number, got {}", key,
                              doc[key].dump());
        }
        *field = static_cast<float>(doc[key].get<double>());
    }
    if (doc.contains("tiers")) {
        LAZYLLM_ASSIGN_OR_RETURN(schedule.tiers, read_tiers(doc["tiers"]));
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

Result<std::vector<ScheduleTier>> parse_tiers_json(std::string_view text) {
    json doc;
    try {
        doc = json::parse(text);
    } catch (const json::exception& e) {
        return make_error(ErrorCode::kInvalidArgument, "tiers: invalid JSON: {}", e.what());
    }
    return read_tiers(doc);
}

Result<ScheduleFile> read_schedule_file(const std::string& path, int n_layer) {
    auto file = read_schedule(path, n_layer);
    if (!file.ok()) return file_error(path, file.error());
    return file;
}

Result<Schedule> load_schedule_file(const std::string& path, int n_layer) {
    LAZYLLM_ASSIGN_OR_RETURN(ScheduleFile file, read_schedule_file(path, n_layer));
    return std::move(file.schedule);
}

Status check_schedule_path(const std::string& path) {
    namespace fs = std::filesystem;
    if (path.empty()) {
        return Error(ErrorCode::kInvalidArgument, "no schedule file named (an empty path)");
    }
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);  // through symlinks
    if (fs::is_symlink(fs::symlink_status(path, ec)) && !fs::exists(st)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "'{}' is a symlink to '{}', which does not exist", path,
                          fs::read_symlink(path, ec).string());
    }
    if (fs::exists(st) && !fs::is_regular_file(st)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "'{}' is {}, not a file: name a schedule file to write", path,
                          fs::is_directory(st) ? "a folder" : "a device or other special file");
    }
    const fs::path dir = fs::path(path).parent_path();
    if (!dir.empty() && !fs::is_directory(dir, ec)) {
        return make_error(ErrorCode::kNotFound, "the folder of '{}' does not exist", path);
    }
    return {};
}

Status save_schedule_file(const std::string& path, const Schedule& schedule,
                          const ScheduleFileInfo& info) {
    using nlohmann::ordered_json;
    LAZYLLM_TRY(check_schedule_path(path));
    if (info.n_layer > 0) {
        Status valid = validate_schedule(schedule, info.n_layer);
        if (!valid.ok()) return file_error(path, valid.error());
    } else {
        // Model unknown: check what can be checked without n_layer.
        Status shape = schedule_checks::check_cuts(schedule.boundaries, schedule.keep, 0, "");
        if (shape.ok()) shape = schedule_checks::validate_tiers(schedule, 0);
        if (!shape.ok()) return file_error(path, shape.error());
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
    if (schedule.revive_weight != 1.0f)
        doc["revive_weight"] = float_for_json(schedule.revive_weight);
    if (schedule.repair) doc["repair"] = true;
    if (schedule.verify_margin != 0.0f)
        doc["verify_margin"] = float_for_json(schedule.verify_margin);
    if (!schedule.tiers.empty()) {
        doc["tiers"] = ordered_json::array();
        for (const ScheduleTier& tier : schedule.tiers) {
            ordered_json t;
            t["min_context"] = tier.min_context;
            t["layers"] = tier.boundaries;
            t["keep"] = ordered_json::array();
            for (float k : tier.keep) t["keep"].push_back(float_for_json(k));
            doc["tiers"].push_back(std::move(t));
        }
    }
    doc["meta"] = std::move(meta);

    // A symlink stays: its target is replaced (written beside it, then renamed over it).
    std::error_code ec;
    std::string dest = path;
    if (std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec))) {
        dest = std::filesystem::weakly_canonical(path, ec).string();
        if (ec) {
            return file_error(path, make_error(ErrorCode::kIo, "cannot resolve the link '{}': {}",
                                               path, ec.message()));
        }
    }
    const std::string tmp = dest + ".tmp";
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
    std::filesystem::rename(tmp, dest, ec);
    if (ec) {
        const std::string reason = ec.message();
        std::filesystem::remove(tmp, ec);
        return file_error(path, make_error(ErrorCode::kIo, "cannot rename '{}': {}", tmp, reason));
    }
    return {};
}

}  // namespace lazyllm
