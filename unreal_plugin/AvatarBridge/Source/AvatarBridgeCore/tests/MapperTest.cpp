#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "Decoded.hpp"
#include "TestPayloads.hpp"
#include "avatar_bridge/ArkitNames.hpp"
#include "avatar_bridge/BodySubjectMapper.hpp"
#include "avatar_bridge/Decoder.hpp"
#include "avatar_bridge/FaceSubjectMapper.hpp"
#include "avatar_bridge/ProtocolError.hpp"

using namespace avatar_bridge;

namespace {

DecodedFrame decode(const Payload& p) {
    auto storage = std::make_shared<std::string>(p.bytes());
    return decoded(Decoder::frame(reinterpret_cast<const std::uint8_t*>(storage->data()), storage->size(), storage));
}

Rig rigOf(const Payload& openReply) {
    const std::string b = openReply.bytes();
    return std::get<OpenReply>(decoded(Decoder::reply(reinterpret_cast<const std::uint8_t*>(b.data()), b.size()))).rig;
}

std::size_t curveIndex(const SubjectLayout& layout, const std::string& name) {
    return static_cast<std::size_t>(
        std::find(layout.curveNames.begin(), layout.curveNames.end(), name) - layout.curveNames.begin());
}

std::vector<float> quatBytes(const Quat& q) { return {q.x, q.y, q.z, q.w}; }

}  // namespace

TEST(FaceSubject, LayoutHasArkitThenFlameThenHeadCurves) {
    const auto mapper = SubjectMapper::create(rigOf(payloads::openFace(1, "00112233445566ff")));
    const SubjectLayout& l = mapper->layout();
    EXPECT_EQ(l.boneNames, (std::vector<std::string>{"flame_head", "flame_jaw"}));
    EXPECT_EQ(l.boneParents, (std::vector<int>{-1, 0}));
    ASSERT_EQ(l.curveNames.size(), 52u + 50u + 2u + 3u + 6u + 1u);
    EXPECT_EQ(l.curveNames[0], "EyeBlinkLeft");
    EXPECT_EQ(l.curveNames[17], "JawOpen");
    EXPECT_EQ(l.curveNames[51], "TongueOut");
    EXPECT_EQ(l.curveNames[52], "Exp00");
    EXPECT_EQ(l.curveNames[102], "EyelidLeft");
    EXPECT_EQ(l.curveNames[104], "HeadYaw");
    EXPECT_EQ(l.curveNames[107], "LeftEyeYaw");   // Live Link Face's names and order
    EXPECT_EQ(l.curveNames[112], "RightEyeRoll");
    EXPECT_EQ(l.curveNames[113], "FaceFound");
}

TEST(FaceSubject, BridgeBlendshapesAreMappedByName) {
    // A rig listing the ARKit names in reverse: the mapper must follow names, not positions.
    auto reversed = payloads::arkitNames();
    std::reverse(reversed.begin(), reversed.end());
    const auto rig = rigOf(payloads::openFace(1, "00112233445566ff").map("rig", payloads::faceRig().strs("blendshapes", reversed)));
    const auto mapper = SubjectMapper::create(rig);
    const SubjectPose p = decoded(mapper->pose(decode(payloads::faceFrame(0, true, 0.0f))));  // blendshape i = 0.01 i
    ASSERT_EQ(p.curves.size(), mapper->layout().curveNames.size());
    EXPECT_NEAR(p.curves[0], 0.51f, 1e-6f);   // EyeBlinkLeft is the last entry of the reversed rig
    EXPECT_NEAR(p.curves[51], 0.0f, 1e-6f);   // TongueOut is its first
    EXPECT_NEAR(p.curves[52 + 3], 0.03f, 1e-6f);  // expression passes through
    EXPECT_NEAR(p.curves[curveIndex(mapper->layout(), "EyelidRight")], 0.75f, 1e-6f);
    EXPECT_EQ(p.curves.back(), 1.0f);  // face found
}

