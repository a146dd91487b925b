namespace AvatarBridge
{
    /// <summary>What the player platform offers the core client.</summary>
    static class BridgePlatform
    {
#if UNITY_WEBGL && !UNITY_EDITOR
        // A WebGL player has neither System.Net.Sockets nor threads: the components stay idle there.
        public static bool HasSockets => false;
#else
        public static bool HasSockets => true;
#endif
    }
}
