using System;
using System.Buffers.Binary;
using System.Collections.Generic;
using AvatarBridge.Core.MsgPack;

namespace AvatarBridge.Tests.Core
{
    /// <summary>
    /// Batched motion messages built by hand to the layout of docs/protocol.md section 5.3,
    /// with knobs to break them one way at a time. Row r holds seq 100 + r + SeqOffset, input_seq
    /// 50 + r, t_capture_ns 1.7e18 + r, joints[k] = r + k / 1000 and root (r, -r, 0.5).
    /// </summary>
    sealed class BatchPayload
    {
        public readonly List<string> Sessions = new List<string>();
        public ulong SeqOffset;
        /// <summary>0: the smallest bin format (bin8 for short columns); 16 or 32: every column in bin16 or bin32.</summary>
        public int BinFormat;
        public bool Reverse, ExtraKey;
        public string DropKey, Op = "frames", Pipeline = "motion";
        public int Version = 1, Minor = 1;
        /// <summary>Overrides the 'rows' key (default: the number of sessions).</summary>
        public long? Rows;
        /// <summary>A column whose bin gets ShortBy fewer bytes (more, when negative).</summary>
        public string ShortColumn;
        public int ShortBy = 1;

        public BatchPayload(params string[] sessions) => Sessions.AddRange(sessions);

        public static float Joint(int row, int k) => row + k / 1000f;

        public MsgPackWriter Write(MsgPackWriter w = null)
        {
            w = w ?? new MsgPackWriter(1024);
            w.Reset();
            int n = Sessions.Count;
            var ids = new byte[n * 16];
            var seq = new byte[n * 8];
            var inputSeq = new byte[n * 8];
            var capture = new byte[n * 8];
            var joints = new float[n * 96];
            var root = new float[n * 3];
            for (int r = 0; r < n; r++)
            {
                for (int c = 0; c < 16; c++) ids[r * 16 + c] = (byte)Sessions[r][c];
                BinaryPrimitives.WriteUInt64LittleEndian(new Span<byte>(seq, r * 8, 8), 100UL + (ulong)r + SeqOffset);
                BinaryPrimitives.WriteUInt64LittleEndian(new Span<byte>(inputSeq, r * 8, 8), 50UL + (ulong)r);
                BinaryPrimitives.WriteInt64LittleEndian(new Span<byte>(capture, r * 8, 8), 1700000000000000000L + r);
                for (int k = 0; k < 96; k++) joints[r * 96 + k] = Joint(r, k);
                root[r * 3] = r;
                root[r * 3 + 1] = -r;
                root[r * 3 + 2] = 0.5f;
            }
            var keys = new List<KeyValuePair<string, Action>>
            {
                Key("op", () => w.Write(Op)),
                Key("v", () => w.Write(Version)),
                Key("minor", () => w.Write(Minor)),
                Key("pipeline", () => w.Write(Pipeline)),
                Key("rows", () => w.Write(Rows ?? n)),
                Key("t_publish_ns", () => w.Write(1700000000005000000L)),
                Key("engine_us", () => w.Write(45.5)),
                Key("batch", () => w.Write(n + 3)),
                Key("session", () => Bin(w, "session", ids)),
                Key("seq", () => Bin(w, "seq", seq)),
                Key("input_seq", () => Bin(w, "input_seq", inputSeq)),
                Key("t_capture_ns", () => Bin(w, "t_capture_ns", capture)),
                Key("joints", () => Bin(w, "joints", Bytes(joints))),
                Key("root", () => Bin(w, "root", Bytes(root))),
            };
            if (DropKey != null) keys.RemoveAll(k => k.Key == DropKey);
            if (Reverse) keys.Reverse();
            w.WriteMapHeader(keys.Count + (ExtraKey ? 2 : 0));
            if (ExtraKey)
            {
                // A later minor's column and a nested map: both skipped.
                w.Write("gaze_column"); Bin(w, "gaze_column", new byte[n * 16]);
                w.Write("added_in_minor_2");
                w.WriteObject(new Dictionary<string, object> { { "nested", new object[] { 1L, "x" } } });
            }
            foreach (var k in keys)
            {
                w.Write(k.Key);
                k.Value();
            }
            return w;
        }

        static KeyValuePair<string, Action> Key(string name, Action write) => new KeyValuePair<string, Action>(name, write);

        static byte[] Bytes(float[] values)
        {
            var bytes = new byte[values.Length * 4];
            for (int i = 0; i < values.Length; i++)
                BinaryPrimitives.WriteInt32LittleEndian(new Span<byte>(bytes, i * 4, 4), BitConverter.SingleToInt32Bits(values[i]));
            return bytes;
        }

        void Bin(MsgPackWriter w, string column, byte[] data)
        {
            int length = column == ShortColumn ? data.Length - ShortBy : data.Length;
            if (length > data.Length) Array.Resize(ref data, length); // a negative ShortBy: a column too long
            var body = new ReadOnlySpan<byte>(data, 0, length);
            if (BinFormat == 0)
            {
                w.WriteBinary(body);
                return;
            }
            var header = w.WriteRaw(BinFormat == 16 ? 3 : 5);
            header[0] = BinFormat == 16 ? (byte)0xc5 : (byte)0xc6;
            if (BinFormat == 16) BinaryPrimitives.WriteUInt16BigEndian(header.Slice(1), (ushort)length);
            else BinaryPrimitives.WriteUInt32BigEndian(header.Slice(1), (uint)length);
            body.CopyTo(w.WriteRaw(length));
        }
    }
}
