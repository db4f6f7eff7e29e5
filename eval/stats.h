// Small statistics for comparing a pruning policy with full on the same samples: the exact
// two-sided sign test for paired outcomes and the Wilson score interval of a proportion.
#pragma once

#include <cstdint>
#include <utility>

namespace lazyllm::eval {

// Two-sided exact sign test: the probability, under "better and worse are equally likely", of a
// split at least as uneven as (n_better, n_worse). Ties are left out, as the test prescribes.
// 1 when there is no untied pair.
double sign_test_p(int64_t n_better, int64_t n_worse);

// Wilson score interval (95%, z = 1.96) of a proportion of k successes in n trials, as
// (low, high) in [0, 1]; (0, 1) when n == 0.
std::pair<double, double> wilson_interval(int64_t k, int64_t n);

}  // namespace lazyllm::eval
