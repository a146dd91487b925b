using System;

namespace AvatarBridge.Core.Rig
{
    /// <summary>
    /// A humanoid skeleton defined in code, for the demo and the tests (no third-party asset): 22
    /// HumanBodyBones in a T-pose, 1.7 m tall, facing +Z, feet on y = 0, Unity coordinates. Each bone
    /// gets a deliberately odd T-pose rotation (a different turn per bone, as exporters leave bone axes
    /// pointing anywhere), so anything driven through it proves independence from bone axes.
    /// The Unity layer builds Transforms and an Avatar from this table (ProceduralAvatar).
    /// </summary>
    public static class ProceduralHumanoid
    {
        /// <summary>HumanBodyBones names; a parent always precedes its children.</summary>
        public static readonly string[] Bones =
        {
            "Hips", "Spine", "Chest", "UpperChest", "Neck", "Head",
            "LeftShoulder", "LeftUpperArm", "LeftLowerArm", "LeftHand",
            "RightShoulder", "RightUpperArm", "RightLowerArm", "RightHand",
            "LeftUpperLeg", "LeftLowerLeg", "LeftFoot", "LeftToes",
            "RightUpperLeg", "RightLowerLeg", "RightFoot", "RightToes",
        };

        public static readonly int[] Parents =
        {
            -1, 0, 1, 2, 3, 4,
            3, 6, 7, 8,
            3, 10, 11, 12,
            0, 14, 15, 16,
            0, 18, 19, 20,
        };

        // World T-pose positions (metres); the avatar's left is -X (Unity: +X is the avatar's right).
        static readonly float[] Positions =
        {
            0f, 0.95f, 0f,    0f, 1.05f, 0f,    0f, 1.18f, 0f,    0f, 1.30f, 0f,    0f, 1.45f, 0f,    0f, 1.55f, 0f,
            -0.05f, 1.40f, 0f,    -0.17f, 1.40f, 0f,    -0.45f, 1.40f, 0f,    -0.70f, 1.40f, 0f,
            0.05f, 1.40f, 0f,    0.17f, 1.40f, 0f,    0.45f, 1.40f, 0f,    0.70f, 1.40f, 0f,
            -0.09f, 0.90f, 0f,    -0.09f, 0.50f, 0f,    -0.09f, 0.08f, 0f,    -0.09f, 0.02f, 0.12f,
            0.09f, 0.90f, 0f,    0.09f, 0.50f, 0f,    0.09f, 0.08f, 0f,    0.09f, 0.02f, 0.12f,
        };

        /// <summary>The head's centre relative to the Head bone (where the demo face sits).</summary>
        public static Vec3 FaceOffset => new Vec3(0f, 0.1f, 0.02f);

        public static int IndexOf(string bone) => Array.IndexOf(Bones, bone);

        /// <summary>T-pose position of a bone in the avatar root's frame.</summary>
        public static Vec3 Position(int bone) => new Vec3(Positions[bone * 3], Positions[bone * 3 + 1], Positions[bone * 3 + 2]);

        /// <summary>T-pose rotation of a bone in the avatar root's frame (its arbitrary bone axes).</summary>
        public static Quat Rotation(int bone)
        {
            // A different axis and angle per bone: nothing downstream may assume aligned bone axes.
            var axis = Normalize(new Vec3(1f + bone % 3, 2f - bone % 2, 0.5f * (bone % 5) - 1f));
            return Quat.AxisAngle(axis, 0.4f + 0.37f * bone);
        }

        /// <summary>Local position under the parent's T-pose frame (what a Transform's localPosition holds).</summary>
        public static Vec3 LocalPosition(int bone)
        {
            int parent = Parents[bone];
            if (parent < 0) return Position(bone);
            return Rotation(parent).Inverse * (Position(bone) - Position(parent));
        }

        /// <summary>Local rotation under the parent's T-pose frame.</summary>
        public static Quat LocalRotation(int bone)
        {
            int parent = Parents[bone];
            return parent < 0 ? Rotation(bone) : Rotation(parent).Inverse * Rotation(bone);
        }

        static Vec3 Normalize(Vec3 v)
        {
            float n = (float)Math.Sqrt(v.X * v.X + v.Y * v.Y + v.Z * v.Z);
            return new Vec3(v.X / n, v.Y / n, v.Z / n);
        }
    }
}
