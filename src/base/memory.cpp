#include "lazyllm/memory.h"

#include <fstream>
#include <string>
#include <string_view>

namespace lazyllm {

namespace {

// The "<key>:  <n> kB" line of a /proc file, in bytes (0 when absent or unreadable).
uint64_t proc_kib_field(const char* path, std::string_view key) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
            line[key.size()] == ':') {
            try {
                return std::stoull(line.substr(key.size() + 1)) * 1024;
            } catch (...) {
                return 0;
            }
        }
    }
    return 0;
}

}  // namespace

uint64_t available_memory_bytes() { return proc_kib_field("/proc/meminfo", "MemAvailable"); }
uint64_t resident_bytes() { return proc_kib_field("/proc/self/status", "VmRSS"); }
uint64_t peak_resident_bytes() { return proc_kib_field("/proc/self/status", "VmHWM"); }

bool reset_peak_resident() {
    std::ofstream out("/proc/self/clear_refs");
    out << "5";
    out.flush();
    return static_cast<bool>(out);
}

}  // namespace lazyllm
