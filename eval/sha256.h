// SHA-256 (FIPS 180-4) of a byte string, for prompt fingerprints in evaluation records: two runs
// of the same sample must give the same hash on any machine, so the fingerprint is a real
// standard hash rather than std::hash.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace lazyllm::eval {

std::array<uint8_t, 32> sha256(std::string_view data);
// Lower-case hex, 64 characters.
std::string sha256_hex(std::string_view data);

}  // namespace lazyllm::eval
