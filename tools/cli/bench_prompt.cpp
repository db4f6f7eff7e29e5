#include "cli/bench_prompt.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <random>
#include <string_view>

#include "base/read_file.h"

namespace lazyllm::cli {

namespace {

// Sentence templates; {slot} names a word list below. Everyday-news prose: varied enough that
// attention has something to rank, plain enough for any English vocabulary.
constexpr std::array<std::string_view, 16> kTemplates = {
    "{name} moved to {city} in {year} and opened a small {shop} near the {place}.",
    "The {committee} met on {weekday} to discuss the budget for the new {building}, which is "
    "expected to cost {num} thousand dollars.",
    "According to the {org} report, rainfall in {city} was {num} millimetres above the long-term "
    "average last {season}.",
    "{name} says the hardest part of running a {shop} is keeping the {thing}s in stock during the "
    "{season} rush.",
    "Engineers at the {place} replaced {num} metres of old pipe after a leak flooded the basement "
    "of the {building}.",
    "In {year}, the {org} published a study of {num} households and found that most families "
    "cook at home on {weekday}s.",
    "The train from {city} to {city} now takes {pct} minutes, {adv} faster than it did a decade "
    "ago.",
    "Visitors to the {place} often ask about the old {thing}, which {name} donated in {year}.",
    "{name} finished the {city} marathon in {num} minutes and plans to run it again next "
    "{season}.",
    "A {shop} in {city} started selling {thing}s online, and its orders grew by {pct} percent in "
    "the first month.",
    "The history teacher asked the class to write about the {event} of {year} and what it meant "
    "for {city}.",
    "Farmers near {city} expect a good harvest of {crop} this {season}, despite a dry {month}.",
    "At the {committee} meeting, {name} proposed planting {num} trees along the road to the "
    "{place}.",
    "The museum in {city} will stay open late every {weekday} in {month} for a series of talks "
    "about {topic}.",
    "Students measured the temperature of the lake every {weekday} and recorded a high of {pct} "
    "degrees in {month}.",
    "{name} wrote to the newspaper that the {thing} at the {place} has been broken since "
    "{month}.",
};

struct Slot {
    std::string_view name;
    std::vector<std::string_view> words;
};

const std::vector<Slot>& slots() {
    static const std::vector<Slot> s = {
        {"name",
         {"Maria", "Tom", "Aisha", "Kenji", "Lucia", "Omar", "Grace", "Pavel", "Nadia", "Samuel",
          "Ingrid", "Diego"}},
        {"city",
         {"Lisbon", "Leeds", "Osaka", "Denver", "Lyon", "Krakow", "Porto", "Adelaide", "Bergen",
          "Austin", "Utrecht", "Halifax"}},
        {"shop",
         {"bakery", "bookshop", "bicycle shop", "hardware store", "flower shop", "cafe",
          "repair shop", "pharmacy", "tea house", "record store"}},
        {"place",
         {"harbour", "town hall", "central library", "old mill", "train station",
          "botanical garden", "market square", "river bridge", "city park", "castle"}},
        {"committee",
         {"city council", "school board", "residents' association", "planning committee",
          "library trust", "harbour authority"}},
        {"weekday", {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}},
        {"building",
         {"sports hall", "primary school", "fire station", "swimming pool", "community centre",
          "bus depot", "concert hall", "health clinic"}},
        {"org",
         {"weather service", "statistics office", "university", "transport agency",
          "consumer council", "water board"}},
        {"season", {"spring", "summer", "autumn", "winter"}},
        {"thing",
         {"clock", "piano", "lamp", "map", "bench", "telescope", "fountain", "bell",
          "printing press", "sailboat"}},
        {"event",
         {"great flood", "harbour strike", "railway opening", "big fire", "first election",
          "bridge collapse"}},
        {"crop", {"apples", "wheat", "potatoes", "barley", "grapes", "pears"}},
        {"month",
         {"January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"}},
        {"topic",
         {"old maps", "bird migration", "local architecture", "the history of printing",
          "early photography", "river ecology", "medieval trade", "clock making"}},
        {"adv", {"slightly", "much", "noticeably", "a little"}},
    };
    return s;
}

std::string fill(std::string_view tmpl, std::mt19937_64& rng) {
    std::string out;
    size_t i = 0;
    while (i < tmpl.size()) {
        const size_t open = tmpl.find('{', i);
        if (open == std::string_view::npos) {
            out.append(tmpl.substr(i));
            break;
        }
        out.append(tmpl.substr(i, open - i));
        const size_t close = tmpl.find('}', open);
        const std::string_view key = tmpl.substr(open + 1, close - open - 1);
        if (key == "year") {
            out += std::to_string(1950 + rng() % 71);
        } else if (key == "num") {
            out += std::to_string(12 + rng() % 969);
        } else if (key == "pct") {
            out += std::to_string(5 + rng() % 91);
        } else {
            for (const Slot& s : slots()) {
                if (s.name == key) out.append(s.words[rng() % s.words.size()]);
            }
        }
        i = close + 1;
    }
    return out;
}

constexpr std::string_view kHead =
    "There is an important piece of information hidden inside a lot of irrelevant text. Find it "
    "and memorize it. I will quiz you about the important information there.\n\n";
constexpr std::string_view kQuestion = "\n\nWhat is the pass key? The pass key is";

std::vector<TokenId> concat(std::initializer_list<std::span<const TokenId>> parts) {
    std::vector<TokenId> out;
    for (auto p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

}  // namespace

std::string synthetic_prose(size_t min_chars, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::string text;
    while (text.size() < min_chars) {
        const int n_sentences = 4 + static_cast<int>(rng() % 4);
        for (int s = 0; s < n_sentences; ++s) {
            if (s > 0) text += ' ';
            text += fill(kTemplates[rng() % kTemplates.size()], rng);
        }
        text += "\n\n";
    }
    return text;
}

std::vector<TokenId> passkey_prompt(const Tokenizer& tok, int64_t n_tokens, uint64_t seed) {
    if (n_tokens <= 0) return {};
    const uint64_t key = 10000 + (seed * 2654435761u) % 90000;
    const std::vector<TokenId> head = tok.encode(kHead);  // BOS as the model's GGUF asks
    const std::vector<TokenId> needle = tok.encode(
        fmt::format(" The pass key is {0}. Remember it. {0} is the pass key. ", key), false, false);
    const std::vector<TokenId> question = tok.encode(kQuestion, false, false);
    const int64_t fixed = static_cast<int64_t>(head.size() + needle.size() + question.size());
    // Short prompts keep the tail of a slightly longer one, so they still end in the question.
    const int64_t n_hay = std::max<int64_t>(n_tokens - fixed, 16);

    std::vector<TokenId> hay;
    size_t chars = static_cast<size_t>(n_hay) * 6 + 256;  // ~4.5 characters per BPE token
    while (static_cast<int64_t>(hay.size()) < n_hay) {
        hay = tok.encode(synthetic_prose(chars, seed), false, false);
        chars *= 2;
    }
    const int64_t mid = n_hay / 2;
    std::vector<TokenId> ids =
        concat({head, std::span<const TokenId>(hay.data(), mid), needle,
                std::span<const TokenId>(hay.data() + mid, n_hay - mid), question});
    if (static_cast<int64_t>(ids.size()) > n_tokens) ids.erase(ids.begin(), ids.end() - n_tokens);
    return ids;
}

std::vector<TokenId> fit_to_length(std::span<const TokenId> ids, int64_t n) {
    std::vector<TokenId> out;
    if (ids.empty() || n <= 0) return out;
    out.reserve(static_cast<size_t>(n));
    while (static_cast<int64_t>(out.size()) < n) {
        const size_t take = std::min(ids.size(), static_cast<size_t>(n) - out.size());
        out.insert(out.end(), ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(take));
    }
    return out;
}

Result<std::vector<TokenId>> read_token_ids(const std::string& path) {
    auto read = read_whole_file(path);
    if (!read) return Error(ErrorCode::kInvalidArgument, "token id file " + read.error().message());
    const std::string& text = read.value();
    std::vector<TokenId> ids;
    int64_t cur = -1;
    for (size_t i = 0; i <= text.size(); ++i) {
        const char c = i < text.size() ? text[i] : ' ';
        if (std::isdigit(static_cast<unsigned char>(c))) {
            cur = (cur < 0 ? 0 : cur) * 10 + (c - '0');
            if (cur > INT32_MAX) {
                return make_error(ErrorCode::kInvalidArgument,
                                  "token id file '{}': a number at byte {} is too large", path, i);
            }
        } else {
            if (c == '-') {
                return make_error(ErrorCode::kInvalidArgument,
                                  "token id file '{}': negative number at byte {}", path, i);
            }
            // Separators: white space, commas, and the brackets of a JSON list (`tokenize`'s).
            if (!std::isspace(static_cast<unsigned char>(c)) && c != ',' && c != '[' && c != ']') {
                return make_error(ErrorCode::kInvalidArgument,
                                  "token id file '{}': byte {} is not a digit, space, comma or "
                                  "bracket (0x{:02x})",
                                  path, i, static_cast<unsigned char>(c));
            }
            if (cur >= 0) ids.push_back(static_cast<TokenId>(cur));
            cur = -1;
        }
    }
    if (ids.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "token id file '{}' has no ids", path);
    }
    return ids;
}

Status write_token_ids(const std::string& path, std::span<const TokenId> ids) {
    std::ofstream out(path);
    if (!out) return make_error(ErrorCode::kIo, "cannot write token id file '{}'", path);
    out << fmt::format("{}\n", fmt::join(ids, " "));
    if (!out) return make_error(ErrorCode::kIo, "writing token id file '{}' failed", path);
    return {};
}

}  // namespace lazyllm::cli
