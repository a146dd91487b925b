namespace AvatarBridge.Core.Protocol
{
    /// <summary>The bridge's answer to hello (section 4.1).</summary>
    public sealed class HelloInfo
    {
        public string Server { get; private set; }
        public int FramesPort { get; private set; }
        public long MaxMessageBytes { get; private set; }
        public string[] Pipelines { get; private set; }
        public double IdleTimeoutSeconds { get; private set; }

        public static HelloInfo FromReply(Reply reply) => new HelloInfo
        {
            Server = reply.GetString("server"),
            FramesPort = (int)reply.GetLong("frames_port"),
            MaxMessageBytes = reply.GetLong("max_message_bytes"),
            Pipelines = reply.GetStringArray("pipelines"),
            IdleTimeoutSeconds = reply.GetDouble("idle_timeout_s"),
        };
    }
}
