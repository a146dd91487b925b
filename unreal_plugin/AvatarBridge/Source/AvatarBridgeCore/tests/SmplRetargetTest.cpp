// The retarget maths on known rotations: a target skeleton with other names, other rest axes and a bone
// SMPL lacks must end up with each driven bone turned, in component space, exactly as its SMPL joint.
#include <gtest/gtest.h>

#include <cmath>

#include "avatar_bridge/SmplRetarget.hpp"

using namespace avatar_bridge;

namespace {

constexpr float kHalfPi = 1.57079632679f;

// SMPL's chain pelvis(0) -> spine1(3) -> ... reduced to what the tests need: the real 24 parents.
std::vector<int> smplParents() { return {-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21}; }

void expectSameRotation(const Quat& a, const Quat& b, const char* what) {
    EXPECT_NEAR(std::fabs(a.dot(b)), 1.0f, 1e-5f) << what;  // q and -q are one rotation
}

Quat worldOf(const SmplRetarget& r, const std::vector<Quat>& local, std::size_t bone) {
    Quat w = local[bone];
    for (int p = r.bones()[bone].parent; p >= 0; p = r.bones()[static_cast<std::size_t>(p)].parent) {
        w = local[static_cast<std::size_t>(p)] * w;
    }
    return w;
}

// pelvis, spine_01 (spine1), spine_02 (no SMPL joint), spine_03 (spine2), upperarm_l (left_shoulder),
// lowerarm_l (left_elbow); rest axes deliberately not identity, as on Manny.
SmplRetarget target() {
    const Quat tilt = Quat::fromAxisAngle({0, 1, 0}, 0.3f);
    const Quat roll = Quat::fromAxisAngle({1, 0, 0}, -0.7f);
    return SmplRetarget(smplParents(), {
        {"pelvis", -1, Quat::fromAxisAngle({0, 0, 1}, kHalfPi), 0},
        {"spine_01", 0, tilt, 3},
        {"spine_02", 1, tilt, -1},
        {"spine_03", 2, tilt, 6},
        {"upperarm_l", 3, roll, 16},
        {"lowerarm_l", 4, Quat::fromAxisAngle({0, 0, 1}, 0.2f), 18},
    });
}

}  // namespace

TEST(SmplRetarget, TPoseGivesTheTargetsRestPose) {
    const SmplRetarget r = target();
    const std::vector<Quat> local = r.solve(std::vector<Quat>(24));
    for (std::size_t b = 0; b < local.size(); ++b) {
        expectSameRotation(local[b], r.bones()[b].restLocal, r.bones()[b].name.c_str());
    }
}

TEST(SmplRetarget, DrivenBonesTurnInComponentSpaceLikeTheirJoints) {
    const SmplRetarget r = target();
    std::vector<Quat> smpl(24);
    smpl[0] = Quat::fromAxisAngle({0, 0, 1}, -kHalfPi);  // pelvis yaws 90 degrees
    smpl[6] = Quat::fromAxisAngle({1, 0, 0}, 0.4f);      // spine2 bends
    smpl[18] = Quat::fromAxisAngle({0, 0, 1}, 1.2f);     // left elbow bends
    const std::vector<Quat> local = r.solve(smpl);

    // G for each joint, by hand, through the SMPL parents (spine1 and left_collar/shoulder stay at rest).
    const Quat g0 = smpl[0];
    const Quat g6 = g0 * smpl[6];           // spine2 <- spine1 <- pelvis
    const Quat g18 = g6 * smpl[18];         // left_elbow <- left_shoulder <- left_collar <- spine3 <- spine2
    std::vector<Quat> restWorld(r.bones().size());
    for (std::size_t b = 0; b < restWorld.size(); ++b) {
        const int p = r.bones()[b].parent;
        restWorld[b] = (p >= 0 ? restWorld[static_cast<std::size_t>(p)] : Quat::identity()) * r.bones()[b].restLocal;
    }
    expectSameRotation(worldOf(r, local, 0), g0 * restWorld[0], "pelvis");
    expectSameRotation(worldOf(r, local, 1), g0 * restWorld[1], "spine_01 follows the pelvis (spine1 at rest)");
    expectSameRotation(worldOf(r, local, 2), g0 * restWorld[2], "spine_02: undriven, follows its parent");
    expectSameRotation(worldOf(r, local, 3), g6 * restWorld[3], "spine_03");
    expectSameRotation(worldOf(r, local, 4), g6 * restWorld[4], "upperarm_l");
    expectSameRotation(worldOf(r, local, 5), g18 * restWorld[5], "lowerarm_l");
    // The elbow's own bend shows as a local rotation of exactly 1.2 rad on the forearm bone.
    const Quat bend = inverse(r.bones()[5].restLocal) * local[5];
    EXPECT_NEAR(2.0f * std::acos(std::fmin(1.0f, std::fabs(bend.w))), 1.2f, 1e-4f);
}

TEST(SmplRetarget, SameSkeletonWithIdentityRestIsTheSmplPose) {
    std::vector<SmplRetarget::Bone> bones;
    const auto parents = smplParents();
    for (int j = 0; j < 24; ++j) {
        bones.push_back({std::string(SmplRetarget::mannyNames()[static_cast<std::size_t>(j)]), parents[static_cast<std::size_t>(j)], Quat::identity(), j});
    }
    const SmplRetarget r(parents, bones);
    std::vector<Quat> smpl(24);
    for (int j = 0; j < 24; ++j) {
        smpl[static_cast<std::size_t>(j)] = Quat::fromAxisAngle({0.3f, 1.0f, -0.2f}, 0.05f * static_cast<float>(j));
    }
    const auto local = r.solve(smpl);
    for (std::size_t j = 0; j < 24; ++j) {
        expectSameRotation(local[j], smpl[j], bones[j].name.c_str());
    }
}

TEST(SmplRetarget, BadReferencesAndShortInputAreSafe) {
    const SmplRetarget r(smplParents(), {{"a", 5, Quat::identity(), 99}, {"b", 0, Quat{0, 0, 0, 0}, 1}});
    EXPECT_EQ(r.bones()[0].parent, -1);
    EXPECT_EQ(r.bones()[0].smplJoint, -1);
    const auto local = r.solve({});
    ASSERT_EQ(local.size(), 2u);
    expectSameRotation(local[1], Quat::identity(), "zero rest becomes identity");
}

TEST(SmplRetarget, MannyNamesCoverTheBodyButNotTheHands) {
    const auto& names = SmplRetarget::mannyNames();
    EXPECT_EQ(names[0], "pelvis");
    EXPECT_EQ(names[16], "upperarm_l");
    EXPECT_EQ(names[11], "ball_r");
    EXPECT_EQ(names[22], "");
}
