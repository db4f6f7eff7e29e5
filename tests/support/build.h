// What kind of build the tests run in, for the few tests that size their problems by it.
#pragma once

namespace lazyllm::testing {

// The ASan+UBSan build (-DLAZYLLM_SANITIZE=ON, tests/CMakeLists.txt): Debug, its SIMD attention
// at -O0, several times slower than release (AttentionAvx2.KeyChunksMatchReference took 106 s
// there against 17 s in release on a Zen 3 VM). The release build runs every test at full size; this
// one runs the largest kernel tests on smaller problems that still cross the same boundaries
// (key chunks, weight chunks, ragged tails), which is what the sanitizers check.
#ifdef LAZYLLM_TEST_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace lazyllm::testing
