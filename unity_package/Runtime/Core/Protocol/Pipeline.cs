namespace AvatarBridge.Core.Protocol
{
    /// <summary>The bridge's pipelines; a session runs one.</summary>
    public enum Pipeline
    {
        Face,
        Motion,
    }
}
