#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "avatar_bridge/BodySubjectMapper.hpp"
#include "avatar_bridge/SubjectMapper.hpp"

namespace avatar_bridge {

// Face subject: two bones, `flame_head` (root, rotation relative to the camera-facing neutral) and
// `flame_jaw` (relative to the head), both with zero translation; curves, in this order:
//   the 52 ARKit names (kArkitNames order: the bridge's weights mapped by name, or FlameToArkit when the
//   session sends none), the 50 FLAME expression names and 2 eyelid names of the rig, then HeadYaw,
//   HeadPitch, HeadRoll (FRotator angles in degrees / 180, the [-1, 1] scale of Live Link Face and of the
//   bridge's own Live Link Face sender), the six eye angles of Live Link Face (LeftEyeYaw, LeftEyePitch,
//   LeftEyeRoll, RightEyeYaw, RightEyePitch, RightEyeRoll, on the head's scale, from the frame's `gaze`; 0
//   for models without gaze) and FaceFound (1 or 0). A rig without FLAME codes has no Exp curves.
//   Then, only when the rig's `extras` announce them (speech sessions, docs/protocol.md §5.2): the 15 viseme
//   curves (kVisemeCurveNames), the 5 VRM vowels (kVrmVowelCurveNames) and Voice (1 or 0); 0 in a frame
//   that leaves them out. They have no sides, so mirroring leaves them as they are.
//   Then, only for a session opened with `body: true` (the rig has a `body`, docs/protocol.md §5.1.2): BodyFound,
//   LeftHandFound, RightHandFound (1 or 0; the hands swap when mirrored), and after the two face bones the 50
//   humanoid bones of the rig's body (BodySubjectMapper: root Hips, a second root beside flame_head), so one
//   subject, on one clock, drives both a face and a body (a Live Link Pose node per skeleton).
// The bones are prefixed so that a MetaHuman's own `head` bone is never overwritten by accident.
// Mirrored: every Left/Right curve pair swaps (ARKit, eyelids, eyes), head and jaw reflect across the
// face's mid plane (so yaw and roll change sign); FLAME coefficients have no sides and stay as they are.
class FaceSubjectMapper : public SubjectMapper {
public:
    static constexpr const char* kHeadBone = "flame_head";
    static constexpr const char* kJawBone = "flame_jaw";

    static constexpr std::size_t kEyeCurves = 6;

    explicit FaceSubjectMapper(const FaceRig& rig, bool mirror = false);

    const SubjectLayout& layout() const override { return layout_; }
    Result<SubjectPose> pose(const DecodedFrame& frame) const override;

private:
    SubjectLayout layout_;
    std::vector<std::size_t> arkitSlot_;  // for each rig blendshape, its index in kArkitNames (52 = unknown)
    std::size_t expressionCount_;  // 50, or 0 for models without FLAME codes
    bool visemes_;                 // the rig announces each speech extra
    bool vowels_;
    bool voice_;
    bool mirror_;
    std::optional<BodySubjectMapper> body_;  // sessions opened with `body: true`
};

}  // namespace avatar_bridge
