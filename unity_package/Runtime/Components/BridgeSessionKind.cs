namespace AvatarBridge
{
    /// <summary>Which of a BridgeClient's sessions a component reads or feeds (BridgeClient.Session).</summary>
    public enum BridgeSessionKind
    {
        /// <summary>The face session (camera images in; face frames out).</summary>
        Face,
        /// <summary>The motion session (music in; dance frames out).</summary>
        Motion,
        /// <summary>The speech session (a voice in; face frames with visemes, vowels and voice activity out).</summary>
        Speech,
    }
}
