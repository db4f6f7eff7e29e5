// Stop strings over streamed text: text that could still become a stop string is held back,
// and the output ends right before the first stop string found.
#pragma once

#include <string>
#include <vector>

namespace lazyllm {

class StopStringMatcher {
public:
    explicit StopStringMatcher(std::vector<std::string> stops);
    // Feeds newly generated text; returns the part that is safe to emit now.
    std::string push(const std::string& text);
    // At the end: whatever was held back (empty after a match).
    std::string flush();
    bool matched() const { return matched_; }

private:
    std::vector<std::string> stops_;
    std::string pending_;
    bool matched_ = false;
};

}  // namespace lazyllm
