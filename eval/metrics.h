// The metrics behind eval::score(), one function each, for tests and for tools that score
// predictions made elsewhere. LongBench's come from THUDM/LongBench metrics.py (one gold answer
// per call; eval.py takes the max over the answers), RULER's from NVIDIA/RULER
// scripts/eval/synthetic/constants.py (all references at once).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lazyllm::eval {

// metrics.py normalize_answer: lower, drop ASCII punctuation (string.punctuation), drop the
// words a|an|the (re \b(a|an|the)\b -> " "), collapse whitespace (" ".join(s.split())).
std::string normalize_answer(std::string_view s);

// eval.py for trec, triviaqa, samsum, lsht: prediction.lstrip('\n').split('\n')[0].
std::string first_line(std::string_view prediction);

// qa_f1_score: F1 of the multisets of whitespace tokens of the normalized strings.
double qa_f1_score(std::string_view prediction, std::string_view ground_truth);

// rouge_score: Rouge().get_scores([pred], [gold], avg=True)["rouge-l"]["f"] of the `rouge`
// package (pltrdy/rouge 1.0.1): sentences are the non-empty pieces of text.split("."), each
// whitespace-collapsed; words are sentence.split(" "), case and punctuation kept. ROUGE-L is
// summary level with exclusive=True: the union over (reference sentence, hypothesis sentence)
// pairs of the *set* of words on the LCS path that rouge_score._recon_lcs walks, divided by the
// number of *distinct* words of each side; f = 2pr / (p + r + 1e-8). Raises in Python (so 0
// here) when either side has no sentence, e.g. an empty prediction.
double rouge_l_score(std::string_view prediction, std::string_view ground_truth);

// classification_score, with its quirks: class names found as substrings of the prediction, then
// those that are substrings of the gold but not equal to it removed while iterating the same
// list (Python's remove-during-iteration skips the element after each removal); the difflib
// fallback is unreachable (`em_match_list != 0` is always true). 1/len(matches) if the gold is
// among the matches, else 0.
double classification_score(std::string_view prediction, std::string_view ground_truth,
                            const std::vector<std::string>& all_classes);

// retrieval_score: N from the gold's first "Paragraph (\d+)"; the share of the digit runs in the
// prediction equal to N (0 when there are none). A gold without "Paragraph N" scores 0 (Python
// raises IndexError).
double retrieval_score(std::string_view prediction, std::string_view ground_truth);

// count_score: the share of the digit runs in the prediction equal to the gold (0 when none).
double count_score(std::string_view prediction, std::string_view ground_truth);

// fuzzywuzzy fuzz.ratio with python-Levenshtein installed (its StringMatcher): 100 when the
// strings are equal, 0 when one is empty, else round(100 * Levenshtein.ratio) with Python's
// round-half-even, where Levenshtein.ratio = 1 - indel_distance / (len1 + len2) over code points
// (indel distance = len1 + len2 - 2 * LCS). Without python-Levenshtein fuzzywuzzy falls back to
// difflib.SequenceMatcher (Ratcliff/Obershelp), which can differ; we follow the Levenshtein one.
int fuzz_ratio(std::string_view a, std::string_view b);

// code_sim_score: the first line (of prediction.lstrip('\n').split('\n')) containing none of
// '`', '#', "//" ("" when none), then fuzz_ratio(line, gold) / 100.
double code_sim_score(std::string_view prediction, std::string_view ground_truth);

// 1 when normalize_answer(prediction) == normalize_answer(gold).
double exact_match_score(std::string_view prediction, std::string_view ground_truth);

// Passkey (landmark-attention run_test.py): int(re.search(r'\d+', prediction)) == int(gold).
double passkey_score(std::string_view prediction, std::string_view ground_truth);

// RULER's evaluator post-processing: strip, control characters [\x00-\x1f] -> '\n', strip.
std::string ruler_postprocess(std::string_view prediction);
// string_match_all: the fraction of references contained in the prediction, case-insensitively.
double string_match_all(std::string_view prediction, const std::vector<std::string>& refs);
// string_match_part: 1 if any reference is contained, case-insensitively.
double string_match_part(std::string_view prediction, const std::vector<std::string>& refs);

}  // namespace lazyllm::eval
