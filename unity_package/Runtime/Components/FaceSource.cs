namespace AvatarBridge
{
    /// <summary>Which face arrays a BlendshapeDriver maps onto the mesh.</summary>
    public enum FaceSource
    {
        /// <summary>The 52 ARKit weights (the session must be opened with blendshapes on).</summary>
        ArkitBlendshapes,
        /// <summary>The 50 FLAME expression coefficients and the two eyelid values, for FLAME-topology meshes.</summary>
        FlameExpression,
        /// <summary>Speech frames' 15 Oculus visemes, for viseme shapes (Ready Player Me "viseme_aa", VRChat "vrc.v_aa", OVRLipSync "aa").</summary>
        Visemes,
        /// <summary>Speech frames' vowels A, I, U, E, O, for vowel shapes (VRoid "Fcl_MTH_A", MMD "あ", "A").</summary>
        Vowels,
    }
}
