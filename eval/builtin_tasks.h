// Internal: one maker per built-in task (task.h make_builtin dispatches by name).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "eval/task.h"
#include "lazyllm/result.h"
#include "lazyllm/tokenizer.h"

namespace lazyllm::eval::builtin {

struct TaskArgs {
    std::string_view task;
    int64_t n_tokens;
    double depth;
    uint64_t seed;
    const Tokenizer& tok;
};

// A Sample with task, id, target_tokens and depth filled in from `args`.
Sample base_sample(const TaskArgs& args);

Result<Sample> make_passkey(const TaskArgs& args);          // builtin_tasks.cpp
Result<Sample> make_niah_single(const TaskArgs& args);      // ruler_tasks.cpp
Result<Sample> make_niah_multikey(const TaskArgs& args);    // ruler_tasks.cpp
Result<Sample> make_niah_multivalue(const TaskArgs& args);  // ruler_tasks.cpp
Result<Sample> make_vt(const TaskArgs& args);               // ruler_tasks.cpp
Result<Sample> make_mdqa(const TaskArgs& args);             // mdqa_task.cpp

// Python's str.replace(old, new): every non-overlapping occurrence, left to right.
std::string replace_all(std::string s, std::string_view from, std::string_view to);

}  // namespace lazyllm::eval::builtin
