#include "avatar_bridge/SmplRetarget.hpp"

namespace avatar_bridge {

Quat inverse(const Quat& q) { return Quat{-q.x, -q.y, -q.z, q.w}; }  // unit quaternions: the conjugate

const std::array<std::string_view, 24>& SmplRetarget::mannyNames() {
    static const std::array<std::string_view, 24> names = {
        "pelvis",     "thigh_l",    "thigh_r",    "spine_01",   "calf_l",     "calf_r",
        "spine_03",   "foot_l",     "foot_r",     "spine_05",   "ball_l",     "ball_r",
        "neck_01",    "clavicle_l", "clavicle_r", "head",       "upperarm_l", "upperarm_r",
        "lowerarm_l", "lowerarm_r", "hand_l",     "hand_r",     "",           "",
    };
    return names;
}

SmplRetarget::SmplRetarget(std::vector<int> smplParents, std::vector<Bone> bones)
    : smplParents_(std::move(smplParents)), bones_(std::move(bones)) {
    restWorld_.resize(bones_.size());
    for (std::size_t b = 0; b < bones_.size(); ++b) {
        const int parent = bones_[b].parent;
        const bool hasParent = parent >= 0 && static_cast<std::size_t>(parent) < b;
        if (!hasParent) {
            bones_[b].parent = -1;  // a forward or bad reference becomes a root, never an out-of-range read
        }
        if (bones_[b].smplJoint >= static_cast<int>(smplParents_.size())) {
            bones_[b].smplJoint = -1;
        }
        restWorld_[b] = (hasParent ? restWorld_[static_cast<std::size_t>(parent)] : Quat::identity()) *
                        bones_[b].restLocal.normalized();
    }
}

std::vector<Quat> SmplRetarget::solve(const std::vector<Quat>& smplLocal) const {
    std::vector<Quat> global(smplParents_.size());
    for (std::size_t j = 0; j < smplParents_.size(); ++j) {
        const Quat local = j < smplLocal.size() ? smplLocal[j].normalized() : Quat::identity();
        const int parent = smplParents_[j];
        global[j] = parent >= 0 && static_cast<std::size_t>(parent) < j ? global[static_cast<std::size_t>(parent)] * local : local;
    }
    std::vector<Quat> world(bones_.size());
    std::vector<Quat> out(bones_.size());
    for (std::size_t b = 0; b < bones_.size(); ++b) {
        const Bone& bone = bones_[b];
        const Quat parentWorld = bone.parent >= 0 ? world[static_cast<std::size_t>(bone.parent)] : Quat::identity();
        world[b] = bone.smplJoint >= 0 ? (global[static_cast<std::size_t>(bone.smplJoint)] * restWorld_[b]).normalized()
                                       : (parentWorld * bone.restLocal).normalized();
        out[b] = (inverse(parentWorld) * world[b]).normalized();
    }
    return out;
}

}  // namespace avatar_bridge
