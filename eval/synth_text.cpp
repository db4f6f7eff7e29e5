// Word lists and sentence grammar for the built-in tasks' haystacks (synth_text.h). RULER uses
// Paul Graham's essays as its "essay" haystack; we cannot ship those, so the filler imitates
// their register (founders, programmers, writing, cities) from a seeded grammar: varied
// sentences, never one sentence repeated.
#include "eval/synth_text.h"

#include <array>

namespace lazyllm::eval::synth {
namespace {

using Words = std::span<const std::string_view>;

constexpr std::string_view kGroups[] = {
    "founders",        "investors",       "programmers", "most people", "good writers",
    "young companies", "large companies", "students",    "hackers",     "early users",
    "professors",      "painters",        "designers",   "engineers",   "customers",
    "startups",        "critics",         "managers",    "editors",     "beginners",
};
// clang-format off
constexpr std::string_view kThings[] = {
    "a new idea", "the work itself", "a good problem", "the market", "an early version",
    "the first product", "a small group of users", "a hard problem", "the details",
    "the default plan", "a side project", "the source code", "an essay", "a conversation",
    "the right question", "the growth rate", "a prototype", "a mistake", "the schedule",
    "the design", "the language", "a bad habit", "the rules", "the competition", "a good teacher",
    "the first draft", "a rival", "the old system", "a simple tool", "the whole process",
    "an argument", "the manual",
};
// clang-format on
constexpr std::string_view kAdjectives[] = {
    "surprising", "obvious", "difficult", "valuable", "strange", "important",  "dangerous",
    "useful",     "rare",    "boring",    "subtle",   "simple",  "ambitious",  "expensive",
    "unusual",    "careful", "honest",    "familiar", "fragile", "underrated",
};
// Base (plural present) and -ing forms of the same verbs, index for index.
constexpr std::string_view kVerbs[] = {
    "underestimate", "ignore",  "notice",   "remember", "misjudge", "build",   "study",
    "avoid",         "rewrite", "overlook", "question", "admire",   "explain", "change",
};
constexpr std::string_view kVerbsIng[] = {
    "underestimating", "ignoring", "noticing",   "remembering", "misjudging",
    "building",        "studying", "avoiding",   "rewriting",   "overlooking",
    "questioning",     "admiring", "explaining", "changing",
};
constexpr std::string_view kVerbsPast[] = {
    "noticed", "learned", "realized", "discovered", "suspected", "decided", "argued", "found",
};
constexpr std::string_view kActionsPast[] = {
    "started", "finished", "rewrote", "studied", "built", "abandoned", "tried", "read",
};
constexpr std::string_view kAdverbs[] = {
    "usually", "often",      "rarely",  "sometimes", "almost always",
    "seldom",  "eventually", "quietly", "gradually", "suddenly",
};
constexpr std::string_view kTimes[] = {
    "in the beginning", "after a few years", "at first",          "by the end of the year",
    "in college",       "during the summer", "later on",          "in the long run",
    "most of the time", "before the launch", "in the early days", "every winter",
};
constexpr std::string_view kPlaces[] = {
    "Boston",        "the valley", "a small town", "the lab",        "New York", "the library",
    "a coffee shop", "the garage", "Paris",        "the university", "London",   "the old factory",
};
constexpr std::string_view kShort[] = {
    "It works.",       "That matters.",    "Few people notice.", "This is rare.",
    "Think about it.", "Nobody knew why.", "It was late.",       "That changed everything.",
    "We tried again.", "It took years.",   "Not always.",        "That was enough.",
    "So it goes.",     "Nobody asked.",    "It still does.",     "Then it stopped.",
};

// RULER draws key words from wonderwords' adjective and noun lists; a smaller pair here.
constexpr std::string_view kKeyAdjectives[] = {
    "abundant", "agreeable",  "ancient",  "bashful",   "bitter",      "bright",  "brisk",
    "calm",     "careless",   "cheerful", "clever",    "cloudy",      "crooked", "curious",
    "damp",     "dazzling",   "eager",    "elegant",   "empty",       "fancy",   "fierce",
    "fragrant", "frantic",    "gentle",   "gigantic",  "glossy",      "grumpy",  "hollow",
    "humble",   "icy",        "jolly",    "juicy",     "kind",        "lazy",    "little",
    "lively",   "lonely",     "loud",     "lucky",     "magnificent", "mellow",  "misty",
    "modern",   "mysterious", "narrow",   "nervous",   "noisy",       "odd",     "orange",
    "pale",     "plain",      "polite",   "proud",     "quaint",      "quick",   "quiet",
    "rapid",    "rare",       "rich",     "rigid",     "rough",       "round",   "rusty",
    "scary",    "shaggy",     "shiny",    "silent",    "silky",       "sleepy",  "slim",
    "smooth",   "soft",       "sour",     "sparkling", "spicy",       "steep",   "sticky",
    "stormy",   "striped",    "sturdy",   "sunny",     "swift",       "tall",    "tame",
    "tender",   "thirsty",    "tiny",     "tricky",    "upbeat",      "vast",    "velvet",
    "violet",   "warm",       "wary",     "wicked",    "wild",        "windy",   "witty",
    "wooden",   "zealous",
};
constexpr std::string_view kKeyNouns[] = {
    "anchor",  "apple",   "badge",    "banjo",      "barrel",   "basket",   "beacon",   "bicycle",
    "blanket", "bottle",  "bracelet", "bucket",     "butter",   "cabin",    "camera",   "candle",
    "canyon",  "carpet",  "castle",   "cellar",     "chimney",  "cloud",    "comet",    "compass",
    "cookie",  "cottage", "crayon",   "cricket",    "curtain",  "dolphin",  "dragon",   "drum",
    "eagle",   "engine",  "feather",  "fiddle",     "forest",   "fountain", "garden",   "glacier",
    "goblet",  "hammer",  "harbor",   "helmet",     "hedgehog", "island",   "jacket",   "kettle",
    "ladder",  "lantern", "lemon",    "lighthouse", "lizard",   "magnet",   "meadow",   "mirror",
    "mitten",  "monkey",  "napkin",   "needle",     "notebook", "orchard",  "otter",    "paddle",
    "parrot",  "pebble",  "pepper",   "piano",      "pillow",   "planet",   "pocket",   "puddle",
    "pumpkin", "quilt",   "rabbit",   "raincoat",   "ribbon",   "river",    "rocket",   "saddle",
    "sandal",  "scarf",   "shovel",   "skillet",    "sparrow",  "spoon",    "squirrel", "statue",
    "teapot",  "thimble", "tiger",    "trumpet",    "tulip",    "turtle",   "umbrella", "valley",
    "violin",  "wagon",   "walrus",   "whistle",
};

constexpr std::string_view kNameSyllables[] = {
    "ka",  "lo", "mi",  "ra",  "ven", "dor", "li",  "sa",  "ta",  "bel", "mar", "no",
    "ri",  "el", "an",  "tor", "vi",  "sel", "da",  "nu",  "ko",  "lin", "ro",  "sha",
    "zel", "fa", "ger", "hal", "is",  "qua", "bre", "ost", "cal", "mon", "dre", "pel",
};
constexpr std::string_view kSurnameEndings[] = {
    "son", "berg", "ley", "ova", "ski", "ton", "mann", "ard", "ez", "ine", "wood", "hart",
};
constexpr std::string_view kCityEndings[] = {
    "mouth", "vik",  "haven", "ford", "grad", "stad",
    "bury",  "port", "wick",  "dale", "holm", "field",
};
constexpr std::string_view kOrgAdjectives[] = {
    "Northern", "Royal",   "Silver",  "Eastern", "Free",    "United",
    "Grand",    "Ancient", "Crimson", "Golden",  "Coastal", "Highland",
};
constexpr std::string_view kOrgNouns[] = {
    "Lantern",  "Harbor", "Compass", "Orchard", "Anchor", "Beacon",
    "Meridian", "Summit", "Cedar",   "Falcon",  "Bridge", "Quarry",
};
constexpr std::string_view kOrgKinds[] = {
    "Society", "Company", "Guild", "Institute", "Trust", "Works",
};
constexpr std::string_view kProfessions[] = {
    "violinist",    "cartographer", "glassblower", "botanist",      "architect",  "astronomer",
    "bookbinder",   "clockmaker",   "sculptor",    "pharmacist",    "surveyor",   "beekeeper",
    "typesetter",   "locksmith",    "geologist",   "chemist",       "translator", "shipwright",
    "weaver",       "engraver",     "librarian",   "mathematician", "playwright", "photographer",
    "veterinarian", "jeweler",      "brewer",      "blacksmith",    "carpenter",  "tailor",
    "harpist",      "cellist",      "novelist",    "journalist",    "archivist",  "economist",
    "linguist",     "falconer",     "cooper",      "mapmaker",
};

static_assert(std::size(kVerbs) == std::size(kVerbsIng));

std::string_view pick(Rng& rng, Words w) { return w[rng.below(w.size())]; }

std::string syllables(Rng& rng, int lo, int hi) {
    std::string s;
    const int64_t n = rng.range(lo, hi);
    for (int64_t i = 0; i < n; ++i) s += pick(rng, kNameSyllables);
    return s;
}

}  // namespace

Rng::Rng(uint64_t seed, std::string_view stream) {
    uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a of the stream name
    for (char c : stream) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ULL;
    }
    state_ = seed ^ (h * 0x9e3779b97f4a7c15ULL);
    next();
}

