#include "avatar_bridge/BodySubjectMapper.hpp"

#include <string>
#include <string_view>

#include "avatar_bridge/ProtocolError.hpp"
#include "avatar_bridge/UnrealAxes.hpp"

namespace avatar_bridge {
namespace {

// The bone on the other side ("LeftUpperArm" <-> "RightUpperArm"); the name itself when it has no side.
std::string partnerName(const std::string& name) {
    constexpr std::string_view kLeft = "Left";
    constexpr std::string_view kRight = "Right";
    if (name.compare(0, kLeft.size(), kLeft) == 0) {
        return std::string(kRight) + name.substr(kLeft.size());
    }
    if (name.compare(0, kRight.size(), kRight) == 0) {
        return std::string(kLeft) + name.substr(kRight.size());
    }
    return name;
}

}  // namespace

BodySubjectMapper::BodySubjectMapper(const BodyRig& rig, bool mirror) : restWire_(rig.restOffsets), mirror_(mirror) {
    layout_.boneNames = rig.joints;
    layout_.boneParents = rig.parents;
    restTranslations_.reserve(restWire_.size());
    for (const Vec3& offset : restWire_) {
        restTranslations_.push_back(UnrealAxes::position(offset));
    }
    for (std::size_t j = 0; j < rig.joints.size(); ++j) {
        std::size_t source = j;
        if (mirror_) {
            const std::string other = partnerName(rig.joints[j]);
            for (std::size_t k = 0; k < rig.joints.size(); ++k) {
                if (rig.joints[k] == other) {
                    source = k;
                }
            }
        }
        source_.push_back(source);
    }
}

std::optional<ProtocolError> BodySubjectMapper::append(const F32View& quats, const Vec3& rootWire, SubjectPose& p) const {
    const std::size_t joints = layout_.boneNames.size();
    if (quats.size() != joints * 4) {
        return ProtocolError{ErrorCode::BadSize, "body rotations: " + std::to_string(quats.size() / 4) +
                                                     " joints, the rig has " + std::to_string(joints)};
    }
    p.rotations.reserve(p.rotations.size() + joints);
    for (std::size_t j = 0; j < joints; ++j) {
        const std::size_t s = 4 * source_[j];
        const Quat q = UnrealAxes::rotation(Quat{quats[s], quats[s + 1], quats[s + 2], quats[s + 3]}.normalized());
        p.rotations.push_back(mirror_ ? UnrealAxes::mirrored(q) : q);
    }
    const std::size_t root = p.translations.size();
    p.translations.insert(p.translations.end(), restTranslations_.begin(), restTranslations_.end());
    if (joints != 0) {
        p.translations[root] = UnrealAxes::position(restWire_[0] + rootWire);
    }
    return std::nullopt;
}

Result<SubjectPose> BodySubjectMapper::pose(const DecodedFrame& decoded) const {
    SubjectPose p;
    std::optional<ProtocolError> error;
    if (const auto* motion = std::get_if<MotionFrame>(&decoded.frame)) {
        p.seq = motion->header.seq;
        error = append(motion->joints, Vec3{motion->root[0], motion->root[1], motion->root[2]}, p);
    } else {
        const auto& face = std::get<FaceFrame>(decoded.frame);
        if (face.body.empty()) {
            return ProtocolError{ErrorCode::BadValue, "body subject received a face frame without 'body'"};
        }
        p.seq = face.header.seq;
        error = append(face.body, Vec3{}, p);
    }
    if (error) {
        return *error;
    }
    return p;
}

}  // namespace avatar_bridge
