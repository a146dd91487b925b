#include "avatar_bridge/Quat.hpp"

#include <cmath>

namespace avatar_bridge {

Quat Quat::fromAxisAngle(const Vec3& axis, float angle) {
    const float len = std::sqrt(axis.x * axis.x + axis.y * axis.y + axis.z * axis.z);
    if (len <= 0.0f) {
        return identity();
    }
    const float s = std::sin(0.5f * angle) / len;
    return {axis.x * s, axis.y * s, axis.z * s, std::cos(0.5f * angle)};
}

Quat Quat::operator*(const Quat& o) const {
    return {
        w * o.x + x * o.w + y * o.z - z * o.y,
        w * o.y - x * o.z + y * o.w + z * o.x,
        w * o.z + x * o.y - y * o.x + z * o.w,
        w * o.w - x * o.x - y * o.y - z * o.z,
    };
}

Quat Quat::normalized() const {
    const float n = std::sqrt(dot(*this));
    if (!(n > 1e-12f) || !std::isfinite(n)) {
        return identity();
    }
    return {x / n, y / n, z / n, w / n};
}

Vec3 Quat::rotate(const Vec3& v) const {
    // v' = v + 2w(u x v) + 2 u x (u x v), u = vector part: the expanded form of q v q*.
    const Vec3 u{x, y, z};
    const Vec3 t{2.0f * (u.y * v.z - u.z * v.y), 2.0f * (u.z * v.x - u.x * v.z), 2.0f * (u.x * v.y - u.y * v.x)};
    const Vec3 ut{u.y * t.z - u.z * t.y, u.z * t.x - u.x * t.z, u.x * t.y - u.y * t.x};
    return v + t * w + ut;
}

Quat Quat::slerp(const Quat& a, const Quat& b, float t) {
    // q and -q are the same rotation; flip b so we take the short way round.
    float cosTheta = a.dot(b);
    Quat bb = b;
    if (cosTheta < 0.0f) {
        bb = {-b.x, -b.y, -b.z, -b.w};
        cosTheta = -cosTheta;
    }
    float wa = 1.0f - t;
    float wb = t;
    if (cosTheta < 0.9995f) {
        const float theta = std::acos(cosTheta);
        const float sinTheta = std::sin(theta);
        wa = std::sin((1.0f - t) * theta) / sinTheta;
        wb = std::sin(t * theta) / sinTheta;
    }
    return Quat{wa * a.x + wb * bb.x, wa * a.y + wb * bb.y, wa * a.z + wb * bb.z, wa * a.w + wb * bb.w}.normalized();
}

}  // namespace avatar_bridge
