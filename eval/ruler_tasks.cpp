// RULER-style synthetic tasks (NVIDIA/RULER scripts/data/synthetic/niah.py,
// variable_tracking.py, constants.py): needle-in-a-haystack with a single needle, several keys,
// or several values, and variable tracking. Wording, needle format, answer prefixes and the
// singular rewrite of the template are RULER's; the haystack is our seeded essay-like filler
// (RULER: Paul Graham essays) for the niah tasks and RULER's noise sentences for vt.
#include <algorithm>
#include <set>

#include "eval/builtin_tasks.h"
#include "eval/haystack.h"
#include "eval/synth_text.h"
#include "eval/text_util.h"

namespace lazyllm::eval::builtin {
namespace {

// constants.py TASKS['niah'], template and answer_prefix, with type_needle_v = "numbers".
constexpr std::string_view kNiahTemplate =
    "Some special magic numbers are hidden within the following text. Make sure to memorize it. "
    "I will quiz you about the numbers afterwards.\n{context}\nWhat are all the special magic "
    "numbers for {query} mentioned in the provided text?";
constexpr std::string_view kNiahAnswerPrefix =
    " The special magic numbers for {query} mentioned in the provided text are";
// niah.py: needle = "One of the special magic {type_needle_v} for {key} is: {value}."
constexpr std::string_view kNiahNeedle = "One of the special magic numbers for {key} is: {value}.";

// constants.py TASKS['variable_tracking'].
constexpr std::string_view kVtTemplate =
    "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
    "{context}\nQuestion: Find all variables that are assigned the value {query} in the text "
    "above.";
constexpr std::string_view kVtAnswerPrefix =
    " Answer: According to the chain(s) of variable assignment in the text above, {num_v} "
    "variables are assigned the value {query}, they are: ";
// niah.py / variable_tracking.py 'noise' haystack.
constexpr std::string_view kNoise =
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";
constexpr int kVtHops = 4;           // synthetic.yaml vt: num_chains 1, num_hops 4
constexpr int kVtIclNoiseLines = 4;  // RULER sizes its example to 500 tokens; ours is shorter

// A niah task: `n_keys` keys with `n_values` values each; the first key is asked for.
struct NiahShape {
    int n_keys;
    int n_values;
    int max_new_tokens;
};

std::string fill(std::string_view tmpl,
                 std::initializer_list<std::pair<std::string_view, std::string>> kv) {
    std::string s(tmpl);
    for (const auto& [k, v] : kv) s = replace_all(std::move(s), k, v);
    return s;
}

// niah.py generate_input_output: with one queried value the template is made singular by plain
// string replacement, answer prefix included (it is part of RULER's template there).
std::pair<std::string, std::string> niah_template(bool singular) {
    std::string t(kNiahTemplate), a(kNiahAnswerPrefix);
    if (singular) {
        for (std::string* s : {&t, &a}) {
            *s = replace_all(std::move(*s), "Some", "A");
            *s = replace_all(std::move(*s), "are all", "is");
            *s = replace_all(std::move(*s), "are", "is");
            *s = replace_all(std::move(*s), "answers", "answer");
            *s = replace_all(std::move(*s), "numbers", "number");
        }
    }
    return {t, a};
}

// Splits the measured text (prompt + answer prefix) back into the two.
void set_prompt(Sample& s, std::string text, const std::string& answer_prefix) {
    text.resize(text.size() - answer_prefix.size());
    s.prompt = std::move(text);
    s.answer_prefix = answer_prefix;
}

Result<Sample> make_niah(const TaskArgs& args, const NiahShape& shape) {
    synth::Rng values(args.seed, std::string(args.task) + "/needles");
    synth::Rng positions(args.seed, std::string(args.task) + "/positions");
    synth::Rng filler(args.seed, std::string(args.task) + "/filler");

    std::vector<std::string> keys;
    std::set<std::string> used;
    while (static_cast<int>(keys.size()) < shape.n_keys) {
        std::string k = synth::key_word(values);
        if (used.insert(k).second) keys.push_back(std::move(k));
    }
    HaystackSpec spec;
    std::vector<std::string> answers;
    for (int k = 0; k < shape.n_keys; ++k) {
        for (int v = 0; v < shape.n_values; ++v) {
            std::string value;
            do {
                value = synth::random_number(values, 7);
            } while (!used.insert(value).second);
            // The asked-for needle (first key, first value) sits at `depth`; the others where
            // the seed puts them, as RULER samples its depths.
            const double depth = (k == 0 && v == 0) ? args.depth : positions.uniform();
            spec.needles.push_back(
                {depth, fill(kNiahNeedle, {{"{key}", keys[k]}, {"{value}", value}})});
            if (k == 0) answers.push_back(std::move(value));
        }
    }
    const auto [tmpl, prefix] = niah_template(/*singular=*/shape.n_values == 1);
    const std::string answer_prefix = fill(prefix, {{"{query}", keys[0]}});
    const std::string head = fill(tmpl, {{"{query}", keys[0]}});
    spec.filler = synth::filler_sentence;
    spec.short_filler = synth::short_filler_sentence;
    spec.filler_sep = " ";
    spec.short_sep = " ";
    spec.render = [&](const std::vector<BodyItem>& items) {
        std::string context;
        for (const BodyItem& it : items) {
            if (!context.empty()) context += ' ';
            context += *it.text;
        }
        return replace_all(head, "{context}", context) + answer_prefix;
    };
    LAZYLLM_ASSIGN_OR_RETURN(SizedText sized,
                             build_haystack(spec, args.n_tokens, args.tok, filler));

    Sample s = base_sample(args);
    set_prompt(s, std::move(sized.text), answer_prefix);
    s.chat = true;
    s.answers = std::move(answers);
    s.metric = Metric::kStringMatchAll;
    s.max_new_tokens = shape.max_new_tokens;
    return s;
}

// variable_tracking.py generate_chains: "VAR A = value", then "VAR B = VAR A " (trailing space
// as RULER writes it) for each hop.
std::vector<std::string> vt_chain(const std::vector<std::string>& names, const std::string& value) {
    std::vector<std::string> chain = {"VAR " + names[0] + " = " + value};
    for (size_t j = 1; j < names.size(); ++j) {
        chain.push_back("VAR " + names[j] + " = VAR " + names[j - 1] + " ");
    }
    return chain;
}

std::vector<std::string> distinct_names(synth::Rng& rng, int n, int letters,
                                        std::set<std::string>& used) {
    std::vector<std::string> out;
    while (static_cast<int>(out.size()) < n) {
        std::string v = synth::upper_letters(rng, letters);
        if (used.insert(v).second) out.push_back(std::move(v));
    }
    return out;
}

}  // namespace

Result<Sample> make_niah_single(const TaskArgs& args) { return make_niah(args, {1, 1, 16}); }
Result<Sample> make_niah_multikey(const TaskArgs& args) { return make_niah(args, {4, 1, 16}); }
Result<Sample> make_niah_multivalue(const TaskArgs& args) { return make_niah(args, {1, 4, 64}); }

Result<Sample> make_vt(const TaskArgs& args) {
    synth::Rng values(args.seed, "vt/chain");
    synth::Rng positions(args.seed, "vt/positions");
    synth::Rng filler(args.seed, "vt/filler");

    std::set<std::string> used;
    const std::vector<std::string> names = distinct_names(values, kVtHops + 1, 5, used);
    const std::string value = std::to_string(values.range(10000, 99998));
    std::string icl_value;
    do {
        icl_value = std::to_string(values.range(10000, 99998));
    } while (icl_value == value);
    const std::vector<std::string> icl_names = distinct_names(values, kVtHops + 1, 3, used);

    // The in-context example (variable_tracking.py: add_fewshot): a short noise context with its
    // own chain at sorted random lines, the template, the answer prefix and the answer.
    std::vector<std::string> icl_lines(kVtIclNoiseLines, std::string(kNoise));
    std::vector<int64_t> slots;
    for (int j = 0; j <= kVtHops; ++j) slots.push_back(values.range(0, kVtIclNoiseLines));
    std::sort(slots.begin(), slots.end());
    const std::vector<std::string> icl_chain = vt_chain(icl_names, icl_value);
    for (int j = 0; j <= kVtHops; ++j) {
        icl_lines.insert(icl_lines.begin() + slots[j] + j, icl_chain[j]);
    }
    const std::string num_v = std::to_string(kVtHops + 1);
    const std::string icl_example =
        fill(kVtTemplate, {{"{context}", text::join(icl_lines, "\n")}, {"{query}", icl_value}}) +
        fill(kVtAnswerPrefix, {{"{num_v}", num_v}, {"{query}", icl_value}}) + " " +
        text::join(icl_names, " ") + "\n";
    const std::string answer_prefix =
        fill(kVtAnswerPrefix, {{"{num_v}", num_v}, {"{query}", value}});
    const std::string head = icl_example + "\n" + fill(kVtTemplate, {{"{query}", value}});

    HaystackSpec spec;
    // The first assignment at `depth`, the hops after it in order.
    const std::vector<std::string> chain = vt_chain(names, value);
    std::vector<double> depths = {args.depth};
    for (int j = 1; j <= kVtHops; ++j)
        depths.push_back(args.depth + (1.0 - args.depth) * positions.uniform());
    std::sort(depths.begin() + 1, depths.end());
    for (int j = 0; j <= kVtHops; ++j) spec.needles.push_back({depths[j], chain[j]});

    spec.filler = [](synth::Rng&) { return std::string(kNoise); };
    // Shorter noise lines (its first 1-4 sentences) close the gap to the target.
    spec.short_filler = [](synth::Rng& rng) {
        const std::vector<std::string> sentences = text::split(kNoise, ". ");
        const size_t k = 1 + rng.below(sentences.size() - 1);
        std::string s;
        for (size_t i = 0; i < k; ++i) s += sentences[i] + ". ";
        s.pop_back();
        return s;
    };
    spec.filler_sep = "\n";
    spec.short_sep = "\n";
    spec.render = [&](const std::vector<BodyItem>& items) {
        std::vector<std::string> lines;
        for (const BodyItem& it : items) lines.push_back(*it.text);
        return replace_all(head, "{context}", text::join(lines, "\n")) + answer_prefix;
    };
    LAZYLLM_ASSIGN_OR_RETURN(SizedText sized,
                             build_haystack(spec, args.n_tokens, args.tok, filler));

    Sample s = base_sample(args);
    set_prompt(s, std::move(sized.text), answer_prefix);
    s.chat = true;
    s.answers = names;
    s.metric = Metric::kStringMatchAll;
    s.max_new_tokens = 30;  // constants.py tokens_to_generate
    return s;
}

}  // namespace lazyllm::eval::builtin
