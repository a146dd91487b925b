using AvatarBridge.Core.Protocol;

namespace AvatarBridge.Core.Client
{
    /// <summary>
    /// Newest-frame handoff from the receive thread to the main thread: a triple buffer. The receiver
    /// fills the back slot and swaps it with the ready slot; the reader swaps the ready slot into the
    /// front slot it owns. Neither side waits for the other beyond a pointer swap, older frames are
    /// overwritten (latest wins), and the reader's frame stays intact until its next TryGetNewest.
    /// </summary>
    public sealed class LatestFrameBuffer
    {
        readonly object _gate = new object();
        FrameSlot _back = new FrameSlot();
        FrameSlot _ready = new FrameSlot();
        FrameSlot _front = new FrameSlot();
        bool _fresh;
        bool _hasFrame;

        /// <summary>
        /// The newest frame, if one arrived since the previous call (true) — or the one taken before
        /// (false; null until the first frame). Valid until the next call; call from one thread.
        /// </summary>
        public bool TryGetNewest(out Frame frame)
        {
            bool fresh;
            lock (_gate)
            {
                fresh = _fresh;
                if (fresh)
                {
                    var taken = _ready;
                    _ready = _front;
                    _front = taken;
                    _fresh = false;
                    _hasFrame = true;
                }
            }
            frame = _hasFrame ? _front.Frame : null;
            return fresh;
        }

        /// <summary>Drops any frame not yet taken (the session was reopened with another rig).</summary>
        public void Clear()
        {
            lock (_gate) _fresh = false;
        }

        /// <summary>Receiver side: the slot to fill next.</summary>
        internal FrameSlot Back => _back;

        /// <summary>Receiver side: makes the filled back slot the newest frame.</summary>
        internal void Publish()
        {
            lock (_gate)
            {
                var filled = _back;
                _back = _ready;
                _ready = filled;
                _fresh = true;
            }
        }
    }
}
