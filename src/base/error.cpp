#include "lazyllm/result.h"

namespace lazyllm {

const char* error_code_name(ErrorCode code) {
    switch (code) {
        case ErrorCode::kInvalidArgument: return "invalid argument";
        case ErrorCode::kNotFound: return "not found";
        case ErrorCode::kIo: return "i/o error";
        case ErrorCode::kCorrupt: return "corrupt input";
        case ErrorCode::kUnsupported: return "unsupported";
        case ErrorCode::kOutOfRange: return "out of range";
        case ErrorCode::kInternal: return "internal error";
    }
    return "unknown error";
}

}  // namespace lazyllm
