using System.Collections.Generic;
using UnityEngine;

namespace AvatarBridge
{
    /// <summary>
    /// A bone's rotation relative to the avatar root in the avatar's T-pose, which is where SMPL's
    /// rest pose (all joints identity) must land. Read from the Avatar's humanDescription skeleton
    /// (the pose the humanoid was configured in) so the current animated pose does not matter; bones
    /// it does not list fall back to their current local rotation.
    /// </summary>
    static class RestPose
    {
        public static Quaternion RelativeToRoot(Transform root, Transform bone, Dictionary<string, Quaternion> skeleton)
        {
            var rotation = Quaternion.identity;
            for (var t = bone; t != null && t != root; t = t.parent)
            {
                Quaternion local;
                if (skeleton == null || !skeleton.TryGetValue(t.name, out local)) local = t.localRotation;
                rotation = local * rotation;
            }
            return rotation;
        }

        /// <summary>Local rotations by transform name from the animator's Avatar, or null when it has none.</summary>
        public static Dictionary<string, Quaternion> SkeletonOf(Animator animator)
        {
            var avatar = animator.avatar;
            if (avatar == null || !avatar.isHuman) return null;
            var bones = avatar.humanDescription.skeleton;
            if (bones == null || bones.Length == 0) return null;
            var map = new Dictionary<string, Quaternion>(bones.Length);
            foreach (var bone in bones) map[bone.name] = bone.rotation;
            return map;
        }
    }
}
