using AvatarBridge.Core.Protocol;

namespace AvatarBridge.Tests.Core
{
    /// <summary>A frame copied out of its receive buffer by FrameRecorder, to be checked after the fact.</summary>
    sealed class RecordedFrame
    {
        public string Topic;
        public string Session;
        public Pipeline Pipeline;
        public ulong Seq, InputSeq;
        public long CaptureNs, PublishNs;
        public double EngineUs;
        public int Batch;
        public bool FaceFound, Voice;
        public float[] Expression, Eyelids, Jaw, Head, Blendshapes, Joints, Root, Visemes, Vowels;
    }
}
