#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "avatar_bridge/Quat.hpp"

namespace avatar_bridge {

// Poses any skeleton from the body subject's SMPL rotations without an SMPL mesh: the maths of the Unity
// package's HumanoidDriver, in Unreal space. SMPL's local rotations are relative to its T-pose, so
//   G_j = G_parent(j) * L_j              the joint's turn away from the T-pose, in component space,
//   world_b = G_j * restWorld_b          for a target bone b driven by joint j,
//   world_b = world_parent * restLocal_b for a bone no joint drives (it follows its parent),
//   local_b = inverse(world_parent) * world_b,
// where restWorld/restLocal are the target's T-pose (its retarget pose; Manny's reference pose is not a
// T-pose, so the Unreal asset applies its rest corrections first). Any bone axes work: only rotations
// relative to the rest matter. Engine-independent; ULiveLinkRetargetAsset (AvatarBridgeRetargetAsset) wraps it.
class SmplRetarget {
public:
    struct Bone {
        std::string name;
        int parent = -1;     // index into the same list; parents precede children
        Quat restLocal;      // T-pose rotation relative to the parent, Unreal component axes
        int smplJoint = -1;  // SMPL joint driving it, or -1
    };

    // The default SMPL -> UE5 Mannequin (Manny/Quinn) bone names, in SMPL joint order; "" where Manny has no
    // counterpart (SMPL's hand joints, which carry no rotation of their own on SMPL's 24-joint skeleton).
    static const std::array<std::string_view, 24>& mannyNames();

    // `smplParents`: the rig's 24 parents. Bones whose smplJoint is out of range are treated as undriven.
    SmplRetarget(std::vector<int> smplParents, std::vector<Bone> bones);

    // Local rotations of every target bone (bones() order) for one frame of SMPL local rotations (Unreal
    // space, as the body subject carries them). Fewer rotations than joints: the missing ones are rest.
    std::vector<Quat> solve(const std::vector<Quat>& smplLocal) const;

    const std::vector<Bone>& bones() const { return bones_; }

private:
    std::vector<int> smplParents_;
    std::vector<Bone> bones_;
    std::vector<Quat> restWorld_;
};

Quat inverse(const Quat& q);

}  // namespace avatar_bridge
