using System;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;

namespace AvatarBridge.Core.MsgPack
{
    /// <summary>
    /// Writes msgpack into a growable buffer that is reused between messages (Reset), so encoding a
    /// request allocates nothing once the buffer has grown to the largest message.
    /// </summary>
    public sealed class MsgPackWriter
    {
        byte[] _buffer;
        int _length;

        public MsgPackWriter(int capacity = 256)
        {
            _buffer = new byte[Math.Max(capacity, 16)];
        }

        public byte[] Buffer => _buffer;
        public int Length => _length;

        public void Reset() => _length = 0;

        public byte[] ToArray()
        {
            var copy = new byte[_length];
            System.Buffer.BlockCopy(_buffer, 0, copy, 0, _length);
            return copy;
        }

        public void WriteNil() => Put(0xc0);

        public void Write(bool value) => Put(value ? (byte)0xc3 : (byte)0xc2);

        public void Write(long value)
        {
            if (value >= 0)
            {
                Write((ulong)value);
                return;
            }
            // Smallest signed encoding, as the reference msgpack packers do.
            if (value >= -32) Put((byte)(sbyte)value);
            else if (value >= sbyte.MinValue) { Put(0xd0); Put((byte)(sbyte)value); }
            else if (value >= short.MinValue) { Put(0xd1); BinaryPrimitives.WriteInt16BigEndian(Grow(2), (short)value); }
            else if (value >= int.MinValue) { Put(0xd2); BinaryPrimitives.WriteInt32BigEndian(Grow(4), (int)value); }
            else { Put(0xd3); BinaryPrimitives.WriteInt64BigEndian(Grow(8), value); }
        }

        public void Write(ulong value)
        {
            if (value <= 0x7f) Put((byte)value);
            else if (value <= byte.MaxValue) { Put(0xcc); Put((byte)value); }
            else if (value <= ushort.MaxValue) { Put(0xcd); BinaryPrimitives.WriteUInt16BigEndian(Grow(2), (ushort)value); }
            else if (value <= uint.MaxValue) { Put(0xce); BinaryPrimitives.WriteUInt32BigEndian(Grow(4), (uint)value); }
            else { Put(0xcf); BinaryPrimitives.WriteUInt64BigEndian(Grow(8), value); }
        }

        public void Write(int value) => Write((long)value);

        public void Write(double value)
        {
            Put(0xcb);
            BinaryPrimitives.WriteInt64BigEndian(Grow(8), BitConverter.DoubleToInt64Bits(value));
        }

        public void Write(float value)
        {
            Put(0xca);
            BinaryPrimitives.WriteInt32BigEndian(Grow(4), BitConverter.SingleToInt32Bits(value));
        }

        public void Write(string value)
        {
            if (value == null)
            {
                WriteNil();
                return;
            }
            int byteCount = Encoding.UTF8.GetByteCount(value);
            WriteStringHeader(byteCount);
            Grow(byteCount);
            Encoding.UTF8.GetBytes(value, 0, value.Length, _buffer, _length - byteCount);
        }

        public void WriteStringHeader(int byteCount)
        {
            if (byteCount <= 31) Put((byte)(0xa0 | byteCount));
            else if (byteCount <= byte.MaxValue) { Put(0xd9); Put((byte)byteCount); }
            else if (byteCount <= ushort.MaxValue) { Put(0xda); BinaryPrimitives.WriteUInt16BigEndian(Grow(2), (ushort)byteCount); }
            else { Put(0xdb); BinaryPrimitives.WriteUInt32BigEndian(Grow(4), (uint)byteCount); }
        }

        public void WriteBinary(ReadOnlySpan<byte> data)
        {
            WriteBinaryHeader(data.Length);
            data.CopyTo(Grow(data.Length));
        }

        /// <summary>
        /// Writes float32 values as one little-endian bin, the protocol's array encoding. A plain byte
        /// copy: every platform Unity and Mono run on is little-endian.
        /// </summary>
        public void WriteFloat32Binary(ReadOnlySpan<float> values) => WriteBinary(MemoryMarshal.AsBytes(values));

        public void WriteBinaryHeader(int byteCount)
        {
            if (byteCount <= byte.MaxValue) { Put(0xc4); Put((byte)byteCount); }
            else if (byteCount <= ushort.MaxValue) { Put(0xc5); BinaryPrimitives.WriteUInt16BigEndian(Grow(2), (ushort)byteCount); }
            else { Put(0xc6); BinaryPrimitives.WriteUInt32BigEndian(Grow(4), (uint)byteCount); }
        }

        /// <summary>Reserves raw space after a bin header so callers can fill it without a copy.</summary>
        public Span<byte> WriteRaw(int byteCount) => Grow(byteCount);

        public void WriteMapHeader(int count)
        {
            if (count <= 15) Put((byte)(0x80 | count));
            else if (count <= ushort.MaxValue) { Put(0xde); BinaryPrimitives.WriteUInt16BigEndian(Grow(2), (ushort)count); }
            else { Put(0xdf); BinaryPrimitives.WriteUInt32BigEndian(Grow(4), (uint)count); }
        }

        public void WriteArrayHeader(int count)
        {
            if (count <= 15) Put((byte)(0x90 | count));
            else if (count <= ushort.MaxValue) { Put(0xdc); BinaryPrimitives.WriteUInt16BigEndian(Grow(2), (ushort)count); }
            else { Put(0xdd); BinaryPrimitives.WriteUInt32BigEndian(Grow(4), (uint)count); }
        }

        /// <summary>
        /// Writes a tree of plain values (null, bool, integers, float, double, string, byte[],
        /// IDictionary with string keys, IList). Used for request options; not for the hot path.
        /// </summary>
        public void WriteObject(object value)
        {
            // mcs has no switch type patterns; an if chain keeps the core buildable with it.
            if (value == null) WriteNil();
            else if (value is bool b) Write(b);
            else if (value is string s) Write(s);
            else if (value is byte[] bytes) WriteBinary(bytes);
            else if (value is float f) Write(f);
            else if (value is double d) Write(d);
            else if (value is ulong u) Write(u);
            else if (value is long l) Write(l);
            else if (value is int i) Write(i);
            else if (value is uint ui) Write((ulong)ui);
            else if (value is IDictionary<string, object> map)
            {
                WriteMapHeader(map.Count);
                foreach (var pair in map)
                {
                    Write(pair.Key);
                    WriteObject(pair.Value);
                }
            }
            else if (value is IList<object> list)
            {
                WriteArrayHeader(list.Count);
                for (int k = 0; k < list.Count; k++) WriteObject(list[k]);
            }
            else throw new ArgumentException("cannot write " + value.GetType().Name + " as msgpack");
        }

        void Put(byte value)
        {
            Grow(1);
            _buffer[_length - 1] = value;
        }

        Span<byte> Grow(int count)
        {
            int needed = _length + count;
            if (needed > _buffer.Length)
            {
                var bigger = new byte[Math.Max(needed, _buffer.Length * 2)];
                System.Buffer.BlockCopy(_buffer, 0, bigger, 0, _length);
                _buffer = bigger;
            }
            var span = new Span<byte>(_buffer, _length, count);
            _length = needed;
            return span;
        }
    }
}
