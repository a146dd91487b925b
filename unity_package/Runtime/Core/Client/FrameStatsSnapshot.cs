namespace AvatarBridge.Core.Client
{
    /// <summary>A consistent copy of a session's receive statistics, for display.</summary>
    public struct FrameStatsSnapshot
    {
        public long Received;
        /// <summary>Frames missing from the seq sequence (dropped by the PUB high-water mark or the network).</summary>
        public long Lost;
        /// <summary>Payloads that broke the contract and were dropped.</summary>
        public long Rejected;
        public double Fps;
        /// <summary>Arrival minus capture, exponential average, ms.</summary>
        public double LatencyMs;
        /// <summary>Arrival minus publish (plus the ping-estimated clock offset), exponential average, ms.</summary>
        public double TransportMs;
        public double EngineUs;
        public ulong LastSeq;

        /// <summary>Lost / (received + lost), 0 when nothing arrived.</summary>
        public double LossRatio => Received + Lost == 0 ? 0 : (double)Lost / (Received + Lost);
    }
}
