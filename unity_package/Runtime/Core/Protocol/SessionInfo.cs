using System.Collections.Generic;
using System.Text;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>What an open reply (or an opened event) says about a session (section 4.3).</summary>
    public sealed class SessionInfo
    {
        public string Session { get; private set; }
        public string Topic { get; private set; }
        /// <summary>Topic as bytes, compared against each PUB message's first frame without allocating.</summary>
        public byte[] TopicBytes { get; private set; }
        public Pipeline Pipeline { get; private set; }
        public string Model { get; private set; }
        public double Fps { get; private set; }
        public string[] Accepts { get; private set; }
        /// <summary>Columns of a features row (motion only; 0 for face).</summary>
        public int FeatureColumns { get; private set; }
        /// <summary>Set for face and speech sessions.</summary>
        public FaceRig FaceRig { get; private set; }
        /// <summary>Set for motion sessions.</summary>
        public BodyRig BodyRig { get; private set; }

        public static SessionInfo FromReply(Reply reply) => FromMap(reply.Map, true);

        /// <summary>Reads an open reply's or opened event's fields; events carry no topic or accepts.</summary>
        public static SessionInfo FromMap(Dictionary<string, object> map, bool isOpenReply)
        {
            const string What = "session";
            var info = new SessionInfo
            {
                Session = ReadMap.String(map, "session", What),
                Model = ReadMap.String(map, "model", What),
                Fps = ReadMap.Double(map, "fps", What),
            };
            if (info.Session.Length != ProtocolConstants.SessionIdLength)
                throw new ProtocolException("session id '" + info.Session + "' is not " + ProtocolConstants.SessionIdLength + " characters");
            info.Topic = isOpenReply ? ReadMap.String(map, "topic", What) : ProtocolConstants.FrameTopicPrefix + info.Session;
            info.TopicBytes = Encoding.UTF8.GetBytes(info.Topic);
            info.Accepts = isOpenReply ? ReadMap.StringArray(map, "accepts", What) : new string[0];

            string pipeline = ReadMap.String(map, "pipeline", What);
            var rig = ReadMap.Map(map, "rig", What);
            string kind = ReadMap.String(rig, "kind", "rig");
            if ((pipeline == "face" || pipeline == "speech") && kind == "face")
            {
                // A speech session's frames are face frames with speech's extra keys (section 5.2).
                info.Pipeline = pipeline == "face" ? Pipeline.Face : Pipeline.Speech;
                info.FaceRig = FaceRig.FromMap(rig);
            }
            else if (pipeline == "motion" && kind == "body")
            {
                info.Pipeline = Pipeline.Motion;
                info.BodyRig = BodyRig.FromMap(rig);
                if (isOpenReply) info.FeatureColumns = (int)ReadMap.Long(map, "feature_cols", What);
            }
            else
            {
                throw new ProtocolException("pipeline '" + pipeline + "' with rig kind '" + kind + "' is not known");
            }
            return info;
        }

        public bool AcceptsKind(string kind) => System.Array.IndexOf(Accepts, kind) >= 0;
    }
}
