// Reading a whole input file named by the user (a prompt, token ids, a schedule).
#pragma once

#include <string>

#include "lazyllm/result.h"

namespace lazyllm {

// The file's bytes. Errors name the path: kNotFound when it does not exist, kInvalidArgument
// when it is a directory (which std::ifstream would read as empty), kIo when it cannot be
// opened or read. Pipes and devices (`-f <(cmd)`, /dev/stdin) are read like files.
Result<std::string> read_whole_file(const std::string& path);

}  // namespace lazyllm
