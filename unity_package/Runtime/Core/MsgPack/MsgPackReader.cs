using System;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Text;

namespace AvatarBridge.Core.MsgPack
{
    /// <summary>
    /// Reads msgpack in place from a byte array. Strings and bins can be read as spans over the
    /// buffer, so decoding a frame allocates nothing; ReadObject builds a tree for the rare messages
    /// (replies, rigs, events) where convenience beats allocation.
    /// </summary>
    public sealed class MsgPackReader
    {
        byte[] _buffer = Array.Empty<byte>();
        int _position;
        int _end;

        public MsgPackReader()
        {
        }

        public MsgPackReader(byte[] buffer) => Reset(buffer, 0, buffer.Length);

        public MsgPackReader(byte[] buffer, int offset, int count) => Reset(buffer, offset, count);

        public int Position => _position;
        public bool End => _position >= _end;

        public void Reset(byte[] buffer, int offset, int count)
        {
            if (buffer == null) throw new ArgumentNullException(nameof(buffer));
            if (offset < 0 || count < 0 || offset + count > buffer.Length) throw new ArgumentOutOfRangeException(nameof(count));
            _buffer = buffer;
            _position = offset;
            _end = offset + count;
        }

        public MsgPackType PeekType()
        {
            byte b = Peek();
            if (b <= 0x7f || b >= 0xe0) return MsgPackType.Integer;
            if (b <= 0x8f) return MsgPackType.Map;
            if (b <= 0x9f) return MsgPackType.Array;
            if (b <= 0xbf) return MsgPackType.String;
            switch (b)
            {
                case 0xc0: return MsgPackType.Nil;
                case 0xc2:
                case 0xc3: return MsgPackType.Boolean;
                case 0xc4:
                case 0xc5:
                case 0xc6: return MsgPackType.Binary;
                case 0xca:
                case 0xcb: return MsgPackType.Float;
                case 0xd9:
                case 0xda:
                case 0xdb: return MsgPackType.String;
                case 0xdc:
                case 0xdd: return MsgPackType.Array;
                case 0xde:
                case 0xdf: return MsgPackType.Map;
                case 0xc7:
                case 0xc8:
                case 0xc9:
                case 0xd4:
                case 0xd5:
                case 0xd6:
                case 0xd7:
                case 0xd8: return MsgPackType.Extension;
                case 0xc1: throw new MsgPackException("0xc1 is never used in msgpack");
                default: return MsgPackType.Integer; // 0xcc..0xd3
            }
        }

        public bool TryReadNil()
        {
            if (Peek() != 0xc0) return false;
            _position++;
            return true;
        }

        public bool ReadBoolean()
        {
            byte b = Take();
            if (b == 0xc3) return true;
            if (b == 0xc2) return false;
            throw Unexpected("bool", b);
        }

        public int ReadMapHeader()
        {
            byte b = Take();
            if (b >= 0x80 && b <= 0x8f) return b & 0x0f;
            if (b == 0xde) return BinaryPrimitives.ReadUInt16BigEndian(TakeSpan(2));
            if (b == 0xdf) return CheckedCount(BinaryPrimitives.ReadUInt32BigEndian(TakeSpan(4)));
            throw Unexpected("map", b);
        }

        public int ReadArrayHeader()
        {
            byte b = Take();
            if (b >= 0x90 && b <= 0x9f) return b & 0x0f;
            if (b == 0xdc) return BinaryPrimitives.ReadUInt16BigEndian(TakeSpan(2));
            if (b == 0xdd) return CheckedCount(BinaryPrimitives.ReadUInt32BigEndian(TakeSpan(4)));
            throw Unexpected("array", b);
        }

        public long ReadInt64()
        {
            byte b = Peek();
            if (b == 0xcf)
            {
                ulong u = ReadUInt64();
                if (u > long.MaxValue) throw new MsgPackException("integer " + u + " does not fit int64");
                return (long)u;
            }
            _position++;
            if (b <= 0x7f) return b;
            if (b >= 0xe0) return (sbyte)b;
            switch (b)
            {
                case 0xcc: return Take();
                case 0xcd: return BinaryPrimitives.ReadUInt16BigEndian(TakeSpan(2));
                case 0xce: return BinaryPrimitives.ReadUInt32BigEndian(TakeSpan(4));
                case 0xd0: return (sbyte)Take();
                case 0xd1: return BinaryPrimitives.ReadInt16BigEndian(TakeSpan(2));
                case 0xd2: return BinaryPrimitives.ReadInt32BigEndian(TakeSpan(4));
                case 0xd3: return BinaryPrimitives.ReadInt64BigEndian(TakeSpan(8));
                default:
                    _position--;
                    throw Unexpected("integer", b);
            }
        }

        public ulong ReadUInt64()
        {
            byte b = Peek();
            if (b == 0xcf)
            {
                _position++;
                return BinaryPrimitives.ReadUInt64BigEndian(TakeSpan(8));
            }
            long value = ReadInt64();
            if (value < 0) throw new MsgPackException("expected an unsigned integer, got " + value);
            return (ulong)value;
        }

        /// <summary>Reads a float32, float64 or integer as double (the protocol's "float" fields may arrive as ints).</summary>
        public double ReadDouble()
        {
            byte b = Peek();
            if (b == 0xcb)
            {
                _position++;
                return BitConverter.Int64BitsToDouble(BinaryPrimitives.ReadInt64BigEndian(TakeSpan(8)));
            }
            if (b == 0xca)
            {
                _position++;
                return BitConverter.Int32BitsToSingle(BinaryPrimitives.ReadInt32BigEndian(TakeSpan(4)));
            }
            if (b == 0xcf) return ReadUInt64();
            return ReadInt64();
        }

