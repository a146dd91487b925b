namespace AvatarBridge.Core.MsgPack
{
    /// <summary>The msgpack type families a reader distinguishes.</summary>
    public enum MsgPackType
    {
        Nil,
        Boolean,
        Integer,
        Float,
        String,
        Binary,
        Array,
        Map,
        Extension,
    }
}
