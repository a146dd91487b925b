#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include "avatar_bridge/SubjectPose.hpp"

namespace avatar_bridge {

// A small playout buffer: frames arrive with network and engine jitter, the render tick samples a smooth
// pose. Playback aims `delayNs()` behind the wall clock; the delay adapts like a VoIP playout buffer
// (and TCP's RTO): mean transit (arrival - sample time) plus max(deviationGain * mean deviation,
// minDelayFrames * period), so the frame after the playout point has usually arrived.
// The playout clock never runs backwards: when the target moves, playback runs up to maxRateChange
// faster or slower than real time until it is back on target (a jump forward only when it is more than
// resyncFrames behind, e.g. after a stall). Rotations are slerped, translations and curves lerped.
// Before the first frame's time it holds the first frame; past the newest it holds the newest (no
// extrapolation). Not thread-safe: the render thread owns it and feeds it from a PoseMailbox.
class JitterBuffer {
public:
    struct Config {
        std::size_t capacity = 32;    // frames kept; the oldest are dropped first
        double minDelayFrames = 1.0;  // lower bound on the margin, in output periods
        double deviationGain = 4.0;
        double smoothing = 1.0 / 16.0;  // EWMA gain of the transit estimates
        double maxRateChange = 0.1;     // playout speed stays within 1 +- this while it re-targets
        double resyncFrames = 15.0;     // further behind than this many periods: jump to the target
    };

    explicit JitterBuffer(std::int64_t periodNs);
    JitterBuffer(std::int64_t periodNs, Config config);

    // `pose.timeNs` is its sample time (FrameClock); `arrivalNs` when it was received, same clock.
    void push(SubjectPose pose, std::int64_t arrivalNs);
    // The pose at the playout time for nowNs (about nowNs - delayNs()), or nothing before the first push.
    std::optional<SubjectPose> sample(std::int64_t nowNs);
    std::int64_t delayNs() const;
    std::size_t size() const { return frames_.size(); }

    // Interpolates a -> b at t in [0, 1]; b alone when their layouts differ.
    static SubjectPose interpolate(const SubjectPose& a, const SubjectPose& b, float t);

private:
    std::int64_t playoutTime(std::int64_t nowNs);

    std::int64_t periodNs_;
    Config config_;
    std::deque<SubjectPose> frames_;  // ordered by timeNs
    double meanTransitNs_ = 0.0;
    double deviationNs_ = 0.0;
    bool haveTransit_ = false;
    std::optional<std::int64_t> playoutNs_;  // last playout time, and the nowNs it was computed for
    std::int64_t playoutAtNs_ = 0;
};

}  // namespace avatar_bridge