TEST(FaceSubject, FallsBackToFlameToArkitWithoutBlendshapes) {
    const auto rig = rigOf(payloads::openFace(1, "00112233445566ff").map("rig", payloads::faceRig(false)));
    const auto mapper = SubjectMapper::create(rig);
    // Jaw opened by 0.35 rad about wire +X (the FLAME jaw-open axis) -> JawOpen = 1.
    const Quat jaw = Quat::fromAxisAngle({1, 0, 0}, 0.35f);
    const SubjectPose p = decoded(mapper->pose(decode(payloads::faceFrame(0, false, -5.0f).floats("jaw", quatBytes(jaw)))));
    EXPECT_NEAR(p.curves[arkitIndex("JawOpen")], 1.0f, 1e-4f);
    EXPECT_NEAR(p.curves[arkitIndex("EyeBlinkRight")], 0.75f, 1e-6f);
    for (std::size_t i = 0; i < 52; ++i) {
        EXPECT_GE(p.curves[i], 0.0f);
        EXPECT_LE(p.curves[i], 1.0f);
    }
}

TEST(FaceSubject, HeadRotationBecomesBoneAndCurves) {
    const auto mapper = SubjectMapper::create(rigOf(payloads::openFace(1, "00112233445566ff")));
    // Head turned +0.5 rad about wire +Y: to the avatar's left, i.e. Unreal yaw -0.5 rad (see AxesTest),
    // which Live Link Face's scale (degrees / 180) writes as -0.5 / pi.
    const Quat head = Quat::fromAxisAngle({0, 1, 0}, 0.5f);
    const SubjectPose p = decoded(mapper->pose(decode(payloads::faceFrame(0).floats("head", quatBytes(head)))));
    EXPECT_NEAR(p.curves[curveIndex(mapper->layout(), "HeadYaw")], -0.5f / 3.14159265f, 1e-5f);
    EXPECT_NEAR(p.curves[curveIndex(mapper->layout(), "HeadPitch")], 0.0f, 1e-5f);
    EXPECT_NEAR(p.rotations[0].z, -std::sin(0.25f), 1e-6f);
    EXPECT_EQ(p.translations.size(), 2u);
}

TEST(FaceSubject, MirrorSwapsSidesAndReflectsTheHead) {
    const auto rig = rigOf(payloads::openFace(1, "00112233445566ff"));
    const auto plain = SubjectMapper::create(rig);
    const auto mirror = SubjectMapper::create(rig, true);
    const SubjectLayout& l = plain->layout();
    ASSERT_EQ(mirror->layout().curveNames, l.curveNames);  // same subject, other values
    // Head turned to the avatar's left and tilted: in the mirror it turns right, tilted the other way.
    const Quat head = Quat::fromAxisAngle(Vec3{0.2f, 0.9539392f, 0.2236068f}, 0.5f);
    const DecodedFrame frame = decode(payloads::faceFrame(0, true, 0.0f).floats("head", quatBytes(head)));
    const SubjectPose a = decoded(plain->pose(frame));
    const SubjectPose b = decoded(mirror->pose(frame));
    for (const char* name : {"EyeBlinkLeft", "MouthSmileLeft", "JawLeft", "BrowOuterUpLeft", "EyelidLeft"}) {
        std::string other(name);
        other.replace(other.size() - 4, 4, "Right");
        EXPECT_EQ(b.curves[curveIndex(l, name)], a.curves[curveIndex(l, other)]) << name;
        EXPECT_EQ(b.curves[curveIndex(l, other)], a.curves[curveIndex(l, name)]) << name;
    }
    for (const char* name : {"JawOpen", "TongueOut", "BrowInnerUp", "Exp07"}) {
        EXPECT_EQ(b.curves[curveIndex(l, name)], a.curves[curveIndex(l, name)]) << name;
    }
    EXPECT_NEAR(b.curves[curveIndex(l, "HeadYaw")], -a.curves[curveIndex(l, "HeadYaw")], 1e-5f);
    EXPECT_NEAR(b.curves[curveIndex(l, "HeadRoll")], -a.curves[curveIndex(l, "HeadRoll")], 1e-5f);
    EXPECT_NEAR(b.curves[curveIndex(l, "HeadPitch")], a.curves[curveIndex(l, "HeadPitch")], 1e-5f);
    EXPECT_GT(std::fabs(a.curves[curveIndex(l, "HeadYaw")]), 0.1f);
    // Reflecting twice is the identity: the bone rotation is the mirror image, not an arbitrary one.
    EXPECT_NEAR(b.rotations[0].x, -a.rotations[0].x, 1e-6f);
    EXPECT_NEAR(b.rotations[0].y, a.rotations[0].y, 1e-6f);
    EXPECT_NEAR(b.rotations[0].z, -a.rotations[0].z, 1e-6f);
    EXPECT_EQ(b.curves.back(), 1.0f);
}

