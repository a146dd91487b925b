#pragma once

#include <cstdint>

namespace avatar_bridge {

// Gives each frame of a session a strictly increasing sample time on the wall clock.
// Frames carry their input's t_capture_ns; one `features` input of N rows yields N frames with the same
// capture time, so a frame whose capture time does not advance is placed one output period after the
// previous frame instead. Real-time inputs (one image or one 1/fps audio chunk per frame) keep their
// capture times exactly.
class FrameClock {
public:
    explicit FrameClock(double fps);

    std::int64_t stamp(std::int64_t tCaptureNs);
    std::int64_t periodNs() const { return periodNs_; }

private:
    std::int64_t periodNs_;
    std::int64_t last_ = 0;
    bool started_ = false;
};

}  // namespace avatar_bridge
