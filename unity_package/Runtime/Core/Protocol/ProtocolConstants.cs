namespace AvatarBridge.Core.Protocol
{
    /// <summary>Fixed numbers of protocol version 1. Array element counts come from the contract, never from a message.</summary>
    public static class ProtocolConstants
    {
        public const int Version = 1;
        public const int DefaultRequestPort = 5570;
        public const string FrameTopicPrefix = "frame/";
        public const string EventTopicPrefix = "event/";
        /// <summary>Batched frames of every session of one pipeline, one message per scheduler tick (section 5.3, minor 1).</summary>
        public const string MotionBatchTopic = "batch/motion";
        public const int SessionIdLength = 16;

        public const int ExpressionCount = 50;
        public const int EyelidCount = 2;
        public const int BlendshapeCount = 52;
        public const int JointCount = 24;
        /// <summary>The humanoid `body` rig of face sessions opened with body: true (section 5.1.2): Hips ... fingers.</summary>
        public const int HumanoidJointCount = 50;
        public const int FeatureColumns = 35;
        /// <summary>Speech frames: Oculus viseme weights (order in Rig.SpeechShapes.VisemeNames).</summary>
        public const int VisemeCount = 15;
        /// <summary>Speech frames: VRM's A, I, U, E, O.</summary>
        public const int VowelCount = 5;

        public static string PipelineName(Pipeline pipeline) =>
            pipeline == Pipeline.Face ? "face" : pipeline == Pipeline.Motion ? "motion" : "speech";
    }
}
