#include "avatar_bridge/SceneTime.hpp"

#include <cmath>

namespace avatar_bridge {

SceneTime sceneTimeOf(std::int64_t wallNs, double fps) noexcept {
    SceneTime t;
    if (std::isfinite(fps) && fps >= 1.0 && fps <= 1000.0) {
        const double whole = std::round(fps);
        const double ntsc = std::round(fps * 1001.0 / 1000.0);
        if (std::fabs(fps - whole) < 1e-3) {
            t.rateNumerator = static_cast<std::int32_t>(whole);
        } else if (std::fabs(fps - ntsc * 1000.0 / 1001.0) < 1e-3) {
            t.rateNumerator = static_cast<std::int32_t>(ntsc * 1000.0);
            t.rateDenominator = 1001;
        } else {
            t.rateNumerator = static_cast<std::int32_t>(std::round(fps * 1000.0));
            t.rateDenominator = 1000;
        }
    }
    constexpr std::int64_t kDayNs = 86400LL * 1000000000LL;
    std::int64_t ofDay = wallNs % kDayNs;
    if (ofDay < 0) {
        ofDay += kDayNs;
    }
    // Frames = ns * num / (den * 1e9), split so the product never overflows: ofDay < 8.64e13 and num <= 1e6.
    const std::int64_t seconds = ofDay / 1000000000LL;
    const std::int64_t restNs = ofDay % 1000000000LL;
    const double frames = (static_cast<double>(seconds) + static_cast<double>(restNs) * 1e-9) * t.rateNumerator / t.rateDenominator;
    const double frame = std::floor(frames);
    t.frame = static_cast<std::int32_t>(frame);
    t.subFrame = static_cast<float>(frames - frame);
    if (t.subFrame >= 1.0f) {  // float rounding just below a whole frame
        t.subFrame = 0.0f;
        ++t.frame;
    }
    return t;
}

}  // namespace avatar_bridge
