using System;
using System.Threading;

namespace AvatarBridge.Core.Client
{
    /// <summary>
    /// Bounded lock-free queue of audio and feature chunks from any thread (Unity's audio thread
    /// included) to the one sender thread. Each cell owns a float buffer that is reused, so a steady
    /// stream allocates nothing; a full queue drops the new chunk rather than make the caller wait.
    /// The cell protocol is the classic bounded MPMC ring: a cell's sequence number says whether it is
    /// free for the producer at position p (sequence == p) or filled for the consumer (sequence == p + 1).
    /// </summary>
    sealed class InputRing
    {
        readonly Cell[] _cells;
        readonly int _mask;
        long _enqueue;
        long _dequeue; // the sender thread's alone

        public InputRing(int capacity)
        {
            if (capacity < 2 || (capacity & (capacity - 1)) != 0) throw new ArgumentException("capacity must be a power of two", nameof(capacity));
            _cells = new Cell[capacity];
            for (int i = 0; i < capacity; i++) _cells[i] = new Cell { Sequence = i };
            _mask = capacity - 1;
        }

        public int Capacity => _cells.Length;

        /// <summary>Copies one chunk in; false when the queue is full.</summary>
        public bool TryEnqueue(BridgeSession session, InputKind kind, int rateOrRows, ReadOnlySpan<float> values, long captureNs)
        {
            long position = Volatile.Read(ref _enqueue);
            Cell cell;
            while (true)
            {
                cell = _cells[position & _mask];
                long difference = Volatile.Read(ref cell.Sequence) - position;
                if (difference == 0)
                {
                    if (Interlocked.CompareExchange(ref _enqueue, position + 1, position) == position) break;
                    position = Volatile.Read(ref _enqueue);
                }
                else if (difference < 0) return false; // the consumer has not freed this cell yet: full
                else position = Volatile.Read(ref _enqueue);
            }
            var chunk = cell.Chunk;
            if (chunk.Values.Length < values.Length) chunk.Values = new float[Math.Max(values.Length, 2 * chunk.Values.Length)];
            values.CopyTo(chunk.Values);
            chunk.Count = values.Length;
            chunk.Session = session;
            chunk.Kind = kind;
            chunk.RateOrRows = rateOrRows;
            chunk.CaptureNs = captureNs;
            Volatile.Write(ref cell.Sequence, position + 1); // publish
            return true;
        }

        /// <summary>Sender thread: the oldest chunk, or null when empty. Call Release after using it.</summary>
        public InputChunk Peek()
        {
            var cell = _cells[_dequeue & _mask];
            return Volatile.Read(ref cell.Sequence) == _dequeue + 1 ? cell.Chunk : null;
        }

        /// <summary>Sender thread: frees the chunk Peek returned for the producers.</summary>
        public void Release()
        {
            var cell = _cells[_dequeue & _mask];
            cell.Chunk.Session = null;
            Volatile.Write(ref cell.Sequence, _dequeue + _cells.Length);
            _dequeue++;
        }

        sealed class Cell
        {
            public long Sequence;
            public readonly InputChunk Chunk = new InputChunk();
        }
    }

    enum InputKind
    {
        Audio,
        Features,
    }

    sealed class InputChunk
    {
        public BridgeSession Session;
        public InputKind Kind;
        /// <summary>Audio: sample rate; features: rows.</summary>
        public int RateOrRows;
        public float[] Values = Array.Empty<float>();
        public int Count;
        public long CaptureNs;
    }
}
