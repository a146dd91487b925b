using System;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>The bridge answered a request with an error reply.</summary>
    public sealed class BridgeErrorException : Exception
    {
        public BridgeErrorException(int code, string name, string message, ulong requestId, string session)
            : base(name + " (" + code + "): " + message)
        {
            Code = code;
            Name = name;
            BridgeMessage = message;
            RequestId = requestId;
            Session = session;
        }

        /// <summary>The numeric code; compare with ErrorCode (a newer bridge may send codes this enum lacks).</summary>
        public int Code { get; }
        public ErrorCode ErrorCode => (ErrorCode)Code;
        public string Name { get; }
        public string BridgeMessage { get; }
        public ulong RequestId { get; }
        public string Session { get; }
    }
}
