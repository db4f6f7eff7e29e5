// tests/support/model_path: the same lookup order as scripts/fetch_model.py.
#include "support/model_path.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lazyllm::testing {
namespace {

// Sets environment variables for one test and restores them afterwards.
class ScopedEnv {
public:
    void set(const char* name, const char* value) {
        const char* old = std::getenv(name);
        saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
        if (value) {
            ::setenv(name, value, 1);
        } else {
            ::unsetenv(name);
        }
    }
    ~ScopedEnv() {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
            if (it->second) {
                ::setenv(it->first.c_str(), it->second->c_str(), 1);
            } else {
                ::unsetenv(it->first.c_str());
            }
        }
    }

private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(GgufModelPath, LookupOrderMatchesFetchScript) {
    ScopedEnv env;
    env.set("LAZYLLM_MODEL", nullptr);
    env.set("LAZYLLM_MODEL_DIR", nullptr);
    env.set("XDG_CACHE_HOME", nullptr);
    env.set("HOME", "/home/u");
    EXPECT_EQ(default_model_candidate(),
              "/home/u/.cache/lazyllm/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    env.set("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(default_model_candidate(), "/xdg/lazyllm/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    env.set("LAZYLLM_MODEL_DIR", "/models");
    EXPECT_EQ(default_model_candidate(), "/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    env.set("LAZYLLM_MODEL", "/elsewhere/m.gguf");
    EXPECT_EQ(default_model_candidate(), "/elsewhere/m.gguf");
    // Missing files give nullopt and a message that says how to fetch the model.
    EXPECT_EQ(default_model_path(), std::nullopt);
    EXPECT_NE(missing_model_message().find("/elsewhere/m.gguf"), std::string::npos);
    EXPECT_NE(missing_model_message().find("scripts/fetch_model.py"), std::string::npos);
}

}  // namespace
}  // namespace lazyllm::testing
