namespace AvatarBridge.Core.Rig
{
    /// <summary>
    /// The two rotations HumanoidDriver writes, engine-independent so the core tests check them on the
    /// generated rig. A bone driven by SMPL joint j ends at avatarRoot · G_j · rest_j in world space
    /// (G_j: the joint's turn away from the T-pose, Unity axes; rest_j: the bone's T-pose rotation
    /// relative to the avatar root), whatever the bone's own axes. It is written as a local rotation
    /// under its actual parent, so bones the SMPL skeleton lacks keep their animated pose and the
    /// result can be blended with what the Animator produced.
    /// </summary>
    public static class HumanoidRetarget
    {
        public static Quat BoneWorld(Quat avatarRoot, Quat jointFromTPose, Quat restRelativeToRoot) => avatarRoot * jointFromTPose * restRelativeToRoot;

        public static Quat LocalUnder(Quat parentWorld, Quat world) => parentWorld.Inverse * world;
    }
}
