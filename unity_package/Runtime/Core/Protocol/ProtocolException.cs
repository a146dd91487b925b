using System;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>A message from the bridge does not follow docs/protocol.md (missing key, wrong type or size).</summary>
    public sealed class ProtocolException : Exception
    {
        public ProtocolException(string message) : base(message)
        {
        }
    }
}
