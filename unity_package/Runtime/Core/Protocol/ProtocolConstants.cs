namespace AvatarBridge.Core.Protocol
{
    /// <summary>Fixed numbers of protocol version 1. Array element counts come from the contract, never from a message.</summary>
    public static class ProtocolConstants
    {
        public const int Version = 1;
        public const int DefaultRequestPort = 5570;
        public const string FrameTopicPrefix = "frame/";
        public const string EventTopicPrefix = "event/";
        public const int SessionIdLength = 16;

        public const int ExpressionCount = 50;
        public const int EyelidCount = 2;
        public const int BlendshapeCount = 52;
        public const int JointCount = 24;
        public const int FeatureColumns = 35;

        public static string PipelineName(Pipeline pipeline) => pipeline == Pipeline.Face ? "face" : "motion";
    }
}
