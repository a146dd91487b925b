using System;
using System.Threading;

namespace AvatarBridge.Core.Client
{
    /// <summary>
    /// A session's newest image on its way to the sender thread: three buffers passed around by
    /// Interlocked.Exchange, so the caller copies the pixels and leaves without ever waiting for the
    /// socket. An image not yet sent when the next arrives is replaced (latest wins, as on the bridge).
    /// One caller at a time: a concurrent Post returns false instead of waiting.
    /// </summary>
    sealed class ImageMailbox
    {
        ImageJob _writing = new ImageJob();
        ImageJob _ready = new ImageJob();
        ImageJob _sending = new ImageJob();
        int _posting;

        /// <summary>Copies the pixels in; replaced is true when an unsent image was dropped for this one.</summary>
        public bool Post(ReadOnlySpan<byte> pixels, int width, int height, ImageSource source, long captureNs, out bool replaced)
        {
            replaced = false;
            if (Interlocked.CompareExchange(ref _posting, 1, 0) != 0) return false;
            try
            {
                var job = _writing;
                if (job.Pixels.Length < pixels.Length) job.Pixels = new byte[pixels.Length];
                pixels.CopyTo(job.Pixels);
                job.Length = pixels.Length;
                job.Width = width;
                job.Height = height;
                job.Source = source;
                job.CaptureNs = captureNs;
                job.Pending = true;
                var previous = Interlocked.Exchange(ref _ready, job); // a full fence: the job is complete before it is visible
                replaced = previous.Pending;
                previous.Pending = false;
                _writing = previous;
                return true;
            }
            finally
            {
                Volatile.Write(ref _posting, 0);
            }
        }

        /// <summary>Sender thread: whether an image waits (a hint, for parking).</summary>
        public bool HasPending => Volatile.Read(ref _ready).Pending;

        /// <summary>Sender thread: the newest unsent image, or null. It stays the sender's until the next Take.</summary>
        public ImageJob Take()
        {
            _sending.Pending = false; // the one sent last time may now go back into circulation
            var job = Interlocked.Exchange(ref _ready, _sending);
            _sending = job;
            return job.Pending ? job : null;
        }
    }

    sealed class ImageJob
    {
        public byte[] Pixels = Array.Empty<byte>();
        public int Length, Width, Height;
        public ImageSource Source;
        public long CaptureNs;
        public volatile bool Pending;
    }
}
