using System;

namespace AvatarBridge.Core.Zmtp
{
    /// <summary>The peer broke ZMTP (bad greeting, refused handshake, oversized frame) or closed the connection.</summary>
    public sealed class ZmtpException : Exception
    {
        public ZmtpException(string message) : base(message)
        {
        }

        public ZmtpException(string message, Exception inner) : base(message, inner)
        {
        }
    }
}
