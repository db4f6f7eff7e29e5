// Deterministic building blocks for the built-in tasks: a seeded random stream, essay-like filler
// sentences from a small grammar, RULER-style key words, and invented names, cities and
// organizations for the multi-document QA task. Everything is a pure function of the seed, on
// every platform (no std::*_distribution, whose output the standard leaves open).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lazyllm::eval::synth {

// SplitMix64 (Steele, Lea, Flood 2014) keyed by the seed and a stream name, so the parts of a
// task (values, filler, positions) draw from independent streams: the same seed gives the same
// needle at every length and depth.
class Rng {
public:
    Rng(uint64_t seed, std::string_view stream);
    uint64_t next();
    uint64_t below(uint64_t n);             // uniform in [0, n), n > 0 (rejection, no bias)
    int64_t range(int64_t lo, int64_t hi);  // uniform in [lo, hi]
    double uniform();                       // uniform in [0, 1)

private:
    uint64_t state_;
};

// One essay-like sentence (about 8-30 tokens) from a grammar over startup / craft / city
// vocabulary, ending in '.', with no digits and none of the words the tasks' needles use.
std::string filler_sentence(Rng& rng);
// A short sentence (2-5 tokens) for closing the last gap to the target length.
std::string short_filler_sentence(Rng& rng);

// RULER's key word: "adjective-noun" (RULER draws them from wonderwords' lists; ours are
// smaller, about 100 x 100).
std::string key_word(Rng& rng);
// A number with `digits` digits, no leading zero.
std::string random_number(Rng& rng, int digits);
// `k` uppercase ASCII letters (RULER variable names).
std::string upper_letters(Rng& rng, int k);

// Invented proper names (syllable grammar), capitalized.
std::string person_name(Rng& rng);
std::string city_name(Rng& rng);
std::string organization_name(Rng& rng);  // "Silver Compass Guild"
std::span<const std::string_view> professions();

std::string capitalize(std::string s);

}  // namespace lazyllm::eval::synth
