using AvatarBridge.Core.Protocol;

namespace AvatarBridge.Core.Client
{
    /// <summary>A receive buffer and the Frame decoded from it: one of the three rotating in LatestFrameBuffer.</summary>
    sealed class FrameSlot
    {
        public byte[] Buffer = new byte[4096];
        public readonly Frame Frame = new Frame();
    }
}