        /// <summary>The UTF-8 bytes of a str, in place.</summary>
        public ReadOnlySpan<byte> ReadStringBytes()
        {
            byte b = Take();
            int length;
            if (b >= 0xa0 && b <= 0xbf) length = b & 0x1f;
            else if (b == 0xd9) length = Take();
            else if (b == 0xda) length = BinaryPrimitives.ReadUInt16BigEndian(TakeSpan(2));
            else if (b == 0xdb) length = CheckedCount(BinaryPrimitives.ReadUInt32BigEndian(TakeSpan(4)));
            else throw Unexpected("str", b);
            return TakeSpan(length);
        }

        public string ReadString()
        {
            if (TryReadNil()) return null;
            var bytes = ReadStringBytes();
            return Encoding.UTF8.GetString(_buffer, _position - bytes.Length, bytes.Length);
        }

        /// <summary>The bytes of a bin, in place.</summary>
        public ReadOnlySpan<byte> ReadBinary()
        {
            int offset, length;
            ReadBinarySegment(out offset, out length);
            return new ReadOnlySpan<byte>(_buffer, offset, length);
        }

        /// <summary>Offset and length of a bin inside Buffer, for callers that keep the position for later.</summary>
        public void ReadBinarySegment(out int offset, out int length)
        {
            byte b = Take();
            if (b == 0xc4) length = Take();
            else if (b == 0xc5) length = BinaryPrimitives.ReadUInt16BigEndian(TakeSpan(2));
            else if (b == 0xc6) length = CheckedCount(BinaryPrimitives.ReadUInt32BigEndian(TakeSpan(4)));
            else throw Unexpected("bin", b);
            offset = _position;
            TakeSpan(length);
        }

        /// <summary>Skips one complete value, nested containers included, without allocating.</summary>
        public void Skip()
        {
            long pending = 1;
            while (pending > 0)
            {
                pending--;
                byte b = Peek();
                switch (PeekType())
                {
                    case MsgPackType.Nil:
                    case MsgPackType.Boolean:
                        _position++;
                        break;
                    case MsgPackType.Integer:
                    case MsgPackType.Float:
                        if (b == 0xcf) ReadUInt64();
                        else ReadDouble();
                        break;
                    case MsgPackType.String:
                        ReadStringBytes();
                        break;
                    case MsgPackType.Binary:
                        ReadBinary();
                        break;
                    case MsgPackType.Array:
                        pending += ReadArrayHeader();
                        break;
                    case MsgPackType.Map:
                        pending += 2L * ReadMapHeader();
                        break;
                    case MsgPackType.Extension:
                        SkipExtension();
                        break;
                }
            }
        }

        /// <summary>
        /// Reads any value as plain objects: null, bool, long (ulong above long.MaxValue), double,
        /// string, byte[], object[] and Dictionary&lt;string, object&gt; (non-string keys are rejected,
        /// as the protocol allows none).
        /// </summary>
        public object ReadObject()
        {
            switch (PeekType())
            {
                case MsgPackType.Nil:
                    _position++;
                    return null;
                case MsgPackType.Boolean:
                    return ReadBoolean();
                case MsgPackType.Integer:
                    if (Peek() == 0xcf)
                    {
                        ulong u = ReadUInt64();
                        return u > long.MaxValue ? (object)u : (long)u;
                    }
                    return ReadInt64();
                case MsgPackType.Float:
                    return ReadDouble();
                case MsgPackType.String:
                    return ReadString();
                case MsgPackType.Binary:
                    return ReadBinary().ToArray();
                case MsgPackType.Array:
                {
                    var items = new object[ReadArrayHeader()];
                    for (int i = 0; i < items.Length; i++) items[i] = ReadObject();
                    return items;
                }
                case MsgPackType.Map:
                {
                    int count = ReadMapHeader();
                    var map = new Dictionary<string, object>(count);
                    for (int i = 0; i < count; i++)
                    {
                        if (PeekType() != MsgPackType.String) throw new MsgPackException("map keys must be strings");
                        string key = ReadString();
                        map[key] = ReadObject();
                    }
                    return map;
                }
                default:
                    throw new MsgPackException("extension types are not used by the protocol");
            }
        }

        void SkipExtension()
        {
            byte b = Take();
            int length;
            switch (b)
            {
                case 0xd4: length = 1; break;
                case 0xd5: length = 2; break;
                case 0xd6: length = 4; break;
                case 0xd7: length = 8; break;
                case 0xd8: length = 16; break;
                case 0xc7: length = Take(); break;
                case 0xc8: length = BinaryPrimitives.ReadUInt16BigEndian(TakeSpan(2)); break;
                default: length = CheckedCount(BinaryPrimitives.ReadUInt32BigEndian(TakeSpan(4))); break;
            }
            TakeSpan(1 + length); // type byte + data
        }

        byte Peek()
        {
            if (_position >= _end) throw new MsgPackException("unexpected end of msgpack data");
            return _buffer[_position];
        }

        byte Take()
        {
            byte b = Peek();
            _position++;
            return b;
        }

        ReadOnlySpan<byte> TakeSpan(int count)
        {
            if (count < 0 || count > _end - _position) throw new MsgPackException("unexpected end of msgpack data");
            var span = new ReadOnlySpan<byte>(_buffer, _position, count);
            _position += count;
            return span;
        }

        int CheckedCount(uint count)
        {
            // A length can never exceed the bytes left; rejecting early stops absurd allocations.
            if (count > (uint)(_end - _position)) throw new MsgPackException("length " + count + " exceeds the message");
            return (int)count;
        }

        static MsgPackException Unexpected(string wanted, byte marker) =>
            new MsgPackException("expected " + wanted + ", found marker 0x" + marker.ToString("x2"));
    }
}
