// LongBench v1 JSONL reader (task.h load_longbench), after THUDM/LongBench pred.py get_pred: the
// dataset's template filled with the sample's fields, then the middle truncation, with the
// dataset's max new tokens, chat rule, first-line scoring and stop strings from
// longbench_config.h.
#include "eval/longbench.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "eval/longbench_config.h"
#include "eval/task.h"
#include "eval/text_util.h"

namespace lazyllm::eval {
namespace {

using nlohmann::json;

const longbench::DatasetConfig* find_dataset(std::string_view name) {
    for (const longbench::DatasetConfig& d : longbench::kDatasets) {
        if (d.name == name) return &d;
    }
    return nullptr;
}

std::string known_datasets() {
    std::string s;
    for (const longbench::DatasetConfig& d : longbench::kDatasets) {
        if (d.supported) s += (s.empty() ? "" : ", ") + std::string(d.name);
    }
    return s;
}

// The file's base name without ".jsonl" and LongBench-E's "_e": "hotpotqa_e.jsonl" -> "hotpotqa".
std::string dataset_from_path(const std::string& path) {
    std::string base = path.substr(path.find_last_of('/') + 1);
    if (base.size() > 6 && base.ends_with(".jsonl")) base.resize(base.size() - 6);
    if (base.ends_with("_e")) base.resize(base.size() - 2);
    return base;
}

// Python's str(x) for the JSON values LongBench puts in answers (strings, sometimes numbers).
bool to_text(const json& v, std::string* out) {
    if (v.is_string()) {
        *out = v.get<std::string>();
    } else if (v.is_number_integer()) {
        *out = std::to_string(v.get<int64_t>());
    } else {
        return false;
    }
    return true;
}

// prompt_format.format(**json_obj) for templates whose only fields are {context} and {input}: a
// single left-to-right pass, so braces inside the substituted text stay as they are.
std::string format_prompt(std::string_view tmpl, const std::string& context,
                          const std::string& input) {
    std::string out;
    for (size_t i = 0; i < tmpl.size();) {
        if (tmpl.substr(i, 9) == "{context}") {
            out += context;
            i += 9;
        } else if (tmpl.substr(i, 7) == "{input}") {
            out += input;
            i += 7;
        } else {
            out += tmpl[i++];
        }
    }
    return out;
}

}  // namespace

int64_t length_bucket(int64_t words) {
    if (words < 4000) return 0;
    return words < 8000 ? 4000 : 8000;
}

// pred.py: tokenized_prompt = tokenizer(prompt).input_ids; when longer than max_length,
// half = int(max_length / 2) and the prompt becomes
// decode(ids[:half], skip_special_tokens=True) + decode(ids[-half:], skip_special_tokens=True).
// HF decodes bytes with errors="replace", so a character split at a cut becomes U+FFFD.
std::string truncate_middle(const std::string& prompt, int64_t max_length, const Tokenizer& tok) {
    const std::vector<TokenId> ids = tok.encode(prompt);
    if (max_length <= 0 || static_cast<int64_t>(ids.size()) <= max_length) return prompt;
    const auto half = static_cast<size_t>(max_length / 2);
    const std::vector<TokenId> head(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(half));
    const std::vector<TokenId> tail(ids.end() - static_cast<ptrdiff_t>(half), ids.end());
    return text::sanitize_utf8(tok.decode(head)) + text::sanitize_utf8(tok.decode(tail));
}

Result<std::vector<Sample>> load_longbench(const std::string& path, int64_t max_prompt_tokens,
                                           const Tokenizer& tok) {
    if (max_prompt_tokens == 1) {
        // int(1 / 2) == 0 and ids[-0:] is the whole list in Python: no meaningful truncation.
        return make_error(ErrorCode::kInvalidArgument,
                          "{}: max prompt tokens must be 0 (no truncation) or at least 2", path);
    }
    std::ifstream in(path);
    if (!in) return make_error(ErrorCode::kNotFound, "{}: cannot open LongBench file", path);

    std::vector<Sample> samples;
    std::string line;
    for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
        if (text::strip(line).empty()) continue;
        const json obj = json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (obj.is_discarded() || !obj.is_object()) {
            return make_error(ErrorCode::kInvalidArgument, "{}:{}: not a JSON object", path,
                              line_no);
        }
        auto field = [&](const char* name) -> const json* {
            auto it = obj.find(name);
            return it == obj.end() ? nullptr : &*it;
        };
        auto missing = [&](const char* name, const char* what) {
            return make_error(ErrorCode::kInvalidArgument, "{}:{}: field '{}' {}", path, line_no,
                              name, what);
        };

        std::string dataset;
        if (const json* d = field("dataset"); d != nullptr && !d->is_null()) {
            if (!d->is_string()) return missing("dataset", "is not a string");
            dataset = d->get<std::string>();
        } else {
            dataset = dataset_from_path(path);  // pred.py takes it from the file it loads
        }
        if (dataset.ends_with("_e")) dataset.resize(dataset.size() - 2);
        const longbench::DatasetConfig* cfg = find_dataset(dataset);
        if (cfg == nullptr) {
            return make_error(ErrorCode::kInvalidArgument,
                              "{}:{}: unknown LongBench dataset '{}' (known: {})", path, line_no,
                              dataset, known_datasets());
        }
        if (!cfg->supported) {
            return make_error(
                ErrorCode::kUnsupported,
                "{}:{}: dataset '{}' is scored with jieba or a Chinese pattern, which "
                "this harness does not implement",
                path, line_no, dataset);
        }

        const json* input = field("input");
        const json* context = field("context");
        const json* answers = field("answers");
        if (input == nullptr) return missing("input", "is missing");
        if (!input->is_string()) return missing("input", "is not a string");
        if (context == nullptr) return missing("context", "is missing");
        if (!context->is_string()) return missing("context", "is not a string");
        if (answers == nullptr) return missing("answers", "is missing");
        if (!answers->is_array()) return missing("answers", "is not a list");

        Sample s;
        s.task = dataset;
        for (const json& a : *answers) {
            std::string text;
            if (!to_text(a, &text)) return missing("answers", "holds a non-string item");
            s.answers.push_back(std::move(text));
        }
        if (const json* c = field("all_classes"); c != nullptr && !c->is_null()) {
            if (!c->is_array()) return missing("all_classes", "is neither a list nor null");
            for (const json& a : *c) {
                if (!a.is_string()) return missing("all_classes", "holds a non-string item");
                s.all_classes.push_back(a.get<std::string>());
            }
        }
        if (cfg->metric == Metric::kClassification && s.all_classes.empty()) {
            return missing("all_classes", "is required (a list) for classification datasets");
        }
        if (const json* len = field("length"); len != nullptr && !len->is_null()) {
            if (!len->is_number()) return missing("length", "is not a number");
            s.target_tokens = length_bucket(len->get<int64_t>());
        }
        if (const json* id = field("_id"); id != nullptr && id->is_string()) {
            s.id = id->get<std::string>();
        } else {
            s.id = dataset + "-line" + std::to_string(line_no);
        }

        s.prompt = truncate_middle(
            format_prompt(cfg->prompt, context->get<std::string>(), input->get<std::string>()),
            max_prompt_tokens, tok);
        s.chat = cfg->chat;
        s.metric = cfg->metric;
        s.max_new_tokens = cfg->max_new_tokens;
        s.first_line_only = cfg->first_line_only;
        s.stop_token = std::string(cfg->stop_token);
        samples.push_back(std::move(s));
    }
    if (in.bad()) return make_error(ErrorCode::kIo, "{}: read error", path);
    return samples;
}

}  // namespace lazyllm::eval
