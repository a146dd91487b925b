namespace AvatarBridge.Core.Client
{
    /// <summary>Where a SessionClient's connection to the bridge stands.</summary>
    public enum ConnectionState
    {
        /// <summary>Not started.</summary>
        Idle,
        /// <summary>Connecting sockets and shaking hands.</summary>
        Connecting,
        /// <summary>Hello answered; sessions are opened and frames flow.</summary>
        Connected,
        /// <summary>The connection failed or dropped; waiting before the next attempt.</summary>
        Reconnecting,
        /// <summary>Disposed.</summary>
        Stopped,
    }
}
