namespace AvatarBridge.Core.Protocol
{
    /// <summary>Stable error codes of the bridge's error replies (docs/protocol.md section 6).</summary>
    public enum ErrorCode
    {
        Malformed = 100,
        TooLarge = 101,
        UnsupportedVersion = 102,
        UnknownOp = 103,
        MissingField = 104,
        BadType = 105,
        BadValue = 106,
        BadSize = 107,
        BadImage = 108, // an image's data is not a decodable image of its format (a corrupt JPEG; protocol 1.3)
        UnknownSession = 200,
        UnknownPipeline = 201,
        UnknownModel = 202,
        WrongInputKind = 203,
        SessionLimit = 204,
        Overloaded = 205,
        Internal = 500,
    }
}