TEST(FaceSubject, GazeBecomesLiveLinkFaceEyeCurves) {
    const auto rig = rigOf(payloads::openFace(1, "00112233445566ff"));
    const auto plain = SubjectMapper::create(rig);
    const auto mirror = SubjectMapper::create(rig, true);
    const SubjectLayout& l = plain->layout();
    // Left eye 0.3 rad to the subject's left and 0.1 up; right eye 0.2 left, 0.05 down.
    const DecodedFrame frame = decode(payloads::faceFrame(0).floats("gaze", {0.3f, 0.1f, 0.2f, -0.05f}));
    const SubjectPose a = decoded(plain->pose(frame));
    constexpr float kPi = 3.14159265f;
    EXPECT_NEAR(a.curves[curveIndex(l, "LeftEyeYaw")], -0.3f / kPi, 1e-6f);  // to the left: negative Unreal yaw
    EXPECT_NEAR(a.curves[curveIndex(l, "LeftEyePitch")], 0.1f / kPi, 1e-6f);
    EXPECT_NEAR(a.curves[curveIndex(l, "RightEyeYaw")], -0.2f / kPi, 1e-6f);
    EXPECT_NEAR(a.curves[curveIndex(l, "RightEyePitch")], -0.05f / kPi, 1e-6f);
    EXPECT_EQ(a.curves[curveIndex(l, "LeftEyeRoll")], 0.0f);
    const SubjectPose b = decoded(mirror->pose(frame));
    EXPECT_NEAR(b.curves[curveIndex(l, "LeftEyeYaw")], 0.2f / kPi, 1e-6f);  // the right eye, seen in a mirror
    EXPECT_NEAR(b.curves[curveIndex(l, "RightEyePitch")], 0.1f / kPi, 1e-6f);
    // No gaze (FLAME models): zeros.
    const SubjectPose none = decoded(plain->pose(decode(payloads::faceFrame(0))));
    EXPECT_EQ(none.curves[curveIndex(l, "LeftEyeYaw")], 0.0f);
}

TEST(FaceSubject, TrackerRigWithoutFlameCodes) {
    // The face tracker's rig: expression [] and frames with an empty expression (docs/protocol.md §5.1).
    const auto rig = rigOf(payloads::openFace(1, "00112233445566ff").map("rig", payloads::faceRig().strs("expression", {})));
    const auto mapper = SubjectMapper::create(rig);
    EXPECT_EQ(mapper->layout().curveNames.size(), 52u + 2u + 3u + 6u + 1u);
    const SubjectPose p = decoded(mapper->pose(decode(payloads::faceFrame(0).floats("expression", {}))));
    EXPECT_EQ(p.curves.size(), mapper->layout().curveNames.size());
    // A frame that disagrees with its rig is refused, not published with the wrong curve count.
    EXPECT_EQ(errorOf(mapper->pose(decode(payloads::faceFrame(0)))), ErrorCode::BadSize);
}

