#pragma once

#include <chrono>

namespace avatar_bridge {

// Milliseconds left until `deadline`, never negative: what the socket waits take.
inline int remainingMs(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    return left > 0 ? static_cast<int>(left) : 0;
}

}  // namespace avatar_bridge
