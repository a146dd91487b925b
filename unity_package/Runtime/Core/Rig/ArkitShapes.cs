namespace AvatarBridge.Core.Rig
{
    /// <summary>
    /// The 52 ARKit blendshape names in the order the bridge's face rig sends them (Unreal's
    /// EARFaceBlendShape order). Frames carry weights in the rig's own order, so drivers map by name;
    /// this list is for code that needs the set itself (the generated demo face, the VRM mapping).
    /// </summary>
    public static class ArkitShapes
    {
        public static readonly string[] Names =
        {
            "EyeBlinkLeft", "EyeLookDownLeft", "EyeLookInLeft", "EyeLookOutLeft", "EyeLookUpLeft", "EyeSquintLeft",
            "EyeWideLeft", "EyeBlinkRight", "EyeLookDownRight", "EyeLookInRight", "EyeLookOutRight", "EyeLookUpRight",
            "EyeSquintRight", "EyeWideRight", "JawForward", "JawLeft", "JawRight", "JawOpen",
            "MouthClose", "MouthFunnel", "MouthPucker", "MouthLeft", "MouthRight", "MouthSmileLeft",
            "MouthSmileRight", "MouthFrownLeft", "MouthFrownRight", "MouthDimpleLeft", "MouthDimpleRight", "MouthStretchLeft",
            "MouthStretchRight", "MouthRollLower", "MouthRollUpper", "MouthShrugLower", "MouthShrugUpper", "MouthPressLeft",
            "MouthPressRight", "MouthLowerDownLeft", "MouthLowerDownRight", "MouthUpperUpLeft", "MouthUpperUpRight", "BrowDownLeft",
            "BrowDownRight", "BrowInnerUp", "BrowOuterUpLeft", "BrowOuterUpRight", "CheekPuff", "CheekSquintLeft",
            "CheekSquintRight", "NoseSneerLeft", "NoseSneerRight", "TongueOut",
        };

        /// <summary>Index of name in Names, -1 when it is not an ARKit name (exact spelling).</summary>
        public static int IndexOf(string name) => System.Array.IndexOf(Names, name);
    }
}
