#include "avatar_bridge/FaceSubjectMapper.hpp"

#include "avatar_bridge/ArkitNames.hpp"
#include "avatar_bridge/FlameToArkit.hpp"
#include "avatar_bridge/ProtocolError.hpp"
#include "avatar_bridge/UnrealAxes.hpp"

namespace avatar_bridge {
namespace {

Quat quatAt(const F32View& v) { return Quat{v[0], v[1], v[2], v[3]}.normalized(); }

}  // namespace

FaceSubjectMapper::FaceSubjectMapper(const FaceRig& rig) {
    layout_.boneNames = {kHeadBone, kJawBone};
    layout_.boneParents = {-1, 0};
    for (const auto name : kArkitNames) {
        layout_.curveNames.emplace_back(name);
    }
    layout_.curveNames.insert(layout_.curveNames.end(), rig.expression.begin(), rig.expression.end());
    layout_.curveNames.insert(layout_.curveNames.end(), rig.eyelids.begin(), rig.eyelids.end());
    for (const char* name : {"HeadYaw", "HeadPitch", "HeadRoll", "FaceFound"}) {
        layout_.curveNames.emplace_back(name);
    }
    for (const auto& name : rig.blendshapes) {
        arkitSlot_.push_back(arkitIndex(name));
    }
}

SubjectPose FaceSubjectMapper::pose(const DecodedFrame& decoded) const {
    const auto* f = std::get_if<FaceFrame>(&decoded.frame);
    if (f == nullptr) {
        throw ProtocolError(ErrorCode::BadValue, "face subject received a motion frame");
    }
    SubjectPose p;
    p.seq = f->header.seq;
    const Quat jaw = quatAt(f->jaw);
    const Quat head = UnrealAxes::rotation(quatAt(f->head));
    p.rotations = {head, UnrealAxes::rotation(jaw)};
    p.translations = {Vec3{}, Vec3{}};
    p.curves.reserve(layout_.curveNames.size());

    FlameToArkit::Weights arkit{};
    if (f->blendshapes.size() == arkitSlot_.size() && !arkitSlot_.empty()) {
        for (std::size_t i = 0; i < arkitSlot_.size(); ++i) {
            if (arkitSlot_[i] < arkit.size()) {
                arkit[arkitSlot_[i]] = f->blendshapes[i];
            }
        }
    } else {
        arkit = FlameToArkit::map(f->expression, f->eyelids, jaw);
    }
    p.curves.assign(arkit.begin(), arkit.end());
    for (std::size_t i = 0; i < f->expression.size(); ++i) {
        p.curves.push_back(f->expression[i]);
    }
    for (std::size_t i = 0; i < f->eyelids.size(); ++i) {
        p.curves.push_back(f->eyelids[i]);
    }
    // Live Link Face's scale for head angles: FRotator degrees / 180, i.e. radians / pi, in [-1, 1].
    const UnrealAxes::Rotator r = UnrealAxes::rotator(head);
    constexpr float kInvPi = 0.318309886f;
    p.curves.insert(p.curves.end(), {r.yaw * kInvPi, r.pitch * kInvPi, r.roll * kInvPi, f->faceFound ? 1.0f : 0.0f});
    return p;
}

}  // namespace avatar_bridge
