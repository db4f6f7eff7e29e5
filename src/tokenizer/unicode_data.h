// Unicode tables for the WordPiece (BERT) normalizer, generated into unicode_data.cpp by
// scripts/gen_unicode_data.py from Python's unicodedata. Lookups are in unicode.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lazyllm::tokenizer {

// The general categories the BERT normalizer and pre-tokenizer test (HF tokenizers
// normalizers/bert.rs, pre_tokenizers/bert.rs).
enum class CharClass : uint8_t {
    kNone,            // any other category
    kOther,           // C*: control, format, unassigned, private use, surrogate
    kPunctuation,     // P*
    kNonspacingMark,  // Mn: what strip_accents removes after NFD
};

namespace unicode_data {

struct CategoryRun {
    uint32_t first, last;  // inclusive
    CharClass cls;
};
struct CaseMap {
    uint32_t cp;
    uint32_t lower[2];  // lower[1] is 0 unless the lowercase is two code points (U+0130)
};
struct Decomposition {
    uint32_t cp;
    uint32_t kept[3];  // NFD without nonspacing marks, 0-terminated; all 0: nothing is left
};

// Sorted by code point; runs do not overlap.
extern const CategoryRun kCategoryRuns[];
extern const size_t kNumCategoryRuns;
extern const CaseMap kLowercase[];
extern const size_t kNumLowercase;
extern const Decomposition kStripped[];
extern const size_t kNumStripped;

}  // namespace unicode_data
}  // namespace lazyllm::tokenizer
