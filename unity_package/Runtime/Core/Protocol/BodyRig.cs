using System.Collections.Generic;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>
    /// A body rig description (section 4.3): a motion session's 24 SMPL joints, or the 50 humanoid joints
    /// of a face session opened with body: true (section 5.1.2, FaceRig.Body), in frame order.
    /// </summary>
    public sealed class BodyRig
    {
        const string What = "body rig";

        public string[] Joints { get; private set; }
        /// <summary>Parent index per joint, -1 for the root; parents precede children.</summary>
        public int[] Parents { get; private set; }
        /// <summary>Joints×3 rest offsets from the parent, wire coordinates (right-handed, metres).</summary>
        public float[] RestOffsets { get; private set; }
        /// <summary>Unity HumanBodyBones name per joint, "" where none fits.</summary>
        public string[] Humanoid { get; private set; }

        /// <summary>A motion session's rig: the 24 SMPL joints.</summary>
        public static BodyRig FromMap(Dictionary<string, object> rig) => FromMap(rig, ProtocolConstants.JointCount);

        /// <summary>The `body` map of a face rig: the 50 humanoid joints, each named by its HumanBodyBones name.</summary>
        public static BodyRig HumanoidFromMap(Dictionary<string, object> rig)
        {
            if (ReadMap.String(rig, "kind", What) != "body") throw new ProtocolException("face rig: 'body' must be a body rig");
            return FromMap(rig, ProtocolConstants.HumanoidJointCount);
        }

        static BodyRig FromMap(Dictionary<string, object> rig, int n)
        {
            var body = new BodyRig
            {
                Joints = ReadMap.StringArray(rig, "joints", What),
                Parents = ReadMap.IntArray(rig, "parents", What),
                RestOffsets = ReadMap.FloatArray(rig, "rest_offsets", n * 3, What),
                Humanoid = ReadMap.StringArray(rig, "humanoid", What),
            };
            RigChecks.Coordinates(rig, What);
            RigChecks.Count(body.Joints.Length, n, "joints", What);
            RigChecks.Count(body.Parents.Length, n, "parents", What);
            RigChecks.Count(body.Humanoid.Length, n, "humanoid", What);
            for (int i = 0; i < n; i++)
            {
                // Forward kinematics walks joints in index order, so every parent must come first.
                if (body.Parents[i] >= i || body.Parents[i] < -1 || (body.Parents[i] == -1) != (i == 0))
                    throw new ProtocolException(What + ": parent of joint " + i + " is " + body.Parents[i]);
            }
            return body;
        }
    }
}
