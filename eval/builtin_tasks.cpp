// Built-in task registry (task.h make_builtin) and the passkey task, in the landmark-attention
// format (epfml/landmark-attention llama/run_test.py generate_prompt): the garbage text is cut at
// character positions, `depth` of it before the information line.
#include "eval/builtin_tasks.h"

#include <cmath>
#include <cstdio>

#include "eval/haystack.h"
#include "eval/synth_text.h"

namespace lazyllm::eval {
namespace builtin {
namespace {

constexpr std::string_view kTaskDescription =
    "There is an important info hidden inside a lot of irrelevant text. Find it and memorize "
    "them. I will quiz you about the important information there.";
constexpr std::string_view kGarbage =
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";
constexpr std::string_view kFinalQuestion = "What is the pass key? The pass key is";

// " ".join([garbage] * k) long enough for `chars` characters (run_test.py uses k = 2000).
std::string garbage_inf(int64_t chars) {
    std::string s(kGarbage);
    while (static_cast<int64_t>(s.size()) < chars) {
        s += ' ';
        s += kGarbage;
    }
    return s;
}

struct PasskeyPrompt {
    std::string key;
    double depth;
    std::string garbage;  // garbage_inf, at least as long as the largest n_garbage tried

    std::string render(int64_t n_garbage) const {
        const auto n_prefix =
            static_cast<int64_t>(std::llround(depth * static_cast<double>(n_garbage)));
        const int64_t n_suffix = n_garbage - n_prefix;
        std::string s(kTaskDescription);
        s += '\n';
        s.append(garbage, 0, static_cast<size_t>(n_prefix));
        s += "\nThe pass key is " + key + ". Remember it. " + key + " is the pass key.\n";
        s.append(garbage, 0, static_cast<size_t>(n_suffix));
        s += '\n';
        s += kFinalQuestion;
        return s;
    }
};

}  // namespace

Sample base_sample(const TaskArgs& args) {
    Sample s;
    s.task = std::string(args.task);
    char depth[32];
    std::snprintf(depth, sizeof(depth), "%.3f", args.depth);
    s.id = s.task + "-n" + std::to_string(args.n_tokens) + "-d" + depth + "-s" +
           std::to_string(args.seed);
    s.target_tokens = args.n_tokens;
    s.depth = args.depth;
    return s;
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
    if (from.empty()) return s;
    std::string out;
    size_t start = 0;
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, start)) {
        out.append(s, start, at - start);
        out.append(to);
        start = at + from.size();
    }
    out.append(s, start, std::string::npos);
    return out;
}

Result<Sample> make_passkey(const TaskArgs& args) {
    synth::Rng key_rng(args.seed, "passkey/key");
    PasskeyPrompt p{std::to_string(key_rng.range(1, 50000)), args.depth, ""};
    const int64_t n = args.n_tokens, lo = n - size_slack(n);

    // Characters per token of the garbage, to turn a token deficit into characters.
    p.garbage = garbage_inf(4096);
    const double chars_per_token =
        4096.0 / static_cast<double>(count_tokens(args.tok, p.garbage.substr(0, 4096)));
    const int64_t fixed = count_tokens(args.tok, p.render(0));
    if (fixed > n + n / 50) {
        return make_error(ErrorCode::kOutOfRange,
                          "passkey: {} tokens requested, but the template alone takes {}", n,
                          fixed);
    }
    // Secant steps on n_garbage inside a shrinking bracket [under, over], bisection when a step
    // leaves it: the count is nearly linear in the garbage length (it is periodic text).
    int64_t under = 0, over = -1;
    int64_t g =
        std::max<int64_t>(0, std::llround(static_cast<double>(n - fixed) * chars_per_token));
    std::string best = p.render(0);
    int64_t best_tokens = fixed;
    for (int round = 0; round < 32; ++round) {
        if (static_cast<int64_t>(p.garbage.size()) < g) p.garbage = garbage_inf(g + 4096);
        std::string text = p.render(g);
        const int64_t t = count_tokens(args.tok, text);
        if (t <= n) {
            under = std::max(under, g);
            if (t > best_tokens || best_tokens > n) {
                best = std::move(text);
                best_tokens = t;
            }
            if (t >= lo) break;
        } else {
            over = over < 0 ? g : std::min(over, g);
        }
        const int64_t aim = n - size_slack(n) / 2;
        int64_t next = g + std::llround(static_cast<double>(aim - t) * chars_per_token);
        if (over >= 0 && (next >= over || next <= under)) next = under + (over - under) / 2;
        if (next == g || (over >= 0 && over - under <= 1)) break;
        g = std::max<int64_t>(0, next);
    }

    Sample s = base_sample(args);
    s.prompt = std::move(best);
    s.chat = false;
    s.answers = {p.key};
    s.metric = Metric::kPasskey;
    s.max_new_tokens = 8;
    return s;
}

}  // namespace builtin

std::vector<std::string> builtin_task_names() {
    return {"passkey", "niah_single", "niah_multikey", "niah_multivalue", "vt", "mdqa"};
}

Result<Sample> make_builtin(std::string_view task, int64_t n_tokens, double depth, uint64_t seed,
                            const Tokenizer& tok) {
    if (n_tokens <= 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          "task '{}': n_tokens must be positive, got {}", task, n_tokens);
    }
    if (!(depth >= 0.0 && depth <= 1.0)) {
        return make_error(ErrorCode::kInvalidArgument, "task '{}': depth must be in [0, 1], got {}",
                          task, depth);
    }
    const builtin::TaskArgs args{task, n_tokens, depth, seed, tok};
    if (task == "passkey") return builtin::make_passkey(args);
    if (task == "niah_single") return builtin::make_niah_single(args);
    if (task == "niah_multikey") return builtin::make_niah_multikey(args);
    if (task == "niah_multivalue") return builtin::make_niah_multivalue(args);
    if (task == "vt") return builtin::make_vt(args);
    if (task == "mdqa") return builtin::make_mdqa(args);
    std::string known;
    for (const std::string& name : builtin_task_names())
        known += (known.empty() ? "" : ", ") + name;
    return make_error(ErrorCode::kInvalidArgument, "unknown built-in task '{}' (known: {})", task,
                      known);
}

}  // namespace lazyllm::eval