TEST(FaceSubject, SpeechRigAddsVisemeVowelAndVoiceCurves) {
    const auto rig = rigOf(payloads::openSpeech(1, "00112233445566ff"));
    const auto mapper = SubjectMapper::create(rig);
    const SubjectLayout& l = mapper->layout();
    ASSERT_EQ(l.curveNames.size(), 52u + 2u + 3u + 6u + 1u + 15u + 5u + 1u);
    EXPECT_EQ(l.curveNames[63], "FaceFound");  // the face curves keep their places; speech comes after
    EXPECT_EQ(l.curveNames[64], "viseme_sil");
    EXPECT_EQ(l.curveNames[74], "viseme_aa");
    EXPECT_EQ(l.curveNames[78], "viseme_U");
    EXPECT_EQ(l.curveNames[79], "VRM_A");
    EXPECT_EQ(l.curveNames[83], "VRM_O");
    EXPECT_EQ(l.curveNames[84], "Voice");

    const SubjectPose p = decoded(mapper->pose(decode(payloads::speechFrame(0, true, 0.25f))));
    ASSERT_EQ(p.curves.size(), l.curveNames.size());
    EXPECT_FLOAT_EQ(p.curves[curveIndex(l, "viseme_sil")], 0.25f);
    EXPECT_FLOAT_EQ(p.curves[curveIndex(l, "viseme_aa")], 0.35f);
    EXPECT_FLOAT_EQ(p.curves[curveIndex(l, "VRM_I")], 0.45f);
    EXPECT_EQ(p.curves[curveIndex(l, "Voice")], 1.0f);
    EXPECT_FLOAT_EQ(p.curves[curveIndex(l, "JawOpen")], 0.17f + 0.25f);  // the bridge's mouth channels by name
    EXPECT_EQ(decoded(mapper->pose(decode(payloads::speechFrame(1, false)))).curves.back(), 0.0f);

    // Mirroring swaps ARKit sides but leaves the side-less speech curves alone.
    const SubjectPose m = decoded(SubjectMapper::create(rig, true)->pose(decode(payloads::speechFrame(0, true, 0.25f))));
    for (std::size_t i = curveIndex(l, "viseme_sil"); i < l.curveNames.size(); ++i) {
        EXPECT_EQ(m.curves[i], p.curves[i]) << l.curveNames[i];
    }
    // A frame that leaves them out (the rig announced them) reads 0, with the curve count intact.
    const SubjectPose bare = decoded(mapper->pose(decode(payloads::speechFrame(2).erase("visemes").erase("vowels").erase("voice"))));
    ASSERT_EQ(bare.curves.size(), l.curveNames.size());
    EXPECT_EQ(bare.curves[curveIndex(l, "viseme_sil")], 0.0f);
    EXPECT_EQ(bare.curves[curveIndex(l, "VRM_A")], 0.0f);
    // Rigs without extras (FLAME models, the face tracker) get no speech curves.
    EXPECT_EQ(curveIndex(SubjectMapper::create(rigOf(payloads::openFace(1, "00112233445566ff")))->layout(), "Voice"),
              114u);
}

TEST(BodySubject, SkeletonAndTransformsInUnrealSpace) {
    const auto mapper = SubjectMapper::create(rigOf(payloads::openMotion(1, "ffeeddccbbaa0099")));
    const SubjectLayout& l = mapper->layout();
    ASSERT_EQ(l.boneNames.size(), 24u);
    EXPECT_EQ(l.boneNames[0], "pelvis");
    EXPECT_EQ(l.boneParents[16], 13);
    EXPECT_TRUE(l.curveNames.empty());

    // Root translation (0.25, 0.9, 0) m + pelvis rest (0, -0.223, 0) m = (0.25, 0.677, 0) m on the wire:
    // 25 cm to the left and 67.7 cm up -> Unreal (0, -25, 67.7) cm.
    const SubjectPose p = decoded(mapper->pose(decode(payloads::motionFrame(4, 0.25f))));
    EXPECT_EQ(p.seq, 4u);
    ASSERT_EQ(p.translations.size(), 24u);
    EXPECT_NEAR(p.translations[0].x, 0.0f, 1e-4f);
    EXPECT_NEAR(p.translations[0].y, -25.0f, 1e-4f);
    EXPECT_NEAR(p.translations[0].z, 67.7f, 1e-4f);
    // Every other joint: its rest offset, 10 cm up the parent (wire +Y) -> Unreal +Z 10 cm.
    EXPECT_NEAR(p.translations[5].z, 10.0f, 1e-5f);
    EXPECT_NEAR(p.rotations[5].w, 1.0f, 1e-6f);
}

