// LongBench (THUDM/LongBench metrics.py, eval.py), RULER (scripts/eval/synthetic/constants.py)
// and passkey metrics, reproduced operation by operation; see metrics.h for each definition.
#include "eval/metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "eval/task.h"
#include "eval/text_util.h"

namespace lazyllm::eval {
namespace {

// Python's string.punctuation.
constexpr std::string_view kAsciiPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

bool contains(std::string_view hay, std::string_view needle) {
    return hay.find(needle) != std::string_view::npos;
}

// A digit run (text::find_digit_runs) as ASCII digits without leading zeros: Python's int().
std::string digits_value(std::string_view run) {
    std::string out;
    for (char32_t c : text::decode_utf8(run)) {
        // Every Unicode Nd block is 10 consecutive code points starting at a multiple of 16 or
        // at '0'; the blocks text::is_py_digit knows all start at their zero.
        for (char32_t zero :
             {char32_t{'0'}, char32_t{0x660}, char32_t{0x6F0}, char32_t{0x966}, char32_t{0xFF10}}) {
            if (c >= zero && c <= zero + 9) out += static_cast<char>('0' + (c - zero));
        }
    }
    const size_t nz = out.find_first_not_of('0');
    return nz == std::string::npos ? std::string("0") : out.substr(nz);
}

bool all_ascii_digits(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Share of the digit runs in `prediction` equal to `target` (retrieval_score / count_score).
double digit_run_share(std::string_view prediction, std::string_view target) {
    const std::vector<std::string> numbers = text::find_digit_runs(prediction);
    if (numbers.empty()) return 0.0;
    size_t right = 0;
    for (const std::string& n : numbers) right += n == target ? 1 : 0;
    return static_cast<double>(right) / static_cast<double>(numbers.size());
}

// rouge 1.0.1 Rouge._get_avg_scores: [" ".join(_.split()) for _ in s.split(".") if len(_) > 0].
std::vector<std::string> rouge_sentences(std::string_view s) {
    std::vector<std::string> out;
    for (const std::string& piece : text::split(s, ".")) {
        if (!piece.empty()) out.push_back(text::join(text::split_whitespace(piece), " "));
    }
    return out;
}

// rouge_score._recon_lcs(x, y) as a set of words: the DP table of _lcs, then the walk back from
// (len(x), len(y)) that prefers a match, then i - 1 when table[i-1][j] > table[i][j-1], else j - 1.
void add_recon_lcs(const std::vector<int>& x, const std::vector<int>& y, std::set<int>& out) {
    const size_t n = x.size(), m = y.size();
    std::vector<int> table((n + 1) * (m + 1), 0);  // [n + 1, m + 1]
    auto at = [&](size_t i, size_t j) -> int& { return table[i * (m + 1) + j]; };
    for (size_t i = 1; i <= n; ++i) {
        for (size_t j = 1; j <= m; ++j) {
            at(i, j) =
                x[i - 1] == y[j - 1] ? at(i - 1, j - 1) + 1 : std::max(at(i - 1, j), at(i, j - 1));
        }
    }
    size_t i = n, j = m;
    while (i > 0 && j > 0) {
        if (x[i - 1] == y[j - 1]) {
            out.insert(x[i - 1]);
            --i;
            --j;
        } else if (at(i - 1, j) > at(i, j - 1)) {
            --i;
        } else {
            --j;
        }
    }
}

}  // namespace

std::string normalize_answer(std::string_view s) {
    // lower, then remove_punc
    std::u32string u;
    for (char32_t c : text::decode_utf8(text::lower(s))) {
        if (c < 0x80 && kAsciiPunctuation.find(static_cast<char>(c)) != std::string_view::npos) {
            continue;
        }
        u += c;
    }
    // remove_articles: re.sub(r"\b(a|an|the)\b", " ", text) replaces exactly the maximal runs of
    // word characters that spell a, an or the.
    std::u32string no_articles;
    for (size_t i = 0; i < u.size();) {
        if (!text::is_py_word(u[i])) {
            no_articles += u[i++];
            continue;
        }
        size_t e = i;
        while (e < u.size() && text::is_py_word(u[e])) ++e;
        const std::u32string_view word(u.data() + i, e - i);
        if (word == U"a" || word == U"an" || word == U"the") {
            no_articles += U' ';
        } else {
            no_articles += word;
        }
        i = e;
    }
    // white_space_fix
    return text::join(text::split_whitespace(text::encode_utf8(no_articles)), " ");
}

std::string first_line(std::string_view prediction) {
    const size_t b = prediction.find_first_not_of('\n');
    if (b == std::string_view::npos) return "";
    const std::string_view rest = prediction.substr(b);
    return std::string(rest.substr(0, rest.find('\n')));
}

double qa_f1_score(std::string_view prediction, std::string_view ground_truth) {
    const std::vector<std::string> pred = text::split_whitespace(normalize_answer(prediction));
    const std::vector<std::string> gold = text::split_whitespace(normalize_answer(ground_truth));
    std::unordered_map<std::string, int> gold_count;
    for (const std::string& w : gold) ++gold_count[w];
    int num_same = 0;  // sum of Counter(pred) & Counter(gold)
    for (const std::string& w : pred) {
        auto it = gold_count.find(w);
        if (it != gold_count.end() && it->second > 0) {
            --it->second;
            ++num_same;
        }
    }
    if (num_same == 0) return 0.0;
    const double precision = 1.0 * num_same / static_cast<double>(pred.size());
    const double recall = 1.0 * num_same / static_cast<double>(gold.size());
    return (2 * precision * recall) / (precision + recall);
}

double rouge_l_score(std::string_view prediction, std::string_view ground_truth) {
    const std::vector<std::string> hyp = rouge_sentences(prediction);
    const std::vector<std::string> ref = rouge_sentences(ground_truth);
    if (hyp.empty() || ref.empty()) return 0.0;  // ValueError, caught by metrics.py

    // Words as ids; sentence.split(" ") keeps empty words, as _split_into_words does.
    std::map<std::string, int> ids;
    auto to_ids = [&](const std::vector<std::string>& sentences, std::set<int>& distinct) {
        std::vector<std::vector<int>> out;
        for (const std::string& s : sentences) {
            std::vector<int> w;
            for (const std::string& word : text::split(s, " ")) {
                const int id = ids.emplace(word, static_cast<int>(ids.size())).first->second;
                w.push_back(id);
                distinct.insert(id);
            }
            out.push_back(std::move(w));
        }
        return out;
    };
    std::set<int> hyp_distinct, ref_distinct;
    const std::vector<std::vector<int>> hyp_words = to_ids(hyp, hyp_distinct);
    const std::vector<std::vector<int>> ref_words = to_ids(ref, ref_distinct);

    std::set<int> lcs_union;
    for (const std::vector<int>& r : ref_words) {
        for (const std::vector<int>& h : hyp_words) add_recon_lcs(r, h, lcs_union);
    }
    const double llcs = static_cast<double>(lcs_union.size());
    const double r_lcs = llcs / static_cast<double>(ref_distinct.size());
    const double p_lcs = llcs / static_cast<double>(hyp_distinct.size());
    return 2.0 * ((p_lcs * r_lcs) / (p_lcs + r_lcs + 1e-8));
}

double classification_score(std::string_view prediction, std::string_view ground_truth,
                            const std::vector<std::string>& all_classes) {
    std::vector<std::string> em_match_list;
    for (const std::string& c : all_classes) {
        if (contains(prediction, c)) em_match_list.push_back(c);
    }
    // for match_term in em_match_list: ... em_match_list.remove(match_term)
    for (size_t i = 0; i < em_match_list.size(); ++i) {
        const std::string term = em_match_list[i];
        if (contains(ground_truth, term) && term != ground_truth) {
            em_match_list.erase(std::find(em_match_list.begin(), em_match_list.end(), term));
        }
    }
    const bool hit =
        std::find(em_match_list.begin(), em_match_list.end(), ground_truth) != em_match_list.end();
    return hit ? 1.0 / static_cast<double>(em_match_list.size()) : 0.0;
}

double retrieval_score(std::string_view prediction, std::string_view ground_truth) {
    // re.findall(r'Paragraph (\d+)', ground_truth)[0]
    constexpr std::string_view kMarker = "Paragraph ";
    for (size_t at = ground_truth.find(kMarker); at != std::string_view::npos;
         at = ground_truth.find(kMarker, at + 1)) {
        const std::vector<std::string> runs =
            text::find_digit_runs(ground_truth.substr(at + kMarker.size()));
        const std::string_view tail = ground_truth.substr(at + kMarker.size());
        if (!runs.empty() && tail.substr(0, runs[0].size()) == runs[0]) {
            return digit_run_share(prediction, runs[0]);
        }
    }
    return 0.0;
}

double count_score(std::string_view prediction, std::string_view ground_truth) {
    return digit_run_share(prediction, ground_truth);
}

int fuzz_ratio(std::string_view a, std::string_view b) {
    if (a == b) return 100;                // utils.check_for_equivalence
    if (a.empty() || b.empty()) return 0;  // utils.check_empty_string
    const std::u32string x = text::decode_utf8(a), y = text::decode_utf8(b);
    std::vector<int> prev(y.size() + 1, 0), cur(y.size() + 1, 0);  // LCS rows
    for (size_t i = 1; i <= x.size(); ++i) {
        for (size_t j = 1; j <= y.size(); ++j) {
            cur[j] = x[i - 1] == y[j - 1] ? prev[j - 1] + 1 : std::max(prev[j], cur[j - 1]);
        }
        std::swap(prev, cur);
    }
    const auto lensum = static_cast<int64_t>(x.size() + y.size());
    const int64_t dist = lensum - 2 * static_cast<int64_t>(prev[y.size()]);
    // rapidfuzz Indel normalized_similarity: 1 - dist / lensum; fuzz: int(round(100 * ratio)),
    // round-half-even like Python's round (nearbyint in the default rounding mode).
    const double ratio = 1.0 - static_cast<double>(dist) / static_cast<double>(lensum);
    return static_cast<int>(std::nearbyint(100 * ratio));
}

double code_sim_score(std::string_view prediction, std::string_view ground_truth) {
    const size_t b = prediction.find_first_not_of('\n');
    const std::string_view rest = b == std::string_view::npos ? "" : prediction.substr(b);
    std::string line;
    for (const std::string& l : text::split(rest, "\n")) {
        if (!contains(l, "`") && !contains(l, "#") && !contains(l, "//")) {
            line = l;
            break;
        }
    }
    return fuzz_ratio(line, ground_truth) / 100.0;
}

double exact_match_score(std::string_view prediction, std::string_view ground_truth) {
    return normalize_answer(prediction) == normalize_answer(ground_truth) ? 1.0 : 0.0;
}

double passkey_score(std::string_view prediction, std::string_view ground_truth) {
    const std::vector<std::string> runs = text::find_digit_runs(prediction);
    if (runs.empty()) return 0.0;
    const std::string gold = text::strip(ground_truth);
    if (!all_ascii_digits(gold)) return 0.0;
    return digits_value(runs[0]) == digits_value(gold) ? 1.0 : 0.0;
}

std::string ruler_postprocess(std::string_view prediction) {
    std::string s = text::strip(prediction);
    for (char& c : s) {
        if (static_cast<unsigned char>(c) < 0x20) c = '\n';
    }
    return text::strip(s);
}

double string_match_all(std::string_view prediction, const std::vector<std::string>& refs) {
    if (refs.empty()) return 0.0;
    const std::string pred = text::lower(prediction);
    double hits = 0.0;
    for (const std::string& r : refs) hits += contains(pred, text::lower(r)) ? 1.0 : 0.0;
    return hits / static_cast<double>(refs.size());
}

double string_match_part(std::string_view prediction, const std::vector<std::string>& refs) {
    const std::string pred = text::lower(prediction);
    for (const std::string& r : refs) {
        if (contains(pred, text::lower(r))) return 1.0;
    }
    return 0.0;
}

// ---- task.h: metric names and Sample scoring ----

namespace {
struct MetricName {
    Metric metric;
    std::string_view name;
};
constexpr std::array<MetricName, 10> kMetricNames = {{
    {Metric::kPasskey, "passkey"},
    {Metric::kStringMatchAll, "string_match_all"},
    {Metric::kStringMatchPart, "string_match_part"},
    {Metric::kExactMatch, "exact_match"},
    {Metric::kQaF1, "qa_f1"},
    {Metric::kRougeL, "rouge_l"},
    {Metric::kClassification, "classification"},
    {Metric::kRetrieval, "retrieval"},
    {Metric::kCount, "count"},
    {Metric::kCodeSim, "code_sim"},
}};
}  // namespace

std::string_view metric_name(Metric m) {
    for (const MetricName& mn : kMetricNames) {
        if (mn.metric == m) return mn.name;
    }
    return "unknown";
}

Result<Metric> parse_metric(std::string_view name) {
    for (const MetricName& mn : kMetricNames) {
        if (mn.name == name) return mn.metric;
    }
    std::string known;
    for (const MetricName& mn : kMetricNames)
        known += (known.empty() ? "" : ", ") + std::string(mn.name);
    return make_error(ErrorCode::kInvalidArgument, "unknown metric '{}' (known: {})", name, known);
}

double score(const Sample& s, const std::string& prediction) {
    const std::string pred = s.first_line_only ? first_line(prediction) : prediction;
    switch (s.metric) {
        case Metric::kStringMatchAll:
            return string_match_all(ruler_postprocess(pred), s.answers);
        case Metric::kStringMatchPart:
            return string_match_part(ruler_postprocess(pred), s.answers);
        default:
            break;
    }
    // eval.py scorer: score = max(score, metric(prediction, ground_truth)) starting from 0.
    double best = 0.0;
    for (const std::string& gold : s.answers) {
        double v = 0.0;
        switch (s.metric) {
            case Metric::kPasskey:
                v = passkey_score(pred, gold);
                break;
            case Metric::kExactMatch:
                v = exact_match_score(pred, gold);
                break;
            case Metric::kQaF1:
                v = qa_f1_score(pred, gold);
                break;
            case Metric::kRougeL:
                v = rouge_l_score(pred, gold);
                break;
            case Metric::kClassification:
                v = classification_score(pred, gold, s.all_classes);
                break;
            case Metric::kRetrieval:
                v = retrieval_score(pred, gold);
                break;
            case Metric::kCount:
                v = count_score(pred, gold);
                break;
            case Metric::kCodeSim:
                v = code_sim_score(pred, gold);
                break;
            case Metric::kStringMatchAll:
            case Metric::kStringMatchPart:
                break;
        }
        best = std::max(best, v);
    }
    return best;
}

}  // namespace lazyllm::eval
