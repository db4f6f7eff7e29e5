#include "cli/common.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "base/read_file.h"

namespace lazyllm::cli {

namespace {

// The models scripts/fetch_model.py fetches from PyPI, by name (its MODELS table); the first is
// the default.
struct NamedModel {
    const char* name;
    const char* file;
};
constexpr NamedModel kNamedModels[] = {
    {"smollm2-135m", "SmolLM2-135M-Instruct.Q4_1.gguf"},
    {"gemma3-270m", "gemma-3-270m-q4_k_m.gguf"},
};

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

std::string dirname_of(const std::string& p) {
    const size_t slash = p.find_last_of('/');
    return slash == std::string::npos ? std::string(".") : p.substr(0, std::max<size_t>(slash, 1));
}

// scripts/fetch_model.py: $LAZYLLM_FETCH_SCRIPT, else the first scripts/ folder (a checkout:
// build/tools/lazyllm -> the checkout it was built in, wherever that now is) or share/lazyllm/
// folder (an install: PREFIX/bin/lazyllm, cmake/install.cmake) found walking up from the
// binary, else the source folder recorded at build time. "" when none has it.
std::string fetch_script() {
    if (const char* s = std::getenv("LAZYLLM_FETCH_SCRIPT"); s && *s) return s;
    constexpr const char* kRel = "/scripts/fetch_model.py";
    constexpr const char* kInstalled = "/share/lazyllm/fetch_model.py";
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n > 0) {
        std::string dir = dirname_of(std::string(buf, static_cast<size_t>(n)));
        for (int up = 0; up < 4 && dir.size() > 1; ++up, dir = dirname_of(dir)) {
            for (const char* rel : {kRel, kInstalled}) {
                if (file_exists(dir + rel)) return dir + rel;
            }
        }
    }
    const std::string built_in = std::string(LAZYLLM_SOURCE_DIR) + kRel;
    return file_exists(built_in) ? built_in : "";
}

}  // namespace

Result<std::string> resolve_model_path(const std::string& flag_value) {
    const NamedModel* named = flag_value.empty() ? &kNamedModels[0] : nullptr;
    for (const NamedModel& m : kNamedModels) {
        if (flag_value == m.name && !file_exists(flag_value)) named = &m;
    }
    if (named == nullptr) {
        if (!file_exists(flag_value)) {
            struct stat st {};
            if (::stat(flag_value.c_str(), &st) == 0) {
                return make_error(ErrorCode::kNotFound, "model file '{}' is {}, not a GGUF file",
                                  flag_value,
                                  S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
            }
            return make_error(ErrorCode::kNotFound,
                              "model file '{}' does not exist (names fetched from PyPI: {})",
                              flag_value, model_names());
        }
        return flag_value;
    }
    const std::string path = cache_dir() + "/" + named->file;
    if (file_exists(path)) return path;
    const std::string script = fetch_script();
    if (script.empty() || !file_exists(script)) {
        return make_error(ErrorCode::kNotFound,
                          "model '{}' ({}) is missing and the fetch script {} is not there "
                          "(LAZYLLM_FETCH_SCRIPT names it); pass -m MODEL",
                          named->name, path,
                          script.empty() ? "scripts/fetch_model.py" : "'" + script + "'");
    }
    std::fprintf(stderr, "lazyllm: model %s not found, fetching it with %s\n", named->name,
                 script.c_str());
    const std::string cmd = fmt::format("python3 '{}' {} >&2", script, named->name);
    if (std::system(cmd.c_str()) != 0 || !file_exists(path)) {
        return make_error(ErrorCode::kNotFound, "could not fetch model '{}' (see above); pass -m MODEL",
                          named->name);
    }
    return path;
}

std::string model_names() {
    std::string out;
    for (const NamedModel& m : kNamedModels) out += std::string(out.empty() ? "" : ", ") + m.name;
    return out;
}

Result<std::string> read_text_file(const std::string& path, std::string_view flag) {
    if (path == "-") {
        std::ostringstream ss;
        ss << std::cin.rdbuf();
        if (std::cin.bad()) {
            return make_error(ErrorCode::kInvalidArgument, "{} -: cannot read stdin", flag);
        }
        return ss.str();
    }
    auto text = read_whole_file(path);
    // A usage error whatever the cause (exit 2): the file is the user's input.
    if (!text) {
        return make_error(ErrorCode::kInvalidArgument, "{}: file {}", flag, text.error().message());
    }
    return std::move(text.value());
}

Result<std::string> read_prompt_file(const std::string& path, std::string_view flag) {
    LAZYLLM_ASSIGN_OR_RETURN(std::string text, read_text_file(path, flag));
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
}

Status check_bytes_encodable(const Tokenizer& tok, std::string_view text, std::string_view what) {
    if (const std::optional<size_t> at = tok.unencodable_byte(text)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "{} has byte 0x{:02X} at offset {}, which the model's vocabulary has "
                          "no token for (byte-level BPE would drop it)",
                          what, static_cast<uint8_t>(text[*at]), *at);
    }
    return {};
}

Status prepare_output_dir(const std::string& dir, std::string_view flag) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        return make_error(ErrorCode::kInvalidArgument, "{}: cannot create the folder '{}': {}",
                          flag, dir, ec.message());
    }
    const std::string probe = fmt::format("{}/.lazyllm-write-check-{}", dir, ::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        return make_error(ErrorCode::kInvalidArgument, "{}: cannot write in '{}': {}", flag, dir,
                          std::strerror(errno));
    }
    ::close(fd);
    ::unlink(probe.c_str());
    return {};
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

int report_usage(const Error& e) {
    std::fprintf(stderr, "lazyllm: error: %s\n", e.message().c_str());
    return kExitUsage;
}

}  // namespace lazyllm::cli
