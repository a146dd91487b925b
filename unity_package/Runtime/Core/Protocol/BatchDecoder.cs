using System;
using System.Buffers.Binary;
using System.Text;
using AvatarBridge.Core.MsgPack;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>
    /// Decodes a batched motion message (topic batch/motion, section 5.3, protocol minor 1): one map
    /// per scheduler tick whose columns are bins holding every row (session) back to back. Decode
    /// reads the header and checks every column's length against the row count, without allocating
    /// or copying; CopyRow then fills a Frame with one row, exactly what that session's own
    /// frame/&lt;session&gt; motion frame would hold. The per-row integers are read byte-wise and the
    /// arrays copied into the Frame's aligned storage, as FrameDecoder does. Unknown keys are skipped.
    /// </summary>
    public sealed class BatchDecoder
    {
        const int SessionBytes = ProtocolConstants.SessionIdLength, IntBytes = 8,
            JointBytes = ProtocolConstants.JointCount * 4 * 4, RootBytes = 3 * 4;
        /// <summary>Bytes of one row over all columns: a message of n bytes holds at most n / RowBytes rows.</summary>
        public const int RowBytes = SessionBytes + 3 * IntBytes + JointBytes + RootBytes;

        const int HasOp = 1, HasV = 2, HasMinor = 4, HasPipeline = 8, HasRows = 16, HasPublish = 32, HasEngine = 64,
            HasBatch = 128, HasSession = 256, HasSeq = 512, HasInputSeq = 1024, HasCapture = 2048, HasJoints = 4096, HasRoot = 8192;
        const int Required = (HasRoot << 1) - 1;

        static readonly byte[] KeyOp = Ascii("op"), KeyV = Ascii("v"), KeyMinor = Ascii("minor"), KeyPipeline = Ascii("pipeline"),
            KeyRows = Ascii("rows"), KeyPublish = Ascii("t_publish_ns"), KeyEngine = Ascii("engine_us"), KeyBatch = Ascii("batch"),
            KeySession = Ascii("session"), KeySeq = Ascii("seq"), KeyInputSeq = Ascii("input_seq"), KeyCapture = Ascii("t_capture_ns"),
            KeyJoints = Ascii("joints"), KeyRoot = Ascii("root");
        static readonly byte[] ValueFrames = Ascii("frames"), ValueMotion = Ascii("motion");

        readonly MsgPackReader _reader = new MsgPackReader();
        byte[] _buffer = Array.Empty<byte>();
        int _sessionAt, _seqAt, _inputSeqAt, _captureAt, _jointsAt, _rootAt;
        int _sessionLength, _seqLength, _inputSeqLength, _captureLength, _jointsLength, _rootLength;

        /// <summary>Rows (sessions) of the last decoded batch; 0 before the first and after a failed decode.</summary>
        public int Rows { get; private set; }
        /// <summary>Protocol minor version the batch declared (1 or later).</summary>
        public int Minor { get; private set; }
        public long PublishNs { get; private set; }
        public double EngineMicroseconds { get; private set; }
        /// <summary>Engine batch size of the call that produced the rows (may exceed Rows when padded to a tier).</summary>
        public int Batch { get; private set; }

        /// <summary>
        /// Reads the batch in buffer[offset..offset+count); the buffer must stay unchanged while rows are
        /// read from it. Throws ProtocolException or MsgPackException when the message breaks the contract
        /// (a missing key, a column whose length is not rows times its row size...); Rows is then 0.
        /// </summary>
        public void Decode(byte[] buffer, int offset, int count)
        {
            Rows = 0;
            var r = _reader;
            r.Reset(buffer, offset, count);
            int seen = 0;
            long rows = 0;
            int fields = r.ReadMapHeader();
            for (int i = 0; i < fields; i++)
            {
                if (r.PeekType() != MsgPackType.String) throw new ProtocolException("batch: map keys must be strings");
                var key = r.ReadStringBytes();
                if (key.SequenceEqual(KeyOp))
                {
                    if (!r.ReadStringBytes().SequenceEqual(ValueFrames)) throw new ProtocolException("batch: op must be 'frames'");
                    seen |= HasOp;
                }
                else if (key.SequenceEqual(KeyV))
                {
                    long v = r.ReadInt64();
                    if (v != ProtocolConstants.Version) throw new ProtocolException("batch: version " + v + " is not supported");
                    seen |= HasV;
                }
                else if (key.SequenceEqual(KeyMinor))
                {
                    long minor = r.ReadInt64();
                    if (minor < 1 || minor > int.MaxValue) throw new ProtocolException("batch: minor " + minor + " is not a batch minor (1 or later)");
                    Minor = (int)minor;
                    seen |= HasMinor;
                }
                else if (key.SequenceEqual(KeyPipeline))
                {
                    if (!r.ReadStringBytes().SequenceEqual(ValueMotion)) throw new ProtocolException("batch: only 'motion' batches are known");
                    seen |= HasPipeline;
                }
                else if (key.SequenceEqual(KeyRows)) { rows = r.ReadInt64(); seen |= HasRows; }
                else if (key.SequenceEqual(KeyPublish)) { PublishNs = r.ReadInt64(); seen |= HasPublish; }
                else if (key.SequenceEqual(KeyEngine)) { EngineMicroseconds = r.ReadDouble(); seen |= HasEngine; }
                else if (key.SequenceEqual(KeyBatch)) { Batch = (int)r.ReadInt64(); seen |= HasBatch; }
                else if (key.SequenceEqual(KeySession)) { r.ReadBinarySegment(out _sessionAt, out _sessionLength); seen |= HasSession; }
                else if (key.SequenceEqual(KeySeq)) { r.ReadBinarySegment(out _seqAt, out _seqLength); seen |= HasSeq; }
                else if (key.SequenceEqual(KeyInputSeq)) { r.ReadBinarySegment(out _inputSeqAt, out _inputSeqLength); seen |= HasInputSeq; }
                else if (key.SequenceEqual(KeyCapture)) { r.ReadBinarySegment(out _captureAt, out _captureLength); seen |= HasCapture; }
                else if (key.SequenceEqual(KeyJoints)) { r.ReadBinarySegment(out _jointsAt, out _jointsLength); seen |= HasJoints; }
                else if (key.SequenceEqual(KeyRoot)) { r.ReadBinarySegment(out _rootAt, out _rootLength); seen |= HasRoot; }
                else r.Skip();
            }
            if ((seen & Required) != Required) throw new ProtocolException("batch: missing '" + MissingKey(Required & ~seen) + "'");
            // The bins' lengths bound the row count, so a huge 'rows' cannot overflow anything below.
            if (rows < 1 || rows > count / RowBytes) throw new ProtocolException("batch: " + rows + " rows do not fit a " + count + "-byte message");
            int n = (int)rows;
            Column("session", _sessionLength, n, SessionBytes);
            Column("seq", _seqLength, n, IntBytes);
            Column("input_seq", _inputSeqLength, n, IntBytes);
            Column("t_capture_ns", _captureLength, n, IntBytes);
            Column("joints", _jointsLength, n, JointBytes);
            Column("root", _rootLength, n, RootBytes);
            _buffer = buffer;
            Rows = n;
        }

        /// <summary>The 16 ASCII bytes of row's session id (valid until the next Decode).</summary>
        public ReadOnlySpan<byte> SessionId(int row) => new ReadOnlySpan<byte>(_buffer, _sessionAt + Row(row) * SessionBytes, SessionBytes);

        public ulong Seq(int row) => BinaryPrimitives.ReadUInt64LittleEndian(new ReadOnlySpan<byte>(_buffer, _seqAt + Row(row) * IntBytes, IntBytes));

        /// <summary>
        /// Fills frame with row: header fields, joints and root (Pipeline Motion). session becomes
        /// frame.Session (no allocation); the caller has matched it against SessionId(row).
        /// </summary>
        public void CopyRow(int row, Frame frame, string session)
        {
            int at = Row(row) * IntBytes;
            frame.Bind(_buffer);
            frame.Pipeline = Pipeline.Motion;
            frame.Session = session;
            frame.Seq = Seq(row);
            frame.InputSeq = BinaryPrimitives.ReadUInt64LittleEndian(new ReadOnlySpan<byte>(_buffer, _inputSeqAt + at, IntBytes));
            frame.CaptureNs = BinaryPrimitives.ReadInt64LittleEndian(new ReadOnlySpan<byte>(_buffer, _captureAt + at, IntBytes));
            frame.PublishNs = PublishNs;
            frame.EngineMicroseconds = EngineMicroseconds;
            frame.Batch = Batch;
            frame.SetJoints(_jointsAt + row * JointBytes, ProtocolConstants.JointCount * 4);
            frame.SetRoot(_rootAt + row * RootBytes, 3);
        }

        int Row(int row)
        {
            if ((uint)row >= (uint)Rows) throw new ArgumentOutOfRangeException(nameof(row), "row " + row + " of a batch of " + Rows);
            return row;
        }

        static void Column(string key, int length, int rows, int rowBytes)
        {
            if (length != rows * rowBytes)
                throw new ProtocolException("batch: '" + key + "' must hold " + rows + " rows of " + rowBytes + " bytes, got " + length + " bytes");
        }

        static string MissingKey(int missing)
        {
            var keys = new[] { KeyOp, KeyV, KeyMinor, KeyPipeline, KeyRows, KeyPublish, KeyEngine, KeyBatch, KeySession, KeySeq,
                KeyInputSeq, KeyCapture, KeyJoints, KeyRoot };
            for (int bit = 0; bit < keys.Length; bit++)
                if ((missing & (1 << bit)) != 0) return Encoding.ASCII.GetString(keys[bit]);
            return "?";
        }

        static byte[] Ascii(string text) => Encoding.ASCII.GetBytes(text);
    }
}
