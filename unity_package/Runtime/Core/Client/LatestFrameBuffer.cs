using AvatarBridge.Core.Protocol;

namespace AvatarBridge.Core.Client
{
    /// <summary>
    /// Newest-frame handoff from the receive thread to the main thread: a triple buffer. The receiver
    /// fills the back slot and swaps it with the ready slot; a reader swaps the ready slot into the
    /// front slot. Neither side waits for the other beyond a pointer swap, and older frames are
    /// overwritten (latest wins). Several readers may share one buffer (a face driver and a UI, say),
    /// each with its own cursor, as long as they all run on one thread.
    /// </summary>
    public sealed class LatestFrameBuffer
    {
        readonly object _gate = new object();
        FrameSlot _back = new FrameSlot();
        FrameSlot _ready = new FrameSlot();
        FrameSlot _front = new FrameSlot();
        bool _fresh;
        bool _hasFrame;
        long _published;

        /// <summary>
        /// The newest frame, and whether it is one this reader has not seen (true; cursor is moved to
        /// it) or the one it saw last (false). frame is null until the first frame. Use the frame
        /// before any other code on this thread calls TryGetNewest: its buffer is then recycled.
        /// </summary>
        /// <param name="cursor">the reader's own position; start at 0.</param>
        public bool TryGetNewest(ref long cursor, out Frame frame)
        {
            lock (_gate)
            {
                if (_fresh)
                {
                    var taken = _ready;
                    _ready = _front;
                    _front = taken;
                    _fresh = false;
                    _hasFrame = true;
                }
            }
            frame = _hasFrame ? _front.Frame : null;
            if (frame == null || frame.Number == cursor) return false;
            cursor = frame.Number;
            return true;
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
                filled.Frame.Number = ++_published;
                _back = _ready;
                _ready = filled;
                _fresh = true;
            }
        }
    }
}
