// The "lazyllm" extension object of a request (docs/server.md): parsed with the field rules of
// the rest of the API, then resolved against the model and the server's own pruning flags.
#include <limits>
#include <nlohmann/json.hpp>

#include "server/api_request.h"
#include "server/json_fields.h"

namespace lazyllm::server {

using json = nlohmann::json;

ApiResult<LazyExtension> parse_lazy_extension(const json& j) {
    if (!j.is_object()) return wrong_type("lazyllm", "an object", j);
    // "schedule": the same keys as a schedule file, nested; "meta", "version", "model" and
    // "n_layer" of such a file are accepted and ignored.
    const json* src = &j;
    json merged;
    if (auto s = j.find("schedule"); s != j.end() && !s->is_null()) {
        if (!s->is_object()) return wrong_type("lazyllm.schedule", "an object", *s);
        if (auto e = check_known(
                *s,
                {"layers", "keep", "keep_first", "keep_recent", "min_context", "prune_decode",
                 "score_layers", "score_pool", "revive_max", "revive_weight", "repair",
                 "verify_margin", "tiers", "meta", "version", "model", "n_layer"},
                "lazyllm.schedule.")) {
            return *e;
        }
        merged = j;
        merged.erase("schedule");
        for (auto it = s->begin(); it != s->end(); ++it) {
            if (merged.contains(it.key())) {
                return bad(
                    "lazyllm.schedule." + it.key(),
                    fmt::format("'{}' is given both in lazyllm and in lazyllm.schedule", it.key()));
            }
            merged[it.key()] = *it;
        }
        if (!merged.contains("policy")) merged["policy"] = "lazy";
        src = &merged;
    }
    const json& o = *src;
    if (auto e = check_known(
            o, {"policy",      "preset",        "layers",       "keep",          "keep_first",
                "keep_recent", "min_context",   "prune_decode", "score_layers",  "score_pool",
                "revive_max",  "revive_weight", "repair",       "verify_margin", "tiers",
                "seed",        "meta",          "version",      "model",         "n_layer"},
            "lazyllm.")) {
        return *e;
    }
    LazyExtension p;
    ScheduleOverrides& ov = p.overrides;
    Fields f{o, "lazyllm.", std::nullopt};
    if (auto v = f.string("policy")) p.policy = *v;
    if (auto v = f.string("preset")) p.preset = *v;  // checked with the schedule (Engine::validate)
    if (const json* v = f.get("tiers")) p.tiers_json = v->dump();  // typed by to_prune_options
    // layers / keep: "9,19,28" strings (as the CLI flags) or arrays of numbers.
    for (const char* key : {"layers", "keep"}) {
        const json* v = f.get(key);
        if (!v) continue;
        std::string s;
        if (v->is_string()) {
            s = v->get<std::string>();
        } else if (v->is_array()) {
            for (size_t i = 0; i < v->size(); ++i) {
                if (!(*v)[i].is_number())
                    return wrong_type(fmt::format("lazyllm.{}[{}]", key, i), "a number", (*v)[i]);
                s += (i ? "," : "") + (*v)[i].dump();
            }
        } else {
            return wrong_type(std::string("lazyllm.") + key, "a string or an array of numbers", *v);
        }
        (std::string_view(key) == "layers" ? p.layers : p.keep) = s;
    }
    if (auto v = f.integer("keep_first", 0, 1 << 24)) ov.keep_first = static_cast<int>(*v);
    if (auto v = f.integer("keep_recent", 0, 1 << 24)) ov.keep_recent = static_cast<int>(*v);
    if (auto v = f.integer("min_context", 0, 1 << 24)) ov.min_context = static_cast<int>(*v);
    if (auto v = f.boolean("prune_decode")) ov.prune_decode = *v;
    if (auto v = f.boolean("repair")) ov.repair = *v;
    if (auto v = f.number("verify_margin", 0.0, 1e6)) ov.verify_margin = static_cast<float>(*v);
    if (auto v = f.number("revive_weight", 0.0, 1.0)) ov.revive_weight = static_cast<float>(*v);
    if (auto v = f.integer("score_layers", 1, 1024)) ov.score_layers = static_cast<int>(*v);
    if (auto v = f.integer("score_pool", 1, 1 << 16)) ov.score_pool = static_cast<int>(*v);
    if (auto v = f.integer("seed", 0, std::numeric_limits<int64_t>::max()))
        p.seed = static_cast<uint64_t>(*v);
    if (f.err) return *f.err;
    if (const json* v = f.get("revive_max")) {
        if (v->is_string() && v->get<std::string>() == "all") {
            ov.revive_max = -1;
        } else if (auto n = f.integer("revive_max", 0, 1 << 24)) {
            ov.revive_max = static_cast<int>(*n);
        } else {
            return f.err ? *f.err : wrong_type("lazyllm.revive_max", "an integer or \"all\"", *v);
        }
    }
    if (p.policy == "full" && (!p.layers.empty() || !p.keep.empty())) {
        return bad("lazyllm.policy", "a schedule was given but lazyllm.policy is 'full'");
    }
    return p;
}

namespace {

// Each field the request sets replaces base's.
void merge(const ScheduleOverrides& x, ScheduleOverrides& o) {
    auto set = [](const auto& from, auto& to) {
        if (from) to = from;
    };
    set(x.keep_first, o.keep_first);
    set(x.keep_recent, o.keep_recent);
    set(x.min_context, o.min_context);
    set(x.prune_decode, o.prune_decode);
    set(x.score_layers, o.score_layers);
    set(x.score_pool, o.score_pool);
    set(x.revive_max, o.revive_max);
    set(x.revive_weight, o.revive_weight);
    set(x.repair, o.repair);
    set(x.verify_margin, o.verify_margin);
}

}  // namespace

Result<PruneOptions> to_prune_options(const LazyExtension& x, int n_layer,
                                      const PruneOptions& base) {
    PruneOptions p = base;
    const bool schedule_given = !x.layers.empty() || !x.keep.empty() || !x.tiers_json.empty();
    if (x.policy) {
        LAZYLLM_ASSIGN_OR_RETURN(p.policy, parse_policy(*x.policy));
    } else if (p.policy == Policy::kFull && (schedule_given || x.preset || !x.overrides.empty())) {
        p.policy = Policy::kLazy;
    }
    if (p.policy == Policy::kFull) return PruneOptions{};
    if (x.preset) {
        LAZYLLM_ASSIGN_OR_RETURN(p.preset, parse_preset(*x.preset));
        p.schedule.reset();  // the preset's schedule, not the server's
    }
    if (!x.layers.empty() || !x.keep.empty()) {
        if (x.layers.empty() || x.keep.empty()) {
            return make_error(ErrorCode::kInvalidArgument, "layers and keep go together");
        }
        LAZYLLM_ASSIGN_OR_RETURN(p.schedule, parse_schedule(x.layers, x.keep, n_layer));
    }
    if (!x.tiers_json.empty()) {
        if (x.layers.empty())
            return make_error(ErrorCode::kInvalidArgument, "tiers need layers and keep");
        LAZYLLM_ASSIGN_OR_RETURN(p.schedule->tiers, parse_tiers_json(x.tiers_json));
    }
    merge(x.overrides, p.overrides);
    if (!x.tiers_json.empty()) {
        // apply() drops tiers from a schedule left without repair (a preset's, when a request
        // turns repair off); tiers the request gives itself are refused instead.
        Schedule effective = *p.schedule;
        apply(p.overrides, effective);
        if (effective.tiers.empty()) {
            return make_error(ErrorCode::kInvalidArgument,
                              "tiers need repair: give \"repair\": true (with \"prune_decode\": "
                              "false and no \"revive_max\" of 0)");
        }
    }
    if (x.seed) p.seed = *x.seed;
    return p;
}

}  // namespace lazyllm::server
