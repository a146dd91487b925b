#pragma once

#include <vector>

#include "avatar_bridge/SubjectMapper.hpp"

namespace avatar_bridge {

// Body subject: the rig's 24 SMPL joints with their parents (Live Link Animation role), no curves.
// Each bone's translation is its rest offset from the parent; the root's is its rest position plus the
// frame's root translation (SMPL places the pelvis at translation + rest position). All in Unreal cm.
class BodySubjectMapper : public SubjectMapper {
public:
    explicit BodySubjectMapper(const BodyRig& rig);

    const SubjectLayout& layout() const override { return layout_; }
    Result<SubjectPose> pose(const DecodedFrame& frame) const override;

private:
    SubjectLayout layout_;
    std::vector<Vec3> restWire_;          // metres, wire frame
    std::vector<Vec3> restTranslations_;  // the same in Unreal cm, converted once rather than per frame
};

}  // namespace avatar_bridge
