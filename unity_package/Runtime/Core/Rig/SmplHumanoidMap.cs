namespace AvatarBridge.Core.Rig
{
    /// <summary>
    /// SMPL's 24 joints and the Unity HumanBodyBones each one drives (the names also used by the VMC
    /// protocol). The bridge sends this mapping in every body rig (rig.humanoid); this table is the
    /// fallback for a rig whose humanoid entry is empty and documents the choice. SMPL's hand joints
    /// sit at the knuckles, where no HumanBodyBones bone corresponds, so they map to nothing.
    /// </summary>
    public static class SmplHumanoidMap
    {
        public static readonly string[] JointNames =
        {
            "pelvis", "left_hip", "right_hip", "spine1", "left_knee", "right_knee", "spine2", "left_ankle",
            "right_ankle", "spine3", "left_foot", "right_foot", "neck", "left_collar", "right_collar", "head",
            "left_shoulder", "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist",
            "left_hand", "right_hand",
        };

        public static readonly string[] BoneNames =
        {
            "Hips", "LeftUpperLeg", "RightUpperLeg", "Spine", "LeftLowerLeg", "RightLowerLeg", "Chest", "LeftFoot",
            "RightFoot", "UpperChest", "LeftToes", "RightToes", "Neck", "LeftShoulder", "RightShoulder", "Head",
            "LeftUpperArm", "RightUpperArm", "LeftLowerArm", "RightLowerArm", "LeftHand", "RightHand",
            "", "",
        };

        /// <summary>HumanBodyBones name for an SMPL joint name, "" when none fits or the name is unknown.</summary>
        public static string BoneFor(string jointName)
        {
            int i = System.Array.IndexOf(JointNames, jointName);
            return i < 0 ? "" : BoneNames[i];
        }

        /// <summary>Per rig joint: the rig's own humanoid name, or this table's by joint name where the rig gives none.</summary>
        public static string[] Resolve(string[] rigJoints, string[] rigHumanoid)
        {
            var bones = new string[rigJoints.Length];
            for (int i = 0; i < bones.Length; i++)
            {
                string fromRig = rigHumanoid != null && i < rigHumanoid.Length ? rigHumanoid[i] : "";
                bones[i] = string.IsNullOrEmpty(fromRig) ? BoneFor(rigJoints[i]) : fromRig;
            }
            return bones;
        }
    }
}
