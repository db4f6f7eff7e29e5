// Names for the server's threads, as `top -H`, gdb and /proc/PID/task/*/comm show them. A thread
// starts with its creator's name, so OpenMP's workers carry the name of the thread whose
// parallel regions they serve: "lazyllm-sched" for generation, and none but the main thread
// named plain "lazyllm" (tests/server/suite_api.py checks that no OpenMP pool outlives the load).
#pragma once

#include <pthread.h>

namespace lazyllm::server {

// At most 15 characters (Linux's limit); a longer name is not set.
inline void name_this_thread(const char* name) { pthread_setname_np(pthread_self(), name); }

}  // namespace lazyllm::server
