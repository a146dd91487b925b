#include "avatar_bridge/JitterBuffer.hpp"

#include <algorithm>
#include <cmath>

namespace avatar_bridge {

JitterBuffer::JitterBuffer(std::int64_t periodNs) : JitterBuffer(periodNs, Config{}) {}

JitterBuffer::JitterBuffer(std::int64_t periodNs, Config config) : periodNs_(periodNs), config_(config) {}

void JitterBuffer::push(SubjectPose pose, std::int64_t arrivalNs) {
    const double transit = static_cast<double>(arrivalNs - pose.timeNs);
    if (!haveTransit_) {
        meanTransitNs_ = transit;
        haveTransit_ = true;
    } else {
        deviationNs_ += config_.smoothing * (std::abs(transit - meanTransitNs_) - deviationNs_);
        meanTransitNs_ += config_.smoothing * (transit - meanTransitNs_);
    }
    // Frames normally arrive in order; a late one is still placed by time so interpolation stays monotonic.
    const auto at = std::upper_bound(frames_.begin(), frames_.end(), pose.timeNs,
                                     [](std::int64_t t, const SubjectPose& p) { return t < p.timeNs; });
    frames_.insert(at, std::move(pose));
    while (frames_.size() > config_.capacity) {
        frames_.pop_front();
    }
}

std::int64_t JitterBuffer::delayNs() const {
    const double margin = std::max(config_.deviationGain * deviationNs_, config_.minDelayFrames * periodNs_);
    return static_cast<std::int64_t>(std::llround(meanTransitNs_ + margin));
}

std::optional<SubjectPose> JitterBuffer::sample(std::int64_t nowNs) {
    if (frames_.empty()) {
        return std::nullopt;
    }
    const std::int64_t t = playoutTime(nowNs);
    const auto next = std::upper_bound(frames_.begin(), frames_.end(), t,
                                       [](std::int64_t time, const SubjectPose& p) { return time < p.timeNs; });
    SubjectPose out;
    if (next == frames_.begin()) {
        out = frames_.front();
    } else if (next == frames_.end()) {
        out = frames_.back();
        // Keep only the newest: everything older is behind the playout point for good.
        frames_.erase(frames_.begin(), frames_.end() - 1);
    } else {
        const SubjectPose& a = *(next - 1);
        const SubjectPose& b = *next;
        const double span = static_cast<double>(b.timeNs - a.timeNs);
        out = interpolate(a, b, static_cast<float>(static_cast<double>(t - a.timeNs) / span));
        frames_.erase(frames_.begin(), next - 1);
    }
    out.timeNs = t;
    return out;
}

std::int64_t JitterBuffer::playoutTime(std::int64_t nowNs) {
    const std::int64_t target = nowNs - delayNs();
    if (!playoutNs_) {
        playoutNs_ = target;
    } else {
        const double elapsed = static_cast<double>(std::max<std::int64_t>(nowNs - playoutAtNs_, 0));
        const double free = static_cast<double>(*playoutNs_) + elapsed;  // running at real-time speed
        const double error = static_cast<double>(target) - free;
        if (error > config_.resyncFrames * static_cast<double>(periodNs_)) {
            playoutNs_ = target;
        } else {
            const double step = config_.maxRateChange * elapsed;
            playoutNs_ = static_cast<std::int64_t>(std::llround(free + std::clamp(error, -step, step)));
        }
    }
    playoutAtNs_ = nowNs;
    return *playoutNs_;
}

SubjectPose JitterBuffer::interpolate(const SubjectPose& a, const SubjectPose& b, float t) {
    if (a.rotations.size() != b.rotations.size() || a.translations.size() != b.translations.size() ||
        a.curves.size() != b.curves.size()) {
        return b;
    }
    SubjectPose out;
    out.timeNs = a.timeNs + static_cast<std::int64_t>(std::llround(t * static_cast<double>(b.timeNs - a.timeNs)));
    out.seq = a.seq;
    out.rotations.reserve(a.rotations.size());
    for (std::size_t i = 0; i < a.rotations.size(); ++i) {
        out.rotations.push_back(Quat::slerp(a.rotations[i], b.rotations[i], t));
    }
    out.translations.reserve(a.translations.size());
    for (std::size_t i = 0; i < a.translations.size(); ++i) {
        out.translations.push_back(Vec3::lerp(a.translations[i], b.translations[i], t));
    }
    out.curves.reserve(a.curves.size());
    for (std::size_t i = 0; i < a.curves.size(); ++i) {
        out.curves.push_back(a.curves[i] + (b.curves[i] - a.curves[i]) * t);
    }
    return out;
}

}  // namespace avatar_bridge
