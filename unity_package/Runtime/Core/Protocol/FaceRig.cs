using System.Collections.Generic;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>Rig description of a face session (section 4.3): the names behind each frame array.</summary>
    public sealed class FaceRig
    {
        const string What = "face rig";

        public string[] Expression { get; private set; }
        public string[] Eyelids { get; private set; }
        public string[] Rotations { get; private set; }
        /// <summary>ARKit names in frame order, or empty when the session does not send blendshapes.</summary>
        public string[] Blendshapes { get; private set; }

        public static FaceRig FromMap(Dictionary<string, object> rig)
        {
            var face = new FaceRig
            {
                Expression = ReadMap.StringArray(rig, "expression", What),
                Eyelids = ReadMap.StringArray(rig, "eyelids", What),
                Rotations = ReadMap.StringArray(rig, "rotations", What),
                Blendshapes = ReadMap.StringArray(rig, "blendshapes", What),
            };
            RigChecks.Coordinates(rig, What);
            RigChecks.Count(face.Expression.Length, ProtocolConstants.ExpressionCount, "expression", What);
            RigChecks.Count(face.Eyelids.Length, ProtocolConstants.EyelidCount, "eyelids", What);
            if (face.Blendshapes.Length != 0)
                RigChecks.Count(face.Blendshapes.Length, ProtocolConstants.BlendshapeCount, "blendshapes", What);
            return face;
        }
    }
}
