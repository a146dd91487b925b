using System.Collections.Generic;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>Rig description of a motion session (section 4.3): the 24 SMPL joints in frame order.</summary>
    public sealed class BodyRig
    {
        const string What = "body rig";

        public string[] Joints { get; private set; }
        /// <summary>Parent index per joint, -1 for the root; parents precede children.</summary>
        public int[] Parents { get; private set; }
        /// <summary>24×3 rest offsets from the parent, wire coordinates (right-handed, metres).</summary>
        public float[] RestOffsets { get; private set; }
        /// <summary>Unity HumanBodyBones name per joint, "" where none fits.</summary>
        public string[] Humanoid { get; private set; }

        public static BodyRig FromMap(Dictionary<string, object> rig)
        {
            int n = ProtocolConstants.JointCount;
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
