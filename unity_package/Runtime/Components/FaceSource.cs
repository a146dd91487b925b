namespace AvatarBridge
{
    /// <summary>Which face arrays a BlendshapeDriver maps onto the mesh.</summary>
    public enum FaceSource
    {
        /// <summary>The 52 ARKit weights (the session must be opened with blendshapes on).</summary>
        ArkitBlendshapes,
        /// <summary>The 50 FLAME expression coefficients and the two eyelid values, for FLAME-topology meshes.</summary>
        FlameExpression,
    }
}