uint64_t Rng::next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t Rng::below(uint64_t n) {
    // Reject the top partial block so every residue is equally likely.
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x = next();
    while (x >= limit) x = next();
    return x % n;
}

int64_t Rng::range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::string capitalize(std::string s) {
    if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
    return s;
}

std::string filler_sentence(Rng& rng) {
    const size_t verb = rng.below(std::size(kVerbs));
    const std::string_view v = kVerbs[verb], v_ing = kVerbsIng[verb];
    const std::string g(pick(rng, kGroups)), t(pick(rng, kThings)), t2(pick(rng, kThings));
    const std::string a(pick(rng, kAdjectives)), adv(pick(rng, kAdverbs)), tm(pick(rng, kTimes));
    std::string s;
    switch (rng.below(16)) {
        case 0:
            s = g + " " + adv + " " + std::string(v) + " " + t + ".";
            break;
        case 1:
            s = "the " + a + " thing about " + t + " is that " + g + " " + std::string(v) + " it " +
                tm + ".";
            break;
        case 2:
            s = "when I " + std::string(pick(rng, kActionsPast)) + " " + t + " " + tm + ", I " +
                std::string(pick(rng, kVerbsPast)) + " that " + g + " " + adv + " " +
                std::string(v) + " " + t2 + ".";
            break;
        case 3:
            s = "it is " + a + " to " + std::string(v) + " " + t + " without " +
                std::string(kVerbsIng[rng.below(std::size(kVerbsIng))]) + " " + t2 + ".";
            break;
        case 4:
            s = tm + ", " + g + " in " + std::string(pick(rng, kPlaces)) + " " + adv + " " +
                std::string(v) + " " + t + ".";
            break;
        case 5:
            s = "nobody expected " + t + " to be so " + a + ".";
            break;
        case 6:
            s = "if you want to " + std::string(v) + " " + t + ", you have to " +
                std::string(kVerbs[rng.below(std::size(kVerbs))]) + " " + t2 + " first.";
            break;
        case 7:
            s = "that is why " + g + " " + std::string(v) + " " + t + " " + tm + ".";
            break;
        case 8:
            s = "I " + std::string(pick(rng, kVerbsPast)) + " that " + t + " was more " + a +
                " than " + t2 + ".";
            break;
        case 9:
            s = t + " matters more than " + t2 + ", at least " + tm + ".";
            break;
        case 10:
            s = "most of what " + g + " " + std::string(v) + " turns out to be " + a + ".";
            break;
        case 11:
            s = "there is nothing " + a + " about " + t + ", but " + g + " " + adv + " " +
                std::string(v) + " it anyway.";
            break;
        case 12:
            s = "in " + std::string(pick(rng, kPlaces)) + ", " + t + " seemed " + a + ".";
            break;
        case 13:
            s = "you can learn a lot by watching how " + g + " " + std::string(v) + " " + t + ".";
            break;
        case 14:
            s = "the " + a + " part is " + std::string(v_ing) + " " + t + ".";
            break;
        default:
            s = g + " who " + std::string(v) + " " + t + " tend to " +
                std::string(kVerbs[rng.below(std::size(kVerbs))]) + " " + t2 + " as well.";
            break;
    }
    return capitalize(std::move(s));
}

