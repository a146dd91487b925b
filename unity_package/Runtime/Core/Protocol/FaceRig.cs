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
        /// <summary>Face tracking (section 5.1): blendshapes the model never moves (always 0); empty otherwise.</summary>
        public string[] Unsupported { get; private set; }
        /// <summary>Face tracking: optional frame keys its frames carry ("head_position", "gaze"); empty otherwise.</summary>
        public string[] Extras { get; private set; }
        /// <summary>Sessions opened with body: true (section 5.1.2): the humanoid the frames' Body rotations are for; null otherwise.</summary>
        public BodyRig Body { get; private set; }

        public static FaceRig FromMap(Dictionary<string, object> rig)
        {
            var face = new FaceRig
            {
                Expression = ReadMap.StringArray(rig, "expression", What),
                Eyelids = ReadMap.StringArray(rig, "eyelids", What),
                Rotations = ReadMap.StringArray(rig, "rotations", What),
                Blendshapes = ReadMap.StringArray(rig, "blendshapes", What),
                Unsupported = rig.ContainsKey("unsupported") ? ReadMap.StringArray(rig, "unsupported", What) : new string[0],
                Extras = rig.ContainsKey("extras") ? ReadMap.StringArray(rig, "extras", What) : new string[0],
                Body = rig.ContainsKey("body") ? BodyRig.HumanoidFromMap(ReadMap.Map(rig, "body", What)) : null,
            };
            RigChecks.Coordinates(rig, What);
            // The face tracker has no FLAME codes: its rig lists none and its frames carry none (section 5.1).
            if (face.Expression.Length != 0)
                RigChecks.Count(face.Expression.Length, ProtocolConstants.ExpressionCount, "expression", What);
            RigChecks.Count(face.Eyelids.Length, ProtocolConstants.EyelidCount, "eyelids", What);
            if (face.Blendshapes.Length != 0)
                RigChecks.Count(face.Blendshapes.Length, ProtocolConstants.BlendshapeCount, "blendshapes", What);
            return face;
        }
    }
}
