using System;
using System.Buffers.Binary;

namespace AvatarBridge.Core.Client
{
    /// <summary>A 16-character session id as two integers: a dictionary key a batch row is looked up by without allocating.</summary>
    readonly struct SessionKey : IEquatable<SessionKey>
    {
        readonly ulong _high, _low;

        SessionKey(ulong high, ulong low)
        {
            _high = high;
            _low = low;
        }

        /// <summary>The id's 16 ASCII bytes, as a batch's session column holds them.</summary>
        public static SessionKey Of(ReadOnlySpan<byte> id) =>
            new SessionKey(BinaryPrimitives.ReadUInt64LittleEndian(id), BinaryPrimitives.ReadUInt64LittleEndian(id.Slice(8)));

        /// <summary>The same key from the id string (ASCII: the bridge's ids are hex).</summary>
        public static SessionKey Of(string id)
        {
            Span<byte> bytes = stackalloc byte[16];
            for (int i = 0; i < 16; i++) bytes[i] = (byte)id[i];
            return Of(bytes);
        }

        public bool Equals(SessionKey other) => _high == other._high && _low == other._low;
        public override bool Equals(object obj) => obj is SessionKey && Equals((SessionKey)obj);
        public override int GetHashCode() => (_high ^ (_low * 0x9E3779B97F4A7C15UL)).GetHashCode();
    }
}
