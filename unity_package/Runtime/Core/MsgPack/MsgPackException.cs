using System;

namespace AvatarBridge.Core.MsgPack
{
    /// <summary>Thrown when bytes are not the msgpack the caller expected (truncated, wrong type).</summary>
    public sealed class MsgPackException : Exception
    {
        public MsgPackException(string message) : base(message)
        {
        }
    }
}
