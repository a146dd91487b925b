#pragma once

#include <stdexcept>
#include <string>

#include "avatar_bridge/ErrorCode.hpp"

namespace avatar_bridge {

// A message from the bridge broke the contract; `code` classifies it like the bridge's own errors.
class ProtocolError : public std::runtime_error {
public:
    ProtocolError(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}

    ErrorCode code() const { return code_; }

private:
    ErrorCode code_;
};

}  // namespace avatar_bridge
