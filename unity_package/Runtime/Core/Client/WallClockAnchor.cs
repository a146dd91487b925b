namespace AvatarBridge.Core.Client
{
    /// <summary>A wall-clock reading and the Stopwatch timestamp taken with it; immutable, so WallClock swaps it atomically.</summary>
    sealed class WallClockAnchor
    {
        public readonly long WallNs;
        public readonly long Timestamp;

        public WallClockAnchor(long wallNs, long timestamp)
        {
            WallNs = wallNs;
            Timestamp = timestamp;
        }
    }
}
