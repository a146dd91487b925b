using AvatarBridge;
using AvatarBridge.Core.Protocol;
using AvatarBridge.Core.Rig;
using UnityEngine;

namespace AvatarBridgeSamples
{
    /// <summary>
    /// Draws the motion session's skeleton as spheres: forward kinematics from the rig's rest
    /// offsets and the frame's rotations, all converted to Unity's axes by the core.
    /// </summary>
    public sealed class StickFigure : MonoBehaviour
    {
        public BridgeClient Client;

        Transform[] _joints = new Transform[0];
        Vec3[] _offsets = new Vec3[0];
        int[] _parents = new int[0];
        SkeletonPose _pose;
        int _openCount = -1;
        long _cursor;

        void LateUpdate()
        {
            var session = Client != null ? Client.MotionSession : null;
            var info = session?.Info;
            if (info == null) return;
            if (session.OpenCount != _openCount) Build(info.BodyRig, session.OpenCount);

            Frame frame;
            if (!session.Frames.TryGetNewest(ref _cursor, out frame)) return;
            _pose.Update(frame.Joints, frame.Root);
            var positions = new Vec3[_joints.Length];
            for (int j = 0; j < _joints.Length; j++)
            {
                int parent = _parents[j];
                // A joint sits at its parent plus its rest offset turned by the parent's rotation.
                positions[j] = parent < 0 ? _offsets[j] + _pose.RootOffset : positions[parent] + _pose.Global(parent) * _offsets[j];
                _joints[j].localPosition = new Vector3(positions[j].X, positions[j].Y + 1f, positions[j].Z);
            }
        }

        void Build(BodyRig rig, int openCount)
        {
            foreach (var joint in _joints) Destroy(joint.gameObject);
            _parents = rig.Parents;
            _joints = new Transform[rig.Joints.Length];
            _offsets = new Vec3[rig.Joints.Length];
            for (int j = 0; j < _joints.Length; j++)
            {
                var sphere = GameObject.CreatePrimitive(PrimitiveType.Sphere);
                sphere.name = rig.Joints[j];
                sphere.transform.SetParent(transform, false);
                sphere.transform.localScale = Vector3.one * 0.06f;
                _joints[j] = sphere.transform;
                var o = rig.RestOffsets;
                _offsets[j] = AxisConversion.PositionToUnity(new Vec3(o[j * 3], o[j * 3 + 1], o[j * 3 + 2]));
            }
            _pose = new SkeletonPose(rig.Parents);
            _openCount = openCount;
        }
    }
}