std::string short_filler_sentence(Rng& rng) { return std::string(pick(rng, kShort)); }

std::string key_word(Rng& rng) {
    return std::string(pick(rng, kKeyAdjectives)) + "-" + std::string(pick(rng, kKeyNouns));
}

std::string random_number(Rng& rng, int digits) {
    int64_t lo = 1;
    for (int i = 1; i < digits; ++i) lo *= 10;
    return std::to_string(rng.range(lo, lo * 10 - 1));
}

std::string upper_letters(Rng& rng, int k) {
    std::string s;
    for (int i = 0; i < k; ++i) s += static_cast<char>('A' + rng.below(26));
    return s;
}

std::string person_name(Rng& rng) {
    return capitalize(syllables(rng, 2, 3)) + " " + capitalize(syllables(rng, 1, 2)) +
           std::string(pick(rng, kSurnameEndings));
}

std::string city_name(Rng& rng) {
    return capitalize(syllables(rng, 1, 2)) + std::string(pick(rng, kCityEndings));
}

std::string organization_name(Rng& rng) {
    return std::string(pick(rng, kOrgAdjectives)) + " " + std::string(pick(rng, kOrgNouns)) + " " +
           std::string(pick(rng, kOrgKinds));
}

std::span<const std::string_view> professions() { return kProfessions; }

}  // namespace lazyllm::eval::synth
