#pragma once

#include <optional>
#include <string>
#include <utility>

#include "avatar_bridge/ErrorCode.hpp"

namespace avatar_bridge {

// A message from the bridge broke the contract; `code` classifies it like the bridge's own errors.
// The core is built without exceptions (as Unreal compiles its modules), so this is a value, not a throwable.
struct ProtocolError {
    ErrorCode code = ErrorCode::Malformed;
    std::string message;

    const char* what() const noexcept { return message.c_str(); }
};

// A decoded value, or the ProtocolError that stopped the decoding.
template <class T>
class Result {
public:
    Result(T value) : value_(std::move(value)) {}                // NOLINT(google-explicit-constructor)
    Result(ProtocolError error) : error_(std::move(error)) {}    // NOLINT(google-explicit-constructor)

    bool ok() const noexcept { return value_.has_value(); }
    explicit operator bool() const noexcept { return ok(); }

    // Only when ok().
    T& value() & { return *value_; }
    const T& value() const& { return *value_; }
    T&& value() && { return std::move(*value_); }
    T* operator->() { return &*value_; }
    const T* operator->() const { return &*value_; }

    // Only when !ok().
    const ProtocolError& error() const noexcept { return error_; }

private:
    std::optional<T> value_;
    ProtocolError error_;
};

}  // namespace avatar_bridge
