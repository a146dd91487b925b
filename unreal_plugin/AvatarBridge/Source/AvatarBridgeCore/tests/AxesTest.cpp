#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "avatar_bridge/Quat.hpp"
#include "avatar_bridge/UnrealAxes.hpp"

using namespace avatar_bridge;

namespace {

constexpr float kHalfPi = 1.57079632679f;
const float kS = std::sqrt(0.5f);  // sin 45 = cos 45: the components of any 90 degree rotation

void expectQuat(const Quat& q, float x, float y, float z, float w) {
    EXPECT_NEAR(q.x, x, 1e-6f);
    EXPECT_NEAR(q.y, y, 1e-6f);
    EXPECT_NEAR(q.z, z, 1e-6f);
    EXPECT_NEAR(q.w, w, 1e-6f);
}

void expectVec(const Vec3& v, float x, float y, float z, float tol = 1e-5f) {
    EXPECT_NEAR(v.x, x, tol);
    EXPECT_NEAR(v.y, y, tol);
    EXPECT_NEAR(v.z, z, tol);
}

}  // namespace

// Wire: right-handed, +X = avatar's left, +Y up, +Z forward. Unreal: left-handed, +X forward, +Y right, +Z up.

TEST(UnrealAxes, PositionsMapToForwardRightUpInCentimetres) {
    expectVec(UnrealAxes::position({0.0f, 0.0f, 1.0f}), 100.0f, 0.0f, 0.0f);   // 1 m forward -> +X 100 cm
    expectVec(UnrealAxes::position({1.0f, 0.0f, 0.0f}), 0.0f, -100.0f, 0.0f);  // 1 m to the left -> -Y (Y is right)
    expectVec(UnrealAxes::position({0.0f, 1.0f, 0.0f}), 0.0f, 0.0f, 100.0f);   // 1 m up -> +Z 100 cm
    expectVec(UnrealAxes::position({0.1f, -0.2f, 0.3f}), 30.0f, -10.0f, -20.0f);
}

TEST(UnrealAxes, HandednessFlips) {
    // Right-handed on the wire: X x Y = Z. After the change of basis the same cross product gives -Z',
    // which is what det(M) = -1 means: Unreal's frame is left-handed.
    const Vec3 x = UnrealAxes::direction({1, 0, 0});  // (0, -1, 0)
    const Vec3 y = UnrealAxes::direction({0, 1, 0});  // (0, 0, 1)
    const Vec3 z = UnrealAxes::direction({0, 0, 1});  // (1, 0, 0)
    const Vec3 cross{x.y * y.z - x.z * y.y, x.z * y.x - x.x * y.z, x.x * y.y - x.y * y.x};
    expectVec(cross, -z.x, -z.y, -z.z);
}

TEST(UnrealAxes, PlusNinetyAboutWireUpIsANegativeYawTurningLeft) {
    // +90 degrees about wire +Y (right-hand rule) turns forward (+Z) to the avatar's left (+X): the avatar
    // turns to its left. In Unreal, left of forward (+X) is -Y, and FRotator's +yaw turns +X towards +Y
    // (to the right), so turning left is yaw = -90 degrees: the quaternion about Unreal +Z by -90 degrees,
    // (0, 0, -sin 45, cos 45). The formula (x, y, z, w) -> (-z, x, -y, w) gives exactly that.
    const Quat wire = Quat::fromAxisAngle({0, 1, 0}, kHalfPi);
    expectQuat(wire, 0.0f, kS, 0.0f, kS);
    const Quat ue = UnrealAxes::rotation(wire);
    expectQuat(ue, 0.0f, 0.0f, -kS, kS);
    const auto r = UnrealAxes::rotator(ue);
    EXPECT_NEAR(r.yaw, -kHalfPi, 1e-5f);
    EXPECT_NEAR(r.pitch, 0.0f, 1e-5f);
    EXPECT_NEAR(r.roll, 0.0f, 1e-5f);
    expectVec(ue.rotate({1, 0, 0}), 0.0f, -1.0f, 0.0f);  // forward -> left
}

TEST(UnrealAxes, PlusNinetyAboutWireLeftIsNoseDownPitch) {
    // +90 degrees about wire +X (the avatar's left) maps forward (+Z) to down (-Y): a bow, nose down.
    // FRotator's +pitch raises the nose, so this is pitch = -90 degrees. Quaternion: (0, sin 45, 0, cos 45)
    // about Unreal +Y, which in the usual formula turns +X towards -Z (down).
    const Quat ue = UnrealAxes::rotation(Quat::fromAxisAngle({1, 0, 0}, kHalfPi));
    expectQuat(ue, 0.0f, kS, 0.0f, kS);
    EXPECT_NEAR(UnrealAxes::rotator(ue).pitch, -kHalfPi, 1e-3f);
    expectVec(ue.rotate({1, 0, 0}), 0.0f, 0.0f, -1.0f);
}

TEST(UnrealAxes, PlusNinetyAboutWireForwardIsPositiveRollRightSideDown) {
    // +90 degrees about wire +Z (forward) maps up (+Y) to -X, the avatar's right: the head tips over to
    // its right shoulder, the right side dips. FRotator's +roll is exactly
    // that (turns +Y towards -Z), so roll = +90 degrees. Quaternion: (-sin 45, 0, 0, cos 45).
    const Quat ue = UnrealAxes::rotation(Quat::fromAxisAngle({0, 0, 1}, kHalfPi));
    expectQuat(ue, -kS, 0.0f, 0.0f, kS);
    const auto r = UnrealAxes::rotator(ue);
    EXPECT_NEAR(r.roll, kHalfPi, 1e-5f);
    EXPECT_NEAR(r.yaw, 0.0f, 1e-5f);
    expectVec(ue.rotate({0, 0, 1}), 0.0f, 1.0f, 0.0f);  // up -> right
}

TEST(UnrealAxes, ConversionCommutesWithRotation) {
    // For any rotation q and vector v: convert(q applied to v) == convert(q) applied to convert(v).
    // This is the defining property of the change of basis, checked on random samples.
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int i = 0; i < 200; ++i) {
        const Quat q = Quat{u(rng), u(rng), u(rng), u(rng)}.normalized();
        const Vec3 v{u(rng), u(rng), u(rng)};
        const Vec3 expected = UnrealAxes::direction(q.rotate(v));
        const Vec3 actual = UnrealAxes::rotation(q).rotate(UnrealAxes::direction(v));
        expectVec(actual, expected.x, expected.y, expected.z, 1e-5f);
    }
}

TEST(UnrealAxes, RotatorOfCombinedAngles) {
    // FRotator(P, Y, R) = Rz(Y) * Ry(-P) * Rx(-R) in the usual quaternion formula (Unreal's pitch and roll
    // run left-handed). Build one and read the angles back.
    const float pitch = 0.3f, yaw = -0.7f, roll = 0.2f;
    const Quat q = Quat::fromAxisAngle({0, 0, 1}, yaw) * Quat::fromAxisAngle({0, 1, 0}, -pitch) *
                   Quat::fromAxisAngle({1, 0, 0}, -roll);
    const auto r = UnrealAxes::rotator(q);
    EXPECT_NEAR(r.pitch, pitch, 1e-5f);
    EXPECT_NEAR(r.yaw, yaw, 1e-5f);
    EXPECT_NEAR(r.roll, roll, 1e-5f);
}
