using System;

namespace AvatarBridge.Core.Rig
{
    /// <summary>
    /// Turns a motion frame's local SMPL rotations into per-joint rotations in Unity's frame, relative
    /// to the T-pose. SMPL's rest pose is a T-pose whose joint frames are all aligned with the body
    /// frame, so a joint's global rotation G_j = G_parent · L_j is directly "how far this bone turned
    /// from the T-pose". A Unity bone whose T-pose rotation (relative to the avatar root) is rest_j
    /// then gets avatarRoot · unity(G_j) · rest_j, whatever its own bone axes are.
    /// </summary>
    public sealed class SkeletonPose
    {
        readonly int[] _parents;
        readonly Quat[] _global;
        Vec3 _rootOrigin;
        bool _hasOrigin;

        public SkeletonPose(int[] parents)
        {
            if (parents == null) throw new ArgumentNullException(nameof(parents));
            _parents = (int[])parents.Clone();
            _global = new Quat[parents.Length];
        }

        public int JointCount => _parents.Length;

        /// <summary>Global (from T-pose) rotation of each joint in Unity coordinates, valid after Update.</summary>
        public Quat Global(int joint) => _global[joint];

        /// <summary>Root translation change since the first frame (or the last ResetRoot), Unity coordinates, metres.</summary>
        public Vec3 RootOffset { get; private set; }

        /// <summary>Recomputes the global rotations and the root offset from one frame's joints (24×4) and root (3).</summary>
        public void Update(ReadOnlySpan<float> joints, ReadOnlySpan<float> root)
        {
            if (joints.Length != _parents.Length * 4) throw new ArgumentException("joints must hold 4 floats per joint", nameof(joints));
            for (int j = 0; j < _parents.Length; j++)
            {
                // Normalizing guards against float drift; conversion commutes with the product
                // (it is conjugation by a fixed quaternion), so converting each local is enough.
                var local = AxisConversion.RotationToUnity(Quat.Read(joints, j * 4).Normalized);
                int parent = _parents[j];
                _global[j] = parent < 0 ? local : _global[parent] * local;
            }
            if (root.Length == 3)
            {
                var position = AxisConversion.PositionToUnity(new Vec3(root[0], root[1], root[2]));
                if (!_hasOrigin)
                {
                    _rootOrigin = position;
                    _hasOrigin = true;
                }
                RootOffset = position - _rootOrigin;
            }
        }

        /// <summary>Makes the next frame's root the origin of RootOffset (e.g. after a new session).</summary>
        public void ResetRoot()
        {
            _hasOrigin = false;
            RootOffset = default(Vec3);
        }
    }
}
