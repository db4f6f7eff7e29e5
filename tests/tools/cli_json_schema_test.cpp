// `lazyllm run --json` and `run --compare --json` against docs/cli_run.schema.json (described in
// docs/cli_json.md): every field the binary writes is in the schema with its type and range, and
// every required one is written. The validator covers the JSON Schema keywords that file uses:
// type, properties, required, additionalProperties, items, enum, minimum, maximum, $ref, oneOf.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tools/cli_runner.h"

namespace {

using nlohmann::json;

bool has_type(const json& v, const std::string& t) {
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "boolean") return v.is_boolean();
    if (t == "integer") return v.is_number_integer();
    if (t == "number") return v.is_number();
    return false;
}

// Appends "path: problem" lines to `errors`.
void validate(const json& root, const json& schema, const json& v, const std::string& path,
              std::vector<std::string>& errors) {
    if (schema.contains("$ref")) {
        const std::string ref = schema["$ref"];
        const std::string prefix = "#/$defs/";
        ASSERT_EQ(ref.rfind(prefix, 0), 0u) << ref;
        validate(root, root["$defs"][ref.substr(prefix.size())], v, path, errors);
        return;
    }
    if (schema.contains("oneOf")) {
        int n_match = 0;
        for (const json& alt : schema["oneOf"]) {
            std::vector<std::string> e;
            validate(root, alt, v, path, e);
            n_match += e.empty() ? 1 : 0;
        }
        if (n_match != 1)
            errors.push_back(path + ": matches " + std::to_string(n_match) + " of oneOf");
        return;
    }
    if (schema.contains("type") && !has_type(v, schema["type"])) {
        errors.push_back(path + ": not of type " + schema["type"].get<std::string>());
        return;
    }
    if (schema.contains("enum")) {
        bool found = false;
        for (const json& e : schema["enum"]) found = found || e == v;
        if (!found) errors.push_back(path + ": " + v.dump() + " not in the enum");
    }
    if (schema.contains("minimum") && v.is_number() &&
        v.get<double>() < schema["minimum"].get<double>()) {
        errors.push_back(path + ": below the minimum");
    }
    if (schema.contains("maximum") && v.is_number() &&
        v.get<double>() > schema["maximum"].get<double>()) {
        errors.push_back(path + ": above the maximum");
    }
    if (v.is_object()) {
        const json props = schema.value("properties", json::object());
        for (const auto& [key, value] : v.items()) {
            if (props.contains(key)) {
                validate(root, props[key], value, path + "." + key, errors);
            } else if (schema.contains("additionalProperties") &&
                       !schema["additionalProperties"].get<bool>()) {
                errors.push_back(path + "." + key + ": not in the schema");
            }
        }
        for (const json& req : schema.value("required", json::array())) {
            if (!v.contains(req.get<std::string>()))
                errors.push_back(path + "." + req.get<std::string>() + ": missing");
        }
    }
    if (v.is_array() && schema.contains("items")) {
        for (size_t i = 0; i < v.size(); ++i) {
            validate(root, schema["items"], v[i], path + "[" + std::to_string(i) + "]", errors);
        }
    }
}

json load_schema() {
    std::ifstream in(std::string(LAZYLLM_SOURCE_DIR) + "/docs/cli_run.schema.json");
    return json::parse(in);
}

std::string schema_model() {
    static const std::string p =
        lazyllm::testing::write_cli_tiny_model("lazyllm_cli_schema.gguf", 64);
    return p;
}

// Runs `args` (stdout only) and validates its JSON against the schema and, when `def` is given,
// against that definition alone.
void expect_valid(const std::string& args, const std::string& def) {
    const auto r = lazyllm::testing::run_cli(args, /*merge_stderr=*/false);
    ASSERT_EQ(r.rc, 0) << args << "\n" << r.out;
    const json v = json::parse(r.out);
    const json schema = load_schema();
    std::vector<std::string> errors;
    validate(schema, schema, v, "$", errors);
    validate(schema, schema["$defs"][def], v, "$", errors);
    for (const std::string& e : errors) ADD_FAILURE() << args << ": " << e;
}

TEST(CliJsonSchemaTest, RunJsonMatchesTheSchema) {
    const std::string m = schema_model();
    expect_valid("run -m " + m + " -p 'hello world' -n 3 --ignore-eos --json", "run");
    expect_valid("run -m " + m +
                     " -p 'hello world, hello world' -n 3 --ignore-eos --lazy-layers 1 "
                     "--lazy-keep 0.5 --temp 0.8 --seed -1 --profile --json",
                 "run");
}

TEST(CliJsonSchemaTest, CompareJsonMatchesTheSchema) {
    expect_valid("run -m " + schema_model() +
                     " -p 'hello world, hello world' -n 2 --ignore-eos "
                     "--compare --lazy-layers 1 --lazy-keep 0.5 --json",
                 "compare");
}

TEST(CliJsonSchemaTest, SchemaRejectsWhatItShould) {
    const json schema = load_schema();
    std::vector<std::string> errors;
    validate(schema, schema, json{{"text", "x"}, {"unknown", 1}}, "$", errors);
    EXPECT_FALSE(errors.empty());
}

}  // namespace
