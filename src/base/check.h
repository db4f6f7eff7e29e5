// CHECK: aborts loudly on a broken internal invariant (never for bad user input: that is an
// Error). Kept in release builds; DCHECK only in debug builds.
#pragma once

#include <cstdio>
#include <cstdlib>

#define LAZYLLM_CHECK(cond)                                                                  \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            std::fprintf(stderr, "lazyllm: CHECK failed at %s:%d: %s\n", __FILE__, __LINE__, \
                         #cond);                                                             \
            std::abort();                                                                    \
        }                                                                                    \
    } while (0)

#define LAZYLLM_CHECK_MSG(cond, msg)                                                           \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            std::fprintf(stderr, "lazyllm: CHECK failed at %s:%d: %s (%s)\n", __FILE__, __LINE__, \
                         #cond, msg);                                                          \
            std::abort();                                                                      \
        }                                                                                      \
    } while (0)

#ifndef NDEBUG
#define LAZYLLM_DCHECK(cond) LAZYLLM_CHECK(cond)
#else
#define LAZYLLM_DCHECK(cond) \
    do {                     \
    } while (0)
#endif