TEST(BodySubject, JointRotationsAreConverted) {
    const auto mapper = SubjectMapper::create(rigOf(payloads::openMotion(1, "ffeeddccbbaa0099")));
    std::vector<float> joints(96, 0.0f);
    for (int j = 0; j < 24; ++j) {
        joints[4 * j + 3] = 1.0f;
    }
    const Quat turn = Quat::fromAxisAngle({0, 1, 0}, 1.0f);  // pelvis turns left by 1 rad
    joints[0] = turn.x;
    joints[1] = turn.y;
    joints[2] = turn.z;
    joints[3] = turn.w;
    const SubjectPose p = decoded(mapper->pose(decode(payloads::motionFrame(0).floats("joints", joints))));
    EXPECT_NEAR(2.0f * std::atan2(p.rotations[0].z, p.rotations[0].w), -1.0f, 1e-5f);  // about Unreal Z, negative
}

TEST(SubjectMapper, RefusesTheOtherPipelinesFrames) {
    const auto face = SubjectMapper::create(rigOf(payloads::openFace(1, "00112233445566ff")));
    const auto body = SubjectMapper::create(rigOf(payloads::openMotion(1, "ffeeddccbbaa0099")));
    EXPECT_EQ(errorOf(face->pose(decode(payloads::motionFrame(0)))), ErrorCode::BadValue);
    EXPECT_EQ(errorOf(body->pose(decode(payloads::faceFrame(0)))), ErrorCode::BadValue);
}

namespace {

std::size_t boneIndex(const SubjectLayout& layout, const std::string& name) {
    return static_cast<std::size_t>(std::find(layout.boneNames.begin(), layout.boneNames.end(), name) -
                                    layout.boneNames.begin());
}

// Where a bone's rest offset (its child's translation) points once the bone turns: in Unreal space.
Vec3 turnedChild(const SubjectPose& p, std::size_t bone, std::size_t child) {
    return p.rotations[bone].rotate(p.translations[child]);
}

}  // namespace

TEST(FaceBodySubject, FaceBonesThenTheHumanoidWithFlagCurves) {
    const auto mapper = SubjectMapper::create(rigOf(payloads::openFaceBody(1, "00112233445566ff")));
    const SubjectLayout& l = mapper->layout();
    ASSERT_EQ(l.boneNames.size(), 2u + 50u);
    EXPECT_EQ(l.boneNames[0], FaceSubjectMapper::kHeadBone);
    EXPECT_EQ(l.boneNames[2], "Hips");
    EXPECT_EQ(l.boneParents[2], -1);  // a second root beside flame_head
    EXPECT_EQ(l.boneParents[boneIndex(l, "Spine")], static_cast<int>(boneIndex(l, "Hips")));
    EXPECT_EQ(l.boneParents[boneIndex(l, "LeftUpperArm")], static_cast<int>(boneIndex(l, "LeftShoulder")));
    EXPECT_EQ(l.boneParents[boneIndex(l, "RightIndexProximal")], static_cast<int>(boneIndex(l, "RightHand")));
    EXPECT_EQ(l.boneParents[boneIndex(l, "RightIndexDistal")], static_cast<int>(boneIndex(l, "RightIndexIntermediate")));
    for (std::size_t b = 0; b < l.boneNames.size(); ++b) {
        EXPECT_LT(l.boneParents[b], static_cast<int>(b)) << "parents precede children: " << l.boneNames[b];
    }
    // The face's curves keep their places; the body's flags come last.
    EXPECT_EQ(curveIndex(l, "FaceFound"), 63u);
    ASSERT_EQ(l.curveNames.size(), 64u + 3u);
    EXPECT_EQ(l.curveNames[64], "BodyFound");
    EXPECT_EQ(l.curveNames[65], "LeftHandFound");
    EXPECT_EQ(l.curveNames[66], "RightHandFound");
}

