using System.Threading;
using AvatarBridge.Core.Protocol;

namespace AvatarBridge.Core.Client
{
    /// <summary>
    /// A session the client keeps open: it survives reconnects (the bridge gives it a new id and the
    /// client reopens it), so components hold this handle, not an id. Frames arrive in Frames;
    /// OpenCount changes whenever the session was (re)opened, i.e. whenever Info may have changed.
    /// </summary>
    public sealed class BridgeSession
    {
        volatile SessionInfo _info;
        volatile string _lastError;
        volatile bool _failed;
        int _openCount;
        long _inputSeq = -1;

        internal BridgeSession(SessionRequest request)
        {
            Request = request;
        }

        public SessionRequest Request { get; }

        /// <summary>The open session (id, rig...), or null while it is not open.</summary>
        public SessionInfo Info => _info;

        public bool IsOpen => _info != null;

        /// <summary>Incremented on each successful open; compare to notice a new rig.</summary>
        public int OpenCount => Volatile.Read(ref _openCount);

        /// <summary>Set when the bridge refused to open the session (e.g. UNKNOWN_MODEL); it is retried after a reconnect.</summary>
        public bool Failed => _failed;

        public string LastError => _lastError;

        public LatestFrameBuffer Frames { get; } = new LatestFrameBuffer();

        public FrameStats Stats { get; } = new FrameStats();

        /// <summary>The newest image waiting for the sender thread.</summary>
        internal ImageMailbox Images { get; } = new ImageMailbox();

        internal ulong NextInputSeq() => (ulong)Interlocked.Increment(ref _inputSeq);

        internal void Opened(SessionInfo info)
        {
            Stats.ResetSequence();
            Frames.Clear();
            Interlocked.Exchange(ref _inputSeq, -1);
            _failed = false;
            _lastError = null;
            _info = info;
            Interlocked.Increment(ref _openCount);
        }

        internal void Lost(string why)
        {
            _info = null;
            _lastError = why;
        }

        internal void Refused(string why)
        {
            _failed = true;
            _lastError = why;
        }

        internal void ClearRefusal() => _failed = false;
    }
}
