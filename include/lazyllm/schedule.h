// The pruning schedule, policy and preset of the public API (docs/design.md 1.4, 1.5): typed
// data that the CLI, eval, tune and the server pass to the engine, never strings. Flag and
// schedule-file parsing live here too, with one validation (validate_schedule) that every path
// goes through.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lazyllm/result.h"

namespace lazyllm {

// One tier of a schedule (not in the paper, docs/lazyllm.md): from min_context tokens of context
// on, a step that selects cuts at these boundaries with these keep fractions instead of the
// schedule's own, so a long prompt can be cut earlier than a short one.
struct ScheduleTier {
    int min_context = 0;          // >= 1; tiers in increasing order of it
    std::vector<int> boundaries;  // the rules of Schedule::boundaries
    std::vector<float> keep;      // the rules of Schedule::keep
    bool operator==(const ScheduleTier&) const = default;
};

struct Schedule {
    // Layer indices b_j: pruning happens before layer b_j, scored at layer b_j - 1. Strictly
    // increasing, each in [1, n_layer - 1].
    std::vector<int> boundaries;
    // keep[j]: cumulative fraction of the whole context surviving boundary j (docs/design.md 1.2), so
    // a schedule means the same at every step. Each in (0, 1], non-increasing; one per boundary.
    std::vector<float> keep;
    int keep_first = 0;        // the first N positions are never pruned (attention sinks)
    // keep_recent (not in the paper, docs/lazyllm.md): the last N positions of the context are
    // never pruned, in prefill (the question at the end of a prompt) and in decode (the answer
    // being generated: a fresh token cut at deep layers makes the answer repeat itself). The
    // window is kept on top of the keep fraction (keep_first counts toward it).
    int keep_recent = 0;
    // min_context (not in the paper): a step whose context (tokens before it plus its new ones) is
    // shorter runs every layer on every token, exactly as full: below it pruning saves too little
    // time to be worth any change of answer. A conversation that grows past it prunes from then on.
    int min_context = 0;
    // Also prune in one-token decode steps; steps of several new tokens (a prompt, a new turn
    // over a cached conversation) always select.
    bool prune_decode = true;
    // Score shaping (not in the paper, docs/lazyllm.md; 1 and 1 are the paper's Eq. 1):
    // score_layers: a token's score is the sum of the last token's head-mean attention to it over
    // the last score_layers layers before the boundary (within the stage, never before its first
    // layer). score_pool (odd): each candidate's score becomes the max over the candidates within
    // score_pool / 2 positions of it, so a kept token keeps its neighbours (SnapKV's pooling).
    int score_layers = 1;
    int score_pool = 1;
    // revive_max (not in the paper, docs/lazyllm.md): in a decode step, at most this many
    // tokens revived at each boundary, the highest-scored of those selected; the others stay in
    // their Aux slots, out of the step's later layers, and can be revived by a later step. It
    // bounds a decode step's extra rows. -1: no bound (the paper: every selected token revives).
    int revive_max = -1;
    // revive_weight (not in the paper, docs/lazyllm.md): in a one-token decode step that
    // selects, the score of a token that would have to revive (prefill, or an earlier step,
    // left it in its Aux slot at this boundary) counts times this, so a token whose layers are
    // computed keeps its place unless a deferred one scores 1 / revive_weight times higher.
    // Fewer revivals, so fewer extra rows in decode steps. In (0, 1] (0 would rank the deferred
    // tokens by position alone); 1: the paper's rule. The weight applies after score_pool, so a
    // computed token within the pool window of a deferred one shares its unweighted pooled
    // score. One-token steps only (decode steps, and a one-token turn over a cached context).
    float revive_weight = 1.0f;
    // repair (not in the paper, docs/lazyllm.md): the step after a step that left tokens short
    // of the last layer first recomputes that step's tokens from its first boundary on, over
    // every key, as full prefill would have (the first boundary's layer inputs are saved for
    // it), instead of reviving the deferred tokens from their Aux slots. The first token still
    // comes from the pruned prefill; from the second on, the K/V cache is full's, so the answer
    // is full's whenever the first token is. It costs the kept tokens' layers from the first
    // boundary on a second time. Needs prune_decode off and revive_max not 0.
    bool repair = false;
    // verify_margin (not in the paper, docs/lazyllm.md): with repair, a step that cut tokens
    // and whose last token's two largest logits lie less than this apart (a near tie the cuts
    // may have decided) repairs itself before it returns, and returns the repaired row's
    // logits, which are full's: its next token is then full's, the repair having run before it
    // instead of in the next step. 0: off. Needs repair.
    float verify_margin = 0.0f;
    // tiers (not in the paper): a step whose context reaches a tier's min_context selects at
    // that tier's boundaries (the last such tier); shorter ones at the schedule's own. LazyLLM
    // alone, and only with repair: deferred tokens wait at their step's boundaries, which the
    // next step's need not share, so they are repaired rather than revived there.
    std::vector<ScheduleTier> tiers = {};
};

// The boundaries and keep fractions a step over n_total tokens of context selects with.
struct StepCuts {
    const std::vector<int>& boundaries;
    const std::vector<float>& keep;
};
StepCuts cuts_for(const Schedule& schedule, int64_t n_total);
StepCuts cuts_for(const Schedule&& schedule, int64_t n_total) = delete;  // would dangle

// Schedule::tiers from their JSON form (a schedule file's "tiers" array), for a request that
// carries them; errors name the entry ("tiers[0].layers[1] = ..."). The rules are checked with
// the rest of the schedule (validate_schedule).
Result<std::vector<ScheduleTier>> parse_tiers_json(std::string_view json);

// Largest accepted score_layers and score_pool.
inline constexpr int kMaxScoreLayers = 64;
inline constexpr int kMaxScorePool = 255;

// Changes on top of a schedule (flags such as --lazy-keep-recent, or a request's fields): each
// field that is set replaces the schedule's. Setting prune_decode on or revive_max 0 also turns
// repair off, unless repair is set as well; a schedule left without repair drops its tiers
// (they were chosen with repair, and need it) and its verify_margin, unless that is set too.
// Setting prune_decode off likewise sets revive_weight to 1, unless that is set too.
struct ScheduleOverrides {
    std::optional<int> keep_first, keep_recent, min_context;
    std::optional<bool> prune_decode;
    std::optional<int> score_layers, score_pool;
    std::optional<int> revive_max;  // -1: no bound
    std::optional<float> revive_weight;
    std::optional<bool> repair;
    std::optional<float> verify_margin;
    bool empty() const {
        return !keep_first && !keep_recent && !min_context && !prune_decode && !score_layers &&
               !score_pool && !revive_max && !revive_weight && !repair && !verify_margin;
    }
};
void apply(const ScheduleOverrides& overrides, Schedule& schedule);

// Checks a schedule against the rules above for a model of n_layer layers. Errors
// (kInvalidArgument) name the entry at fault and the rule.
Status validate_schedule(const Schedule& schedule, int n_layer);

// The keep fraction each layer runs at under a schedule's own boundaries ([n_layer]; 1 before
// the first boundary; tiers aside), and its mean: the predicted fraction of prompt token-layers
// prefill computes (ignoring keep_first, keep_recent and the last token). `tune` ranks
// candidates by the mean.
std::vector<float> keep_profile(const Schedule& schedule, int n_layer);
double predicted_prefill_fraction(const Schedule& schedule, int n_layer);

// Parses flag values. `layers` is a comma list of either layer indices ("9,19,28") or depth
// fractions ("0.28,0.59,0.88"); the list is fractions iff any item contains '.'. A fraction f must
// be in (0, 1) and maps to layer round(f * n_layer), which must lie in [1, n_layer - 1]. `keep` is
// a comma list of fractions in (0, 1], non-increasing, one per layer. Spaces around items are
// allowed. keep_first, prune_decode, score_layers, score_pool, revive_max and revive_weight keep
// their defaults.
Result<Schedule> parse_schedule(std::string_view layers, std::string_view keep, int n_layer);

// "layers=9,19,28 keep=0.5,0.25,0.1", with " keep_first=N", " keep_recent=N",
// " min_context=N", " prune_decode=false", " score_layers=N", " score_pool=N",
// " revive_max=N", " revive_weight=X", " repair=true", " verify_margin=X" and
// " tiers=3072:9,15,27/0.4,0.25,0.15"
// (tiers separated by ';') appended only when they differ from the defaults. For logs and --json.
std::string to_string(const Schedule& schedule);

// Schedule file (JSON):
//   {"version": 1, "model": "...", "n_layer": 30, "layers": [8, 18, 26],
//    "keep": [0.5, 0.25, 0.1], "keep_first": 0, "keep_recent": 0, "min_context": 0,
//    "prune_decode": true, "score_layers": 1, "score_pool": 1, "revive_max": 8,
//    "revive_weight": 0.25, "repair": false, "verify_margin": 0.5,
//    "tiers": [{"min_context": 3072, "layers": [9, 15, 27], "keep": [0.4, 0.25, 0.15]}],
//    "meta": {...}}
// ("revive_max" is written only when it bounds revivals: -1, no bound, is the default;
// "revive_weight" only when not 1; "repair" only when true; "verify_margin" only when not 0;
// "tiers" only when there are some.)
// Only "layers" and "keep" are required; "meta" is a free-form object (score, speedup,
// calibration set...). Unknown top-level keys are errors, so a misspelled key is not ignored.
struct ScheduleFileInfo {
    std::string model;             // "" when absent
    int n_layer = 0;               // 0 when absent; else the model the schedule was made for
    std::string meta_json = "{}";  // serialized JSON object
};

struct ScheduleFile {
    Schedule schedule;
    ScheduleFileInfo info;
};

// Reads and validates a schedule file for a model of n_layer layers; when the file records
// n_layer, it must match (the error says both numbers).
Result<ScheduleFile> read_schedule_file(const std::string& path, int n_layer);
Result<Schedule> load_schedule_file(const std::string& path, int n_layer);

// Whether save_schedule_file can write `path`: an error when it is empty, names a folder, a
// device or another file that is not a regular one (through symlinks), a symlink to nothing, or
// a folder that does not exist.
Status check_schedule_path(const std::string& path);
// Writes a schedule file (via a temporary file and rename; a symlink's target is replaced, the
// link stays), after check_schedule_path. The schedule is validated against info.n_layer when it
// is set; info.meta_json must be a JSON object.
Status save_schedule_file(const std::string& path, const Schedule& schedule,
                          const ScheduleFileInfo& info);

// Which tokens a step keeps (design.md 1.5): kFull runs unpruned; kLazy is LazyLLM (per-step
// selection from attention scores, with revival); kStatic cuts once in prefill from early-layer
// scores with no revival; kRandom drops prompt tokens at random; kGemFilter is GemFilter-style
// two-pass selection.
enum class Policy { kFull, kLazy, kStatic, kRandom, kGemFilter };

// "full", "lazy", "static", "random", "gemfilter" (case-sensitive); the error lists them.
Result<Policy> parse_policy(std::string_view name);
std::string_view policy_name(Policy policy);

// What `--lazy` means (docs/lazyllm.md, "Presets"). kSafe, the default, gives up speed where it
// would change answers: no pruning below a measured context size, a protected recent window, and
// decode steps that do not prune. kFast is the fastest measured schedule that still keeps the
// built-in tasks' answers at 2k-8k, at some cost in fidelity to full.
enum class Preset { kSafe, kFast };

// "safe" | "fast"; the error lists them.
Result<Preset> parse_preset(std::string_view name);
std::string_view preset_name(Preset preset);

}  // namespace lazyllm
