#pragma once

#include "avatar_bridge/Quat.hpp"
#include "avatar_bridge/Vec3.hpp"

namespace avatar_bridge {

// The one place where the wire convention (right-handed, +Y up, +Z forward, +X = avatar's left, metres)
// becomes Unreal's (left-handed, +X forward, +Y right, +Z up, centimetres); docs/protocol.md §3.
//
// The change of basis is M: (x, y, z) -> (z, -x, y), det(M) = -1. A rotation R becomes M R M^-1; for a
// quaternion that keeps w and maps the vector part to -M v (the minus because a reflection flips the sense
// of rotation), so (x, y, z, w) -> (-z, x, -y, w).
class UnrealAxes {
public:
    static constexpr float kCentimetresPerMetre = 100.0f;

    // A wire position or offset in metres -> Unreal centimetres.
    static Vec3 position(const Vec3& wire) {
        return Vec3{wire.z, -wire.x, wire.y} * kCentimetresPerMetre;
    }
    // A wire direction (no unit change), for tests and debug drawing.
    static Vec3 direction(const Vec3& wire) { return {wire.z, -wire.x, wire.y}; }
    static Quat rotation(const Quat& wire) { return {-wire.z, wire.x, -wire.y, wire.w}; }
    // An Unreal-space rotation seen in a mirror across the XZ plane (Y, the avatar's right, flips), for the
    // mirrored face and body subjects: a reflection turns the axis a into -M a, so (x, y, z, w) -> (-x, y, -z, w).
    static Quat mirrored(const Quat& unreal) { return {-unreal.x, unreal.y, -unreal.z, unreal.w}; }

    // Unreal FRotator angles of an Unreal-space quaternion, in radians, with FRotator's signs:
    // +yaw turns +X towards +Y (to the right, seen from above), +pitch raises the nose (+X towards +Z),
    // +roll turns +Y towards -Z (the right side dips: clockwise seen from behind). Same formula as
    // FQuat::Rotator(), without its special case at the +-90 degree pitch singularity.
    struct Rotator {
        float pitch = 0.0f;
        float yaw = 0.0f;
        float roll = 0.0f;
    };
    static Rotator rotator(const Quat& unreal);
};

}  // namespace avatar_bridge
