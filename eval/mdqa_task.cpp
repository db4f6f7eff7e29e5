// Synthetic multi-document QA: short "Document [i] Title: ..." biographies of invented people
// (name, birthplace, birth year, profession, an organization they founded); one holds the fact
// asked about, the others are distractors with the same kind of facts about other people. The
// prompt is LongBench's multi-document QA template (hotpotqa / 2wikimqa / musique in
// config/dataset2prompt.json), scored as those datasets are: qa_f1 on the whole answer of at most
// 32 new tokens (dataset2maxlen.json; eval.py cuts to the first line only for trec, triviaqa,
// samsum and lsht).
// Invented entities keep the answer out of the model's memory: it must be read from the context.
#include <string>
#include <utility>
#include <vector>

#include "eval/builtin_tasks.h"
#include "eval/haystack.h"
#include "eval/longbench_config.h"
#include "eval/synth_text.h"
#include "eval/text_util.h"

namespace lazyllm::eval::builtin {
namespace {

struct Person {
    std::string name;
    std::string city;
    std::string year;
    std::string founded_year;
    std::string profession;
    std::string organization;
    bool she = false;
};

constexpr std::string_view kPlacesSpent[] = {
    "in the archives", "near the coast", "abroad", "in the mountains", "at sea", "in the capital"};
constexpr std::string_view kSpans[] = {"many years", "several winters", "a decade", "most summers"};
constexpr std::string_view kTraits[] = {"stubborn", "generous", "shy",
                                        "witty",    "patient",  "restless"};
constexpr std::string_view kTraits2[] = {"curious", "kind",     "proud",
                                         "quiet",   "cheerful", "careful"};
constexpr std::string_view kCollections[] = {"old coins", "pressed flowers", "letters",
                                             "clocks",    "seashells",       "walking sticks"};
constexpr std::string_view kHobbies[] = {"gardening", "chess", "fishing", "sailing",
                                         "birdwatching"};
constexpr std::string_view kFondness[] = {"strong tea", "long walks", "old songs", "card games"};
constexpr std::string_view kLanguages[] = {"three", "four", "several"};
// Gender-neutral sentences that may follow any document (closing the gap to the target length).
constexpr std::string_view kAfterwords[] = {
    "Little else is recorded.",
    "The family later moved away.",
    "Records from that period are sparse.",
    "The house still stands.",
    "Some details remain disputed.",
    "Historians disagree on the rest.",
};

template <size_t N>
std::string pick(synth::Rng& rng, const std::string_view (&items)[N]) {
    return std::string(items[rng.below(N)]);
}

Person make_person(synth::Rng& rng) {
    Person p;
    p.name = synth::person_name(rng);
    p.city = synth::city_name(rng);
    const int64_t year = rng.range(1780, 1960);
    p.year = std::to_string(year);
    p.founded_year = std::to_string(year + rng.range(20, 50));
    const auto professions = synth::professions();
    p.profession = std::string(professions[rng.below(professions.size())]);
    p.organization = synth::organization_name(rng);
    p.she = rng.below(2) == 1;
    return p;
}

// "Title: name\n" + the facts and 0-3 biographical sentences.
std::string document(const Person& p, synth::Rng& rng) {
    const std::string he = p.she ? "she" : "he", He = p.she ? "She" : "He";
    const std::string his = p.she ? "her" : "his", His = p.she ? "Her" : "His";
    const std::string him = p.she ? "her" : "him";
    const char first = p.profession[0];
    const std::string a =
        (first == 'a' || first == 'e' || first == 'i' || first == 'o' || first == 'u') ? "an" : "a";
    std::vector<std::string> rest = {
        He + " worked as " + a + " " + p.profession + " for most of " + his + " life.",
        "In " + p.founded_year + ", " + he + " founded the " + p.organization + ".",
    };
    const std::string bios[] = {
        He + " spent " + pick(rng, kSpans) + " " + pick(rng, kPlacesSpent) + ".",
        "Friends remembered " + him + " as " + pick(rng, kTraits) + " and " + pick(rng, kTraits2) +
            ".",
        He + " kept a large collection of " + pick(rng, kCollections) + ".",
        His + " letters were later published by a small press.",
        "Late in life, " + he + " moved to a quiet village and took up " + pick(rng, kHobbies) +
            ".",
        He + " was known for a sharp memory and a fondness for " + pick(rng, kFondness) + ".",
        "Few of " + his + " early works survive.",
        He + " traveled widely and spoke " + pick(rng, kLanguages) + " languages.",
    };
    // 0-3 different biographical sentences: a partial Fisher-Yates draw.
    std::vector<size_t> order(std::size(bios));
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto n_bio = static_cast<size_t>(rng.range(0, 3));
    for (size_t i = 0; i < n_bio; ++i) {
        std::swap(order[i], order[i + rng.below(order.size() - i)]);
        rest.push_back(bios[order[i]]);
    }
    // Fisher-Yates, so the facts are not always in the same place.
    for (size_t i = rest.size(); i > 1; --i) std::swap(rest[i - 1], rest[rng.below(i)]);
    std::string s = p.name + "\n" + p.name + " was born in " + p.city + " in " + p.year + ".";
    for (const std::string& r : rest) s += " " + r;
    return s;
}

}  // namespace

Result<Sample> make_mdqa(const TaskArgs& args) {
    synth::Rng facts(args.seed, "mdqa/facts");
    synth::Rng filler(args.seed, "mdqa/filler");

    const Person target = make_person(facts);
    std::string question, answer;
    switch (facts.below(4)) {
        case 0:
            question = "In which city was " + target.name + " born?";
            answer = target.city;
            break;
        case 1:
            question = "In what year was " + target.name + " born?";
            answer = target.year;
            break;
        case 2:
            question = "What was the profession of " + target.name + "?";
            answer = target.profession;
            break;
        default:
            question = "Which organization did " + target.name + " found?";
            answer = target.organization;
            break;
    }
    // The gold document must hold the answer once (a biographical sentence could repeat a year).
    std::string gold;
    do {
        gold = document(target, facts);
    } while (text::count_occurrences(gold, answer) != 1);

    HaystackSpec spec;
    spec.needles.push_back({args.depth, gold});
    // Distractors: other people, never with the answer or the target's name in them.
    spec.filler = [&](synth::Rng& rng) {
        while (true) {
            const Person p = make_person(rng);
            std::string doc = document(p, rng);
            if (doc.find(answer) == std::string::npos &&
                doc.find(target.name) == std::string::npos) {
                return doc;
            }
        }
    };
    spec.short_filler = [](synth::Rng& rng) { return pick(rng, kAfterwords); };
    spec.filler_sep = "\n\nDocument [10] Title: ";
    spec.short_sep = " ";
    const auto* cfg = &longbench::kDatasets[0];
    for (const auto& d : longbench::kDatasets) {
        if (d.name == "hotpotqa") cfg = &d;
    }
    const std::string head = replace_all(std::string(cfg->prompt), "{input}", question);
    spec.render = [&](const std::vector<BodyItem>& items) {
        std::string context;
        int i = 0;
        for (const BodyItem& it : items) {
            if (it.kind == BodyItem::Kind::kShortFiller && i > 0) {
                context += " " + *it.text;  // continues the document before it
                continue;
            }
            if (i > 0) context += "\n\n";
            context += "Document [" + std::to_string(++i) + "] Title: " + *it.text;
        }
        return replace_all(head, "{context}", context);
    };
    LAZYLLM_ASSIGN_OR_RETURN(SizedText sized,
                             build_haystack(spec, args.n_tokens, args.tok, filler));

    Sample s = base_sample(args);
    s.prompt = std::move(sized.text);
    s.chat = true;
    s.answers = {answer};
    s.metric = Metric::kQaF1;
    s.max_new_tokens = 32;
    return s;
}

}  // namespace lazyllm::eval::builtin
