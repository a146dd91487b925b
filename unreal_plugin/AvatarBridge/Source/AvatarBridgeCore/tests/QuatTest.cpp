#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "avatar_bridge/Quat.hpp"

using namespace avatar_bridge;

TEST(Quat, AxisAngleRotatesByTheRightHandRule) {
    const Quat q = Quat::fromAxisAngle({0, 0, 2}, 1.57079632679f);  // axis is normalised
    const Vec3 v = q.rotate({1, 0, 0});
    EXPECT_NEAR(v.x, 0.0f, 1e-6f);
    EXPECT_NEAR(v.y, 1.0f, 1e-6f);
    EXPECT_NEAR(v.z, 0.0f, 1e-6f);
}

TEST(Quat, ProductAppliesTheRightOperandFirst) {
    const Quat a = Quat::fromAxisAngle({0, 0, 1}, 1.57079632679f);
    const Quat b = Quat::fromAxisAngle({1, 0, 0}, 1.57079632679f);
    const Vec3 viaProduct = (a * b).rotate({0, 1, 0});
    const Vec3 stepwise = a.rotate(b.rotate({0, 1, 0}));
    EXPECT_NEAR(viaProduct.x, stepwise.x, 1e-6f);
    EXPECT_NEAR(viaProduct.y, stepwise.y, 1e-6f);
    EXPECT_NEAR(viaProduct.z, stepwise.z, 1e-6f);
}

TEST(Quat, SlerpHalfwayHalvesTheAngle) {
    const Quat a = Quat::identity();
    const Quat b = Quat::fromAxisAngle({0, 1, 0}, 1.2f);
    const Quat mid = Quat::slerp(a, b, 0.5f);
    const Quat expected = Quat::fromAxisAngle({0, 1, 0}, 0.6f);
    EXPECT_NEAR(mid.y, expected.y, 1e-6f);
    EXPECT_NEAR(mid.w, expected.w, 1e-6f);
    EXPECT_NEAR(Quat::slerp(a, b, 0.0f).w, 1.0f, 1e-6f);
    EXPECT_NEAR(Quat::slerp(a, b, 1.0f).y, b.y, 1e-6f);
}

TEST(Quat, SlerpTakesTheShortWay) {
    // -b is the same rotation as b; interpolating towards it must not swing through 360 - angle.
    const Quat b = Quat::fromAxisAngle({0, 1, 0}, 0.4f);
    const Quat negB{-b.x, -b.y, -b.z, -b.w};
    const Quat mid = Quat::slerp(Quat::identity(), negB, 0.5f);
    const Vec3 v = mid.rotate({0, 0, 1});
    EXPECT_NEAR(std::atan2(v.x, v.z), 0.2f, 1e-5f);
}

TEST(Quat, NormalizeGuardsAgainstBadInput) {
    const Quat zero{0, 0, 0, 0};
    EXPECT_EQ(zero.normalized().w, 1.0f);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ((Quat{nan, 0, 0, 1}).normalized().w, 1.0f);
    const Quat q = Quat{0, 0, 3, 4}.normalized();
    EXPECT_FLOAT_EQ(q.z, 0.6f);
    EXPECT_FLOAT_EQ(q.w, 0.8f);
}
