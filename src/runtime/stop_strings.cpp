#include "runtime/stop_strings.h"

#include <algorithm>

namespace lazyllm {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) {
    for (auto& s : stops) {
        if (!s.empty()) stops_.push_back(std::move(s));
    }
}

std::string StopStringMatcher::push(const std::string& text) {
    if (matched_) return {};
    pending_ += text;
    // Earliest full match wins.
    size_t cut = std::string::npos;
    for (const auto& s : stops_) cut = std::min(cut, pending_.find(s));
    if (cut != std::string::npos) {
        matched_ = true;
        std::string out = pending_.substr(0, cut);
        pending_.clear();
        return out;
    }
    // Hold back the longest suffix that is a proper prefix of some stop string.
    size_t hold = 0;
    for (const auto& s : stops_) {
        const size_t max_k = std::min(s.size() - 1, pending_.size());
        for (size_t k = max_k; k > hold; --k) {
            if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
                hold = k;
                break;
            }
        }
    }
    std::string out = pending_.substr(0, pending_.size() - hold);
    pending_.erase(0, pending_.size() - hold);
    return out;
}

std::string StopStringMatcher::flush() {
    std::string out;
    if (!matched_) out.swap(pending_);
    pending_.clear();
    return out;
}

}  // namespace lazyllm
