namespace AvatarBridge
{
    /// <summary>How HumanoidDriver puts the dance on the avatar.</summary>
    public enum HumanoidDriveMode
    {
        /// <summary>Bone rotations written straight to the Transforms (any rig, exact, ignores muscle limits).</summary>
        Direct,
        /// <summary>
        /// Through Mecanim's HumanPoseHandler: the pose becomes muscle values, clamped to the Avatar's
        /// muscle limits, then applied; the same values a humanoid AnimationClip holds, so the result can
        /// be recorded and retargeted to any other humanoid.
        /// </summary>
        HumanPose,
    }
}
