#include "avatar_bridge/FrameClock.hpp"

#include <algorithm>
#include <cmath>

namespace avatar_bridge {

FrameClock::FrameClock(double fps)
    : periodNs_(static_cast<std::int64_t>(std::llround(1e9 / std::max(fps, 1.0)))) {}

std::int64_t FrameClock::stamp(std::int64_t tCaptureNs) {
    last_ = (!started_ || tCaptureNs > last_) ? tCaptureNs : last_ + periodNs_;
    started_ = true;
    return last_;
}

}  // namespace avatar_bridge
