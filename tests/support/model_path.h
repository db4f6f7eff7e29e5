// Where test suites find the real default model (SmolLM2-135M-Instruct Q4_1), with the same
// lookup as scripts/fetch_model.py: $LAZYLLM_MODEL (a file), else $LAZYLLM_MODEL_DIR, else
// $XDG_CACHE_HOME/lazyllm/models, else ~/.cache/lazyllm/models.
#pragma once

#include <optional>
#include <string>

namespace lazyllm::testing {

inline constexpr const char* kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

// The path the lookup above yields, whether or not the file exists; nullopt only when no
// candidate can be formed (no LAZYLLM_MODEL, LAZYLLM_MODEL_DIR, XDG_CACHE_HOME or HOME).
std::optional<std::string> default_model_candidate();

// The model cache folder of the lookup above ($LAZYLLM_MODEL_DIR, else
// $XDG_CACHE_HOME/lazyllm/models, else ~/.cache/lazyllm/models); nullopt without HOME.
std::optional<std::string> model_cache_dir();

// The default model's path if that file exists, else nullopt.
std::optional<std::string> default_model_path();

// LAZYLLM_SKIP_MODEL_TESTS=1 in the environment.
bool skip_model_tests();

// One line for a skip message: where the model was looked for and how to fetch it.
std::string missing_model_message();

}  // namespace lazyllm::testing

// In a test body: binds `var` to the model path or skips the test with a message saying how
// to fetch the model.
#define LAZYLLM_MODEL_OR_SKIP(var)                                                             \
    std::string var;                                                                           \
    do {                                                                                       \
        auto lazyllm_model_path_ = ::lazyllm::testing::default_model_path();                   \
        if (!lazyllm_model_path_) GTEST_SKIP() << ::lazyllm::testing::missing_model_message(); \
        var = *lazyllm_model_path_;                                                            \
    } while (0)
