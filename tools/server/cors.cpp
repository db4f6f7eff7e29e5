#include "server/cors.h"

#include <algorithm>
#include <cctype>

namespace lazyllm::server {

namespace {

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

// An origin is scheme://host[:port], nothing after it ("null": pages from files).
bool well_formed_origin(std::string_view o) {
    if (o == "null") return true;
    size_t rest = 0;
    if (o.starts_with("http://")) {
        rest = 7;
    } else if (o.starts_with("https://")) {
        rest = 8;
    } else {
        return false;
    }
    const std::string_view host = o.substr(rest);
    return !host.empty() && std::none_of(host.begin(), host.end(), [](char c) {
        return c == '/' || c == '?' || c == '#' || c == '*' ||
               std::isspace(static_cast<unsigned char>(c));
    });
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

}  // namespace

Result<std::vector<std::string>> parse_cors_origins(std::string_view list) {
    const std::string_view all = trim(list);
    if (all == "none") return std::vector<std::string>{};
    if (all == "*") return std::vector<std::string>{"*"};
    std::vector<std::string> origins;
    size_t start = 0;
    while (start <= all.size()) {
        const size_t end = std::min(all.find(',', start), all.size());
        const std::string_view o = trim(all.substr(start, end - start));
        if (!well_formed_origin(o)) {
            return make_error(ErrorCode::kInvalidArgument,
                              "--cors-origins: '{}' is not an origin (scheme://host[:port], as "
                              "http://localhost:3000), and * or none stand alone",
                              o);
        }
        origins.emplace_back(o);
        start = end + 1;
    }
    return origins;
}

std::string cors_allow_origin(const std::vector<std::string>& allowed, std::string_view origin) {
    if (origin.empty() || allowed.empty()) return "";
    if (allowed.front() == "*") return "*";
    for (const std::string& a : allowed) {
        if (iequals(a, origin)) return std::string(origin);
    }
    return "";
}

}  // namespace lazyllm::server
