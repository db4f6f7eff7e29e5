// The checks of an emulated-kernel test: each an error against its tolerance.
#pragma once

#include <algorithm>
#include <cstdio>

namespace lazyllm::tile_emulator {

struct Tally {
    int checks = 0;
    int failures = 0;
    double worst = 0.0;

    // Counts one check; false (and the caller prints what failed) when err exceeds tolerance.
    bool record(double err, double tolerance) {
        ++checks;
        worst = std::max(worst, err);
        if (err <= tolerance) return true;
        ++failures;
        return false;
    }

    // Prints the summary line; returns the failures.
    int report(const char* what) const {
        std::printf("%s (emulated tiles): %d of %d checks passed, largest error %g\n", what,
                    checks - failures, checks, worst);
        return failures;
    }
};

}  // namespace lazyllm::tile_emulator
