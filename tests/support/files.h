// Reading a whole file in a test.
#pragma once

#include <fstream>
#include <iterator>
#include <string>

namespace lazyllm::testing {

// The bytes of `path` into `out` (empty if it cannot be opened); says whether it opened.
inline bool read_file_bytes(const std::string& path, std::string& out) {
    std::ifstream in(path, std::ios::binary);
    out.assign(std::istreambuf_iterator<char>(in), {});
    return in.is_open();
}

// The bytes of `path`, or "" when it cannot be opened.
inline std::string read_file_bytes(const std::string& path) {
    std::string out;
    read_file_bytes(path, out);
    return out;
}

}  // namespace lazyllm::testing
