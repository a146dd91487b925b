#include "avatar_bridge/UnrealAxes.hpp"

#include <algorithm>
#include <cmath>

namespace avatar_bridge {

UnrealAxes::Rotator UnrealAxes::rotator(const Quat& q) {
    // FRotator uses a left-handed sense for pitch and roll: FRotator(P, Y, R) is the quaternion
    // Rz(Y) * Ry(-P) * Rx(-R) in the usual formula. Inverting that product gives these three lines.
    const float singularity = q.z * q.x - q.w * q.y;
    Rotator r;
    r.pitch = std::asin(std::clamp(2.0f * singularity, -1.0f, 1.0f));
    r.yaw = std::atan2(2.0f * (q.w * q.z + q.x * q.y), 1.0f - 2.0f * (q.y * q.y + q.z * q.z));
    r.roll = std::atan2(-2.0f * (q.w * q.x + q.y * q.z), 1.0f - 2.0f * (q.x * q.x + q.y * q.y));
    return r;
}

}  // namespace avatar_bridge
