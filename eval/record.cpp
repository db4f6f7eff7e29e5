#include "eval/record.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace lazyllm::eval {

std::string to_json_line(const SampleRecord& r) {
    nlohmann::json j;
    j["task"] = r.task;
    j["id"] = r.id;
    j["prompt_sha256"] = r.prompt_sha256;
    j["length"] = r.length;
    j["n_prompt"] = r.n_prompt;
    j["depth"] = r.depth;
    j["policy"] = r.policy;
    j["schedule"] = r.schedule;
    j["metric"] = r.metric;
    j["prediction"] = r.prediction;
    j["answers"] = r.answers;
    j["score"] = r.score;
    j["ttft_ms"] = r.ttft_ms;
    j["pct_computed"] = r.pct_computed;
    j["prefill_rows_per_layer"] = r.prefill_rows_per_layer;
    j["n_gen"] = r.n_gen;
    j["stop_reason"] = r.stop_reason;
    j["truncated"] = r.truncated;
    j["verified"] = r.verified;
    // Predictions are model output: replace invalid UTF-8 rather than throw.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<SampleRecord> parse_json_line(std::string_view line) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
        return make_error(ErrorCode::kInvalidArgument, "not a JSON object");
    }
    SampleRecord r;
    for (const char* key : {"task", "id", "policy"}) {
        if (!j.contains(key) || !j[key].is_string()) {
            return make_error(ErrorCode::kInvalidArgument, "field '{}' is missing or not a string",
                              key);
        }
    }
    // Field-by-field with defaults, so records from older runs stay readable.
    auto get = [&j](const char* key, auto& out) {
        using T = std::decay_t<decltype(out)>;
        if (!j.contains(key) || j[key].is_null()) return true;
        try {
            out = j[key].get<T>();
        } catch (const nlohmann::json::exception&) {
            return false;
        }
        return true;
    };
    bool ok = get("task", r.task) && get("id", r.id) && get("policy", r.policy) &&
              get("prompt_sha256", r.prompt_sha256) && get("length", r.length) &&
              get("n_prompt", r.n_prompt) && get("depth", r.depth) && get("schedule", r.schedule) &&
              get("metric", r.metric) && get("prediction", r.prediction) &&
              get("answers", r.answers) && get("score", r.score) && get("ttft_ms", r.ttft_ms) &&
              get("pct_computed", r.pct_computed) &&
              get("prefill_rows_per_layer", r.prefill_rows_per_layer) && get("n_gen", r.n_gen) &&
              get("stop_reason", r.stop_reason) && get("truncated", r.truncated) &&
              get("verified", r.verified);
    if (!ok) return make_error(ErrorCode::kInvalidArgument, "a field has the wrong type");
    return r;
}

Result<RecordFile> read_records(const std::string& path) {
    RecordFile f;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return f;
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(ErrorCode::kNotFound, "cannot read '{}'", path);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    f.ends_with_newline = text.empty() || text.back() == '\n';
    size_t pos = 0;
    int line_no = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        ++line_no;
        const std::string_view line(text.data() + pos, end - pos);
        pos = end + 1;
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        auto r = parse_json_line(line);
        if (!r.ok()) {
            f.warnings.push_back(
                fmt::format("{}:{}: skipped: {}", path, line_no, r.error().message()));
            continue;
        }
        f.records.push_back(std::move(r).value());
    }
    return f;
}

}  // namespace lazyllm::eval
