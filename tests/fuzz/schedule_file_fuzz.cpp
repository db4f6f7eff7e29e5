// Fuzz target: the schedule file reader and the --lazy-layers / --lazy-keep parser
// (src/prune/schedule.cpp). The first byte picks the model's layer count (1-64); the rest is a
// schedule file's text, and, split at the first newline, a layers list and a keep list. Any
// input must give a valid schedule or an error with a message.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "prune/schedule.h"

namespace {

// read_schedule_file takes a path: one file per process, rewritten for each input (in /dev/shm
// where there is one, so the runs stay in memory).
const std::string& scratch_path() {
    static const std::string p = [] {
        const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        return std::string(dir) + "/lazyllm-schedule-fuzz-" + std::to_string(::getpid()) + ".json";
    }();
    return p;
}

void check(const lazyllm::Result<lazyllm::prune::Schedule>& s, int n_layer) {
    using namespace lazyllm;
    if (!s.ok()) {
        if (s.error().message().empty()) fuzz::fail("schedule error without a message");
        return;
    }
    if (auto st = prune::validate_schedule(*s, n_layer); !st.ok()) {
        fuzz::fail("accepted schedule fails validation", st.error().message());
    }
    (void)prune::to_string(*s);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace lazyllm;
    if (size == 0) return 0;
    const int n_layer = 1 + data[0] % 64;
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    {
        FILE* f = std::fopen(scratch_path().c_str(), "wb");
        if (f == nullptr) fuzz::fail("cannot write", scratch_path());
        std::fwrite(text.data(), 1, text.size(), f);
        std::fclose(f);
        check(prune::load_schedule_file(scratch_path(), n_layer), n_layer);
    }
    const size_t nl = text.find('\n');
    const std::string_view layers = text.substr(0, nl);
    const std::string_view keep =
        nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    check(prune::parse_schedule(layers, keep, n_layer), n_layer);
    return 0;
}

#include "fuzz/fuzz_main.h"
