using System;
using System.Collections.Generic;
using AvatarBridge.Core.MsgPack;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>
    /// One message from the request socket (reply, error or ack) as a key/value map. Replies are rare
    /// next to frames, so this trades allocation for convenience; typed views (HelloInfo, SessionInfo...)
    /// read from it and ignore unknown keys, as the contract asks.
    /// </summary>
    public sealed class Reply
    {
        readonly Dictionary<string, object> _fields;

        Reply(Dictionary<string, object> fields)
        {
            _fields = fields;
            Op = GetString("op");
            object id;
            Id = _fields.TryGetValue("id", out id) && id != null ? ToUInt64(id, "id") : 0;
            object ok;
            Ok = _fields.TryGetValue("ok", out ok) && ok is bool && (bool)ok;
        }

        public string Op { get; }
        public ulong Id { get; }
        public bool Ok { get; }
        public bool IsError => Op == "error";
        public IReadOnlyDictionary<string, object> Fields => _fields;
        internal Dictionary<string, object> Map => _fields;

        public static Reply Parse(byte[] buffer, int offset, int count)
        {
            var reader = new MsgPackReader(buffer, offset, count);
            var map = reader.ReadObject() as Dictionary<string, object>;
            if (map == null) throw new ProtocolException("a reply must be a msgpack map");
            return new Reply(map);
        }

        /// <summary>The error this reply carries as an exception (only for error replies).</summary>
        public BridgeErrorException ToException()
        {
            if (!IsError) throw new InvalidOperationException("reply '" + Op + "' is not an error");
            return new BridgeErrorException((int)GetLong("code"), GetString("name"), GetString("message"), Id, GetOptionalString("session"));
        }

        public string GetString(string key) => ReadMap.String(_fields, key, "reply");
        public string GetOptionalString(string key) => ReadMap.OptionalString(_fields, key, "reply");
        public long GetLong(string key) => ReadMap.Long(_fields, key, "reply");
        public double GetDouble(string key) => ReadMap.Double(_fields, key, "reply");
        public string[] GetStringArray(string key) => ReadMap.StringArray(_fields, key, "reply");
        public object[] GetArray(string key) => ReadMap.Array(_fields, key, "reply");

        static ulong ToUInt64(object value, string key)
        {
            if (value is long l && l >= 0) return (ulong)l;
            if (value is ulong u) return u;
            throw new ProtocolException("reply: '" + key + "' must be an unsigned integer");
        }
    }
}
