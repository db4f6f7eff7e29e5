#include "lazyllm/memory.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

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

// The first number in a file (0 when it is absent or holds none, e.g. cgroup's "max").
uint64_t file_number(const char* path) {
    std::ifstream in(path);
    uint64_t v = 0;
    return (in >> v) ? v : 0;
}

}  // namespace

uint64_t available_memory_bytes() {
    uint64_t avail = proc_kib_field("/proc/meminfo", "MemAvailable");
    // In a container MemAvailable is the host's: the cgroup's limit (v2, then v1) bounds it.
    const uint64_t limit = file_number("/sys/fs/cgroup/memory.max");
    const uint64_t used = file_number("/sys/fs/cgroup/memory.current");
    const uint64_t limit_v1 = file_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    const uint64_t used_v1 = file_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    for (const auto& [lim, cur] : {std::pair{limit, used}, std::pair{limit_v1, used_v1}}) {
        if (lim > 0 && lim > cur && (avail == 0 || lim - cur < avail)) avail = lim - cur;
    }
    return avail;
}
uint64_t resident_bytes() { return proc_kib_field("/proc/self/status", "VmRSS"); }
uint64_t peak_resident_bytes() { return proc_kib_field("/proc/self/status", "VmHWM"); }

bool reset_peak_resident() {
    std::ofstream out("/proc/self/clear_refs");
    out << "5";
    out.flush();
    return static_cast<bool>(out);
}

int usable_cores() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace lazyllm
