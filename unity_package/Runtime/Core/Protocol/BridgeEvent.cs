using System.Collections.Generic;
using AvatarBridge.Core.MsgPack;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>A session event from the event/ topic (section 7): opened (with the rig) or closed (with a reason).</summary>
    public sealed class BridgeEvent
    {
        const string What = "event";

        public string Session { get; private set; }
        /// <summary>"opened" or "closed" (other names may be added by later versions).</summary>
        public string Name { get; private set; }
        /// <summary>closed only: "client", "idle_timeout" or "shutdown".</summary>
        public string Reason { get; private set; }
        /// <summary>closed only.</summary>
        public long FramesPublished { get; private set; }
        /// <summary>opened only: the session's pipeline, model and rig.</summary>
        public SessionInfo Opened { get; private set; }

        public static BridgeEvent Parse(byte[] buffer, int offset, int count)
        {
            var map = new MsgPackReader(buffer, offset, count).ReadObject() as Dictionary<string, object>;
            if (map == null) throw new ProtocolException("an event must be a msgpack map");
            if (ReadMap.String(map, "op", What) != "event") throw new ProtocolException("event: op must be 'event'");
            var e = new BridgeEvent
            {
                Session = ReadMap.String(map, "session", What),
                Name = ReadMap.String(map, "event", What),
            };
            if (e.Name == "closed")
            {
                e.Reason = ReadMap.String(map, "reason", What);
                e.FramesPublished = ReadMap.Long(map, "frames_published", What);
            }
            else if (e.Name == "opened")
            {
                e.Opened = SessionInfo.FromMap(map, false);
            }
            return e;
        }
    }
}
