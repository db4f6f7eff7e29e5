#include "support/model_path.h"

#include <cstdlib>
#include <filesystem>

namespace lazyllm::testing {
namespace {

std::optional<std::string> env(const char* name) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
}

// Mirrors cache_dir() in scripts/fetch_model.py.
std::optional<std::string> cache_dir() {
    if (auto dir = env("LAZYLLM_MODEL_DIR")) return dir;
    std::string base;
    if (auto xdg = env("XDG_CACHE_HOME")) {
        base = *xdg;
    } else if (auto home = env("HOME")) {
        base = *home + "/.cache";
    } else {
        return std::nullopt;
    }
    return base + "/lazyllm/models";
}

}  // namespace

std::optional<std::string> model_cache_dir() { return cache_dir(); }

std::optional<std::string> default_model_candidate() {
    if (auto model = env("LAZYLLM_MODEL")) return model;
    auto dir = cache_dir();
    if (!dir) return std::nullopt;
    return *dir + "/" + kDefaultModelFile;
}

std::optional<std::string> default_model_path() {
    auto path = default_model_candidate();
    std::error_code ec;
    if (!path || !std::filesystem::is_regular_file(*path, ec)) return std::nullopt;
    return path;
}

std::string missing_model_message() {
    auto path = default_model_candidate();
    return "default model not found at '" + path.value_or("<no HOME>") +
           "'; run scripts/fetch_model.py (or set LAZYLLM_MODEL to a GGUF file)";
}

bool skip_model_tests() {
    const char* v = std::getenv("LAZYLLM_SKIP_MODEL_TESTS");
    return v != nullptr && std::string(v) == "1";
}

}  // namespace lazyllm::testing
