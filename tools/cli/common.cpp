#include "cli/common.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/core.h>

namespace lazyllm::cli {

namespace {

constexpr const char* kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

bool file_exists(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Same rule as scripts/fetch_model.py.
std::string cache_dir() {
    if (const char* d = std::getenv("LAZYLLM_MODEL_DIR"); d && *d) return d;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/lazyllm/models";
    const char* home = std::getenv("HOME");
    return std::string(home ? home : ".") + "/.cache/lazyllm/models";
}

std::string fetch_script() {
    if (const char* s = std::getenv("LAZYLLM_FETCH_SCRIPT"); s && *s) return s;
    return std::string(LAZYLLM_SOURCE_DIR) + "/scripts/fetch_model.py";
}

}  // namespace

Result<std::string> resolve_model_path(const std::string& flag_value) {
    if (!flag_value.empty()) {
        if (!file_exists(flag_value)) {
            return make_error(ErrorCode::kNotFound, "model file '{}' does not exist", flag_value);
        }
        return flag_value;
    }
    const std::string path = cache_dir() + "/" + kDefaultModelFile;
    if (file_exists(path)) return path;
    const std::string script = fetch_script();
    if (!file_exists(script)) {
        return make_error(ErrorCode::kNotFound,
                          "default model '{}' is missing and the fetch script '{}' is not there; "
                          "pass -m MODEL", path, script);
    }
    std::fprintf(stderr, "lazyllm: default model not found, fetching it with %s\n", script.c_str());
    const std::string cmd = fmt::format("python3 '{}' >&2", script);
    if (std::system(cmd.c_str()) != 0 || !file_exists(path)) {
        return make_error(ErrorCode::kNotFound, "could not fetch the default model (see above); pass -m MODEL");
    }
    return path;
}

Result<std::string> read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(ErrorCode::kNotFound, "cannot read prompt file '{}'", path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

int report(const Error& e) {
    std::fprintf(stderr, "lazyllm: error: %s\n", e.message().c_str());
    switch (e.code()) {
        case ErrorCode::kInvalidArgument:
        case ErrorCode::kOutOfRange:
            return kExitUsage;
        default:
            return kExitFailure;
    }
}

}  // namespace lazyllm::cli
