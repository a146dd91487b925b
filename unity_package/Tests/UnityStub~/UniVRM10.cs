// COMPILE CHECK ONLY: the UniVRM 1.0 (com.vrmc.vrm, assembly VRM10) members Runtime/Vrm uses, as
// UniVRM declares them from 0.100.0 (the version the asmdef's versionDefines requires) through
// 0.131.1 (vrm-c/UniVRM, Packages/VRM10/Runtime/Components/...). Listed in api-surface.txt too.
using System;
using System.Collections.Generic;
using UnityEngine;

namespace UniVRM10
{
    public enum ExpressionPreset
    {
        custom = 0, happy = 1, angry = 2, sad = 3, relaxed = 4, surprised = 5, aa = 6, ih = 7, ou = 8, ee = 9, oh = 10,
        blink = 11, blinkLeft = 12, blinkRight = 13, lookUp = 14, lookDown = 15, lookLeft = 16, lookRight = 17,
    }

    public readonly struct ExpressionKey
    {
        public readonly ExpressionPreset Preset;
        public readonly string Name;
        public static ExpressionKey CreateFromPreset(ExpressionPreset preset) => default(ExpressionKey);
    }

    public sealed class Vrm10RuntimeExpression
    {
        public IReadOnlyList<ExpressionKey> ExpressionKeys => null;
        public void SetWeight(ExpressionKey expressionKey, float weight) { }
    }

    public class Vrm10Runtime
    {
        public Vrm10RuntimeExpression Expression => null;
    }

    public class Vrm10Instance : MonoBehaviour
    {
        public Vrm10Runtime Runtime => null;
    }
}
