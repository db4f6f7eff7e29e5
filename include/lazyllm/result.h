// Error and Result<T>: the error path of every load, parse and request in lazyllm.
// Errors carry a message that names the thing at fault (file, key, tensor, offset, flag).
#pragma once

#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace lazyllm {

enum class ErrorCode {
    kInvalidArgument,  // bad flag, bad request, bad schedule
    kNotFound,         // missing file, key or tensor
    kIo,               // read / mmap / write failure
    kCorrupt,          // malformed or hostile file contents
    kUnsupported,      // valid but not handled (unknown architecture or tensor type)
    kOutOfRange,       // prompt over the context, value outside its range
    kInternal,
};

const char* error_code_name(ErrorCode code);

class Error {
public:
    Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
    ErrorCode code() const { return code_; }
    const std::string& message() const { return message_; }
    // Adds outer context: "loading model.gguf: tensor 'x': ..."
    Error with_context(const std::string& context) const {
        return Error(code_, context + ": " + message_);
    }

private:
    ErrorCode code_;
    std::string message_;
};

template <typename... Args>
Error make_error(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
    return Error(code, fmt::format(f, std::forward<Args>(args)...));
}

template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
    Result(Error error) : v_(std::move(error)) {}  // NOLINT

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }
    // The value; on an error (check ok() first) std::bad_variant_access is thrown.
    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }  // auto p = *Engine::load(...)
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    const Error& error() const { return std::get<1>(v_); }

private:
    std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : err_(std::move(error)), has_err_(true) {}  // NOLINT
    bool ok() const { return !has_err_; }
    explicit operator bool() const { return ok(); }
    const Error& error() const { return err_; }

private:
    Error err_{ErrorCode::kInternal, ""};
    bool has_err_ = false;
};

using Status = Result<void>;

}  // namespace lazyllm

// Propagates an error from an expression returning Result<...>.
#define LAZYLLM_TRY(expr)                                   \
    do {                                                    \
        auto lazyllm_try_r_ = (expr);                       \
        if (!lazyllm_try_r_.ok()) return lazyllm_try_r_.error(); \
    } while (0)

#define LAZYLLM_CONCAT_INNER(a, b) a##b
#define LAZYLLM_CONCAT(a, b) LAZYLLM_CONCAT_INNER(a, b)
// LAZYLLM_ASSIGN_OR_RETURN(auto x, f()); binds the value or returns the error.
#define LAZYLLM_ASSIGN_OR_RETURN(lhs, expr) \
    LAZYLLM_ASSIGN_OR_RETURN_IMPL(LAZYLLM_CONCAT(lazyllm_r_, __LINE__), lhs, expr)
#define LAZYLLM_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
    auto tmp = (expr);                                \
    if (!tmp.ok()) return tmp.error();                \
    lhs = std::move(tmp).value()
