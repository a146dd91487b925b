#pragma once

#include <chrono>
#include <cstdint>

namespace avatar_bridge {

// Nanoseconds since the Unix epoch on the wall clock: the protocol's time base (docs/protocol.md §2),
// so `nowNs() - t_capture_ns` is end-to-end latency on one machine.
struct WallClock {
    static std::int64_t nowNs() {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
    }
};

}  // namespace avatar_bridge
