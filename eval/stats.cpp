#include "eval/stats.h"

#include <algorithm>
#include <cmath>

namespace lazyllm::eval {

double sign_test_p(int64_t n_better, int64_t n_worse) {
    const int64_t n = n_better + n_worse;
    if (n <= 0) return 1.0;
    const int64_t k = std::min(n_better, n_worse);
    // P(X <= k) for X ~ Binomial(n, 1/2), summed in log space (n can be in the hundreds).
    double tail = 0.0;
    for (int64_t i = 0; i <= k; ++i) {
        const double log_term = std::lgamma(static_cast<double>(n) + 1.0) -
                                std::lgamma(static_cast<double>(i) + 1.0) -
                                std::lgamma(static_cast<double>(n - i) + 1.0) -
                                static_cast<double>(n) * std::log(2.0);
        tail += std::exp(log_term);
    }
    return std::min(1.0, 2.0 * tail);
}

std::pair<double, double> wilson_interval(int64_t k, int64_t n) {
    if (n <= 0) return {0.0, 1.0};
    constexpr double z = 1.96;
    const auto nn = static_cast<double>(n);
    const double p = static_cast<double>(k) / nn;
    const double denom = 1.0 + z * z / nn;
    const double centre = (p + z * z / (2.0 * nn)) / denom;
    const double half = z * std::sqrt(p * (1.0 - p) / nn + z * z / (4.0 * nn * nn)) / denom;
    return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

}  // namespace lazyllm::eval
