#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "avatar_bridge/SubjectMapper.hpp"

namespace avatar_bridge {

// Body subject: a body rig's joints with their parents (Live Link Animation role), no curves. Two rigs:
// - a motion session's 24 SMPL joints, from motion frames (`joints`, `root`): the root's translation is its rest
//   position plus the frame's root translation (SMPL places the pelvis at translation + rest position);
// - the 50 humanoid joints of a face session opened with `body: true` (docs/protocol.md §5.1.2: Hips, spine,
//   neck, head, shoulders, arms, hands, three joints per finger, legs; named by Unity's HumanBodyBones), from the
//   face frames' `body` rotations; the root stays at its rest position. FaceSubjectMapper appends these bones
//   to the face subject's. Mirrored (the face subject's mirror): each Left/Right bone takes its partner's
//   rotation reflected across the body's mid plane, so the whole avatar moves as a mirror image.
// Each bone's translation is its rest offset from the parent. Rotations and translations are converted from the
// wire's right-handed Y-up metres to Unreal's left-handed Z-up cm (UnrealAxes); rest offsets once, not per frame.
class BodySubjectMapper : public SubjectMapper {
public:
    explicit BodySubjectMapper(const BodyRig& rig, bool mirror = false);

    const SubjectLayout& layout() const override { return layout_; }
    Result<SubjectPose> pose(const DecodedFrame& frame) const override;

    // Appends one pose of every joint to `p`: `quats` holds 4 floats per joint (xyzw, wire axes, rig order),
    // `rootWire` the root's translation from its rest position (wire axes, metres). An error when the count
    // does not fit the rig (`p` is then left as it was).
    std::optional<ProtocolError> append(const F32View& quats, const Vec3& rootWire, SubjectPose& p) const;

private:
    SubjectLayout layout_;
    std::vector<Vec3> restWire_;          // metres, wire frame
    std::vector<Vec3> restTranslations_;  // the same in Unreal cm, converted once rather than per frame
    std::vector<std::size_t> source_;     // per bone, the joint whose rotation it shows (its mirror partner when mirrored)
    bool mirror_;
};

}  // namespace avatar_bridge
