// Shared inputs of the micro-benchmarks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace lazyllm::bench {

// n values uniform in [-1, 1), reproducible from `seed`.
inline std::vector<float> random_vec(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

}  // namespace lazyllm::bench