TEST(FaceBodySubject, HumanoidRotationsAndRestOffsetsInUnrealSpace) {
    const auto mapper = SubjectMapper::create(rigOf(payloads::openFaceBody(1, "00112233445566ff")));
    const SubjectLayout& l = mapper->layout();
    // The left forearm (wire joint 8) turns +90 degrees about wire +Z (forward): from the avatar's left (+X) to up (+Y).
    const SubjectPose p = decoded(mapper->pose(decode(payloads::faceBodyFrame(7, 8, 1.5707964f))));
    EXPECT_EQ(p.seq, 7u);
    ASSERT_EQ(p.rotations.size(), l.boneNames.size());
    ASSERT_EQ(p.translations.size(), l.boneNames.size());
    ASSERT_EQ(p.curves.size(), l.curveNames.size());
    const std::size_t hips = boneIndex(l, "Hips");
    const std::size_t forearm = boneIndex(l, "LeftLowerArm");
    const std::size_t hand = boneIndex(l, "LeftHand");
    // Root at its rest position, 0.95 m up: Unreal +Z 95 cm. Left bones 10 cm to the avatar's left: Unreal -Y.
    EXPECT_NEAR(p.translations[hips].z, 95.0f, 1e-4f);
    EXPECT_NEAR(p.translations[hand].y, -10.0f, 1e-5f);
    EXPECT_NEAR(p.translations[boneIndex(l, "RightHand")].y, 10.0f, 1e-5f);
    EXPECT_NEAR(p.translations[boneIndex(l, "LeftLowerLeg")].z, -10.0f, 1e-5f);
    const Vec3 up = turnedChild(p, forearm, hand);
    EXPECT_NEAR(up.x, 0.0f, 1e-4f);
    EXPECT_NEAR(up.y, 0.0f, 1e-4f);
    EXPECT_NEAR(up.z, 10.0f, 1e-4f) << "the forearm points up in Unreal as on the wire";
    EXPECT_NEAR(p.rotations[boneIndex(l, "RightLowerArm")].w, 1.0f, 1e-6f);
    EXPECT_EQ(p.curves[curveIndex(l, "BodyFound")], 1.0f);
    EXPECT_EQ(p.curves[curveIndex(l, "LeftHandFound")], 1.0f);
    EXPECT_EQ(p.curves[curveIndex(l, "RightHandFound")], 0.0f);

    // Mirrored: the right forearm shows the left's turn, reflected, so it points up too; the hands' flags swap.
    const auto mirror = SubjectMapper::create(rigOf(payloads::openFaceBody(1, "00112233445566ff")), true);
    const SubjectPose m = decoded(mirror->pose(decode(payloads::faceBodyFrame(7, 8, 1.5707964f))));
    const Vec3 mirroredUp = turnedChild(m, boneIndex(l, "RightLowerArm"), boneIndex(l, "RightHand"));
    EXPECT_NEAR(mirroredUp.y, 0.0f, 1e-4f);
    EXPECT_NEAR(mirroredUp.z, 10.0f, 1e-4f);
    EXPECT_NEAR(m.rotations[forearm].w, 1.0f, 1e-6f);
    EXPECT_EQ(m.curves[curveIndex(l, "LeftHandFound")], 0.0f);
    EXPECT_EQ(m.curves[curveIndex(l, "RightHandFound")], 1.0f);

    // A frame without the body its rig announced is refused, not published with the wrong bone count.
    EXPECT_EQ(errorOf(mapper->pose(decode(payloads::faceFrame(0).floats("expression", {})))), ErrorCode::BadSize);
}

TEST(BodySubject, HumanoidRigAloneFromFaceFrames) {
    const Rig face = rigOf(payloads::openFaceBody(1, "00112233445566ff"));
    const BodySubjectMapper body(*std::get<FaceRig>(face).body);
    ASSERT_EQ(body.layout().boneNames.size(), 50u);
    EXPECT_TRUE(body.layout().curveNames.empty());
    const SubjectPose p = decoded(body.pose(decode(payloads::faceBodyFrame(2, 0, 1.0f))));
    ASSERT_EQ(p.rotations.size(), 50u);
    EXPECT_NEAR(p.translations[0].z, 95.0f, 1e-4f);
    // The hips' turn about wire +Z (forward) is about Unreal -X: (x, y, z, w) -> (-z, x, -y, w).
    EXPECT_NEAR(p.rotations[0].x, -std::sin(0.5f), 1e-6f);
    EXPECT_NEAR(p.rotations[0].w, std::cos(0.5f), 1e-6f);
    EXPECT_EQ(errorOf(body.pose(decode(payloads::faceFrame(0)))), ErrorCode::BadValue);   // no body in it
    EXPECT_EQ(errorOf(body.pose(decode(payloads::motionFrame(0)))), ErrorCode::BadSize);  // 24 joints, not 50
}
