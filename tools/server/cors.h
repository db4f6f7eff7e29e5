// Cross-origin requests: which web pages of other origins a browser lets call the API. As
// llama-server and vLLM, any origin by default (`serve --cors-origins`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lazyllm/result.h"

namespace lazyllm::server {

// "*" (any origin), "none" (no CORS headers: browsers keep other origins' pages out), or a
// comma list of origins as browsers send them ("http://localhost:3000,https://chat.example").
// The error names the entry at fault.
Result<std::vector<std::string>> parse_cors_origins(std::string_view list);

// The Access-Control-Allow-Origin value for a request's Origin header: "*" when any origin may
// call, the origin itself when it is listed (compared without regard to case), "" when the
// request has no Origin or it may not call.
std::string cors_allow_origin(const std::vector<std::string>& allowed, std::string_view origin);

}  // namespace lazyllm::server
