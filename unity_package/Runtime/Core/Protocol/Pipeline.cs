namespace AvatarBridge.Core.Protocol
{
    /// <summary>The bridge's pipelines; a session runs one.</summary>
    public enum Pipeline
    {
        Face,
        Motion,
        /// <summary>A voice drives the face (section 5.2): audio in, face frames out (their Pipeline is Face) with visemes, vowels and voice activity.</summary>
        Speech,
    }
}
