#include "avatar_bridge/BodySubjectMapper.hpp"

#include "avatar_bridge/ProtocolError.hpp"
#include "avatar_bridge/UnrealAxes.hpp"

namespace avatar_bridge {

BodySubjectMapper::BodySubjectMapper(const BodyRig& rig) : restWire_(rig.restOffsets) {
    layout_.boneNames = rig.joints;
    layout_.boneParents = rig.parents;
    restTranslations_.reserve(restWire_.size());
    for (const Vec3& offset : restWire_) {
        restTranslations_.push_back(UnrealAxes::position(offset));
    }
}

Result<SubjectPose> BodySubjectMapper::pose(const DecodedFrame& decoded) const {
    const auto* f = std::get_if<MotionFrame>(&decoded.frame);
    if (f == nullptr) {
        return ProtocolError{ErrorCode::BadValue, "body subject received a face frame"};
    }
    const std::size_t joints = layout_.boneNames.size();
    if (f->joints.size() != joints * 4) {
        return ProtocolError{ErrorCode::BadSize, "motion frame joint count does not match the rig"};
    }
    SubjectPose p;
    p.seq = f->header.seq;
    p.rotations.reserve(joints);
    for (std::size_t j = 0; j < joints; ++j) {
        const Quat q{f->joints[4 * j], f->joints[4 * j + 1], f->joints[4 * j + 2], f->joints[4 * j + 3]};
        p.rotations.push_back(UnrealAxes::rotation(q.normalized()));
    }
    p.translations = restTranslations_;
    const Vec3 root{f->root[0], f->root[1], f->root[2]};
    p.translations[0] = UnrealAxes::position(restWire_[0] + root);
    return p;
}

}  // namespace avatar_bridge
