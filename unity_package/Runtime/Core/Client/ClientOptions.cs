using AvatarBridge.Core.Protocol;

namespace AvatarBridge.Core.Client
{
    /// <summary>Where the bridge is and how patiently to talk to it.</summary>
    public sealed class ClientOptions
    {
        public string Host = "127.0.0.1";
        public int RequestPort = ProtocolConstants.DefaultRequestPort;
        /// <summary>PUB port; 0 = the one hello reports.</summary>
        public int FramesPort;
        /// <summary>Sent in hello for the bridge's logs.</summary>
        public string ClientName = "avatar-bridge-csharp";
        public int ConnectTimeoutMs = 2000;
        public int RequestTimeoutMs = 2000;
        /// <summary>Longest a send may block (a bridge that stopped reading); then the client reconnects instead of stalling the caller.</summary>
        public int SendTimeoutMs = 500;
        /// <summary>How often open sessions are pinged (keeps them from being reaped, detects a dead bridge); 0 = a quarter of the bridge's idle timeout.</summary>
        public int PingIntervalMs;
        public int ReconnectMinMs = 250;
        public int ReconnectMaxMs = 5000;
        /// <summary>Audio and feature chunks that may wait for the sender thread (a power of two); more are dropped and counted. 64 chunks of Unity's 1024-sample audio blocks are 1.4 s at 48 kHz.</summary>
        public int InputQueueChunks = 64;
        /// <summary>
        /// Receive motion frames batched (topic batch/motion, one message per bridge tick for all of
        /// its motion sessions; protocol minor 1) instead of one message per session: for clients with
        /// many motion sessions (a crowd). Motion sessions' frames arrive in their Frames exactly as
        /// without it; face and speech sessions are then subscribed to one by one after their open
        /// reply, so their first frames may be missed if inputs follow the open within milliseconds.
        /// Needs a bridge that publishes batches.
        /// </summary>
        public bool MotionBatch;
        /// <summary>
        /// Resume at newest (docs/protocol.md section 1): when the frame thread reads again more than
        /// this long after its previous read (it was held up: the app suspended, a debugger, an
        /// EventReceived handler that blocked), what is queued is presumed stale and dropped with the
        /// frame connection; a fresh one subscribes to the same topics (SessionClient.Resubscribes).
        /// 0 turns it off.
        /// </summary>
        public int ResumeAfterMs = 250;
        /// <summary>Largest frame accepted from the bridge (a batch of 2048 motion sessions is about 0.9 MB).</summary>
        public int MaxFrameBytes = 16 << 20;
    }
}
