// What this process and the machine have, from /proc and the scheduler (Linux): memory for the
// load's choice of weights, `run -v` and the bench's resident-set column; the cores it may run
// on for the default thread count.
#pragma once

#include <cstdint>

namespace lazyllm {

// The kernel's estimate of memory available to new allocations without swapping
// (MemAvailable in /proc/meminfo), bounded by the process's cgroup limit less its usage where
// one is set (containers); in bytes, 0 where it cannot be read.
uint64_t available_memory_bytes();

// This process's resident set (VmRSS in /proc/self/status), in bytes; 0 where it cannot be read.
uint64_t resident_bytes();

// The largest resident set so far (VmHWM), in bytes; 0 where it cannot be read.
uint64_t peak_resident_bytes();

// Starts peak_resident_bytes() over from the current resident set (writes 5 to
// /proc/self/clear_refs); false where that is not allowed.
bool reset_peak_resident();

// The cores this process may run on: its affinity mask (taskset, a container's cpuset), which
// std::thread::hardware_concurrency ignores; at least 1.
int usable_cores();

}  // namespace lazyllm
