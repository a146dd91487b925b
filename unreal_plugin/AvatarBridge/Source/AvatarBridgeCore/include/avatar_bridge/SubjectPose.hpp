#pragma once

#include <cstdint>
#include <vector>

#include "avatar_bridge/Quat.hpp"
#include "avatar_bridge/Vec3.hpp"

namespace avatar_bridge {

// One frame of a subject, already in Unreal space (left-handed, Z up, cm): per-bone parent-relative
// rotation and translation in SubjectLayout::boneNames order, and curve values in curveNames order.
struct SubjectPose {
    std::int64_t timeNs = 0;  // sample time, wall clock ns (FrameClock, then JitterBuffer's playout time)
    std::uint64_t seq = 0;    // the bridge's frame seq (the earlier one when interpolated)
    std::vector<Quat> rotations;
    std::vector<Vec3> translations;
    std::vector<float> curves;
};

}  // namespace avatar_bridge
