#pragma once

#include "avatar_bridge/Vec3.hpp"

namespace avatar_bridge {

// Unit quaternion, components (x, y, z, w) as on the wire; Hamilton product, v' = q v q*.
struct Quat {
    float x = 0.0f;
    float y = 0.0f;
    float z = 0.0f;
    float w = 1.0f;

    static Quat identity() { return {}; }
    // Rotation of `angle` radians about `axis` (normalised here), right-hand rule in the frame's own math.
    static Quat fromAxisAngle(const Vec3& axis, float angle);
    // Shortest-path spherical interpolation; falls back to normalised lerp when a and b nearly coincide.
    static Quat slerp(const Quat& a, const Quat& b, float t);

    Quat operator*(const Quat& o) const;
    float dot(const Quat& o) const { return x * o.x + y * o.y + z * o.z + w * o.w; }
    // Zero or non-finite input becomes the identity, so a bad frame never poisons a pose.
    Quat normalized() const;
    Vec3 rotate(const Vec3& v) const;
};

}  // namespace avatar_bridge
