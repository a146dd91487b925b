using System;

namespace AvatarBridge.Core.Rig
{
    /// <summary>
    /// ARKit-52 weights to VRM 1.0's preset expressions, for VRM avatars without PerfectSync shapes
    /// (a stock VRoid export has the presets only). Each preset is a fixed blend of the ARKit weights
    /// named in its comment below; the visemes and emotions are approximations (ARKit measures
    /// muscles, VRM names outcomes), the blinks and gaze are direct. Blinks are split so that a model
    /// with only "blink", or with all three, both close each eye by its own weight: blink = min(L, R),
    /// blinkLeft/Right = the rest. Left and right are the avatar's own, as in both standards.
    /// </summary>
    public sealed class ArkitToVrm
    {
        /// <summary>VRM 1.0 preset names (UniVRM's ExpressionPreset spelling), the order of Evaluate's output.</summary>
        public static readonly string[] PresetNames =
        {
            "happy", "angry", "sad", "relaxed", "surprised", "aa", "ih", "ou", "ee", "oh",
            "blink", "blinkLeft", "blinkRight", "lookUp", "lookDown", "lookLeft", "lookRight",
        };

        // Indices into the rig's weights, resolved once by name (-1: the rig lacks it, read as 0).
        readonly int _smileL, _smileR, _browDownL, _browDownR, _frownL, _frownR, _browInnerUp, _eyeWideL, _eyeWideR,
            _jawOpen, _funnel, _pucker, _stretchL, _stretchR, _lowerDownL, _lowerDownR, _blinkL, _blinkR,
            _lookUpL, _lookUpR, _lookDownL, _lookDownR, _lookOutL, _lookInL, _lookOutR, _lookInR, _cheekSquintL, _cheekSquintR;

        /// <summary>rigNames: the face rig's blendshape names, in the order frames carry the weights.</summary>
        public ArkitToVrm(string[] rigNames)
        {
            if (rigNames == null) throw new ArgumentNullException(nameof(rigNames));
            Func<string, int> at = n => Array.IndexOf(rigNames, n);
            _smileL = at("MouthSmileLeft"); _smileR = at("MouthSmileRight");
            _browDownL = at("BrowDownLeft"); _browDownR = at("BrowDownRight");
            _frownL = at("MouthFrownLeft"); _frownR = at("MouthFrownRight");
            _browInnerUp = at("BrowInnerUp"); _eyeWideL = at("EyeWideLeft"); _eyeWideR = at("EyeWideRight");
            _jawOpen = at("JawOpen"); _funnel = at("MouthFunnel"); _pucker = at("MouthPucker");
            _stretchL = at("MouthStretchLeft"); _stretchR = at("MouthStretchRight");
            _lowerDownL = at("MouthLowerDownLeft"); _lowerDownR = at("MouthLowerDownRight");
            _blinkL = at("EyeBlinkLeft"); _blinkR = at("EyeBlinkRight");
            _lookUpL = at("EyeLookUpLeft"); _lookUpR = at("EyeLookUpRight");
            _lookDownL = at("EyeLookDownLeft"); _lookDownR = at("EyeLookDownRight");
            _lookOutL = at("EyeLookOutLeft"); _lookInL = at("EyeLookInLeft");
            _lookOutR = at("EyeLookOutRight"); _lookInR = at("EyeLookInRight");
            _cheekSquintL = at("CheekSquintLeft"); _cheekSquintR = at("CheekSquintRight");
        }

        /// <summary>Writes PresetNames.Length weights in [0, 1] from one frame's ARKit weights.</summary>
        public void Evaluate(ReadOnlySpan<float> w, Span<float> presets)
        {
            if (presets.Length != PresetNames.Length) throw new ArgumentException("presets must hold " + PresetNames.Length + " values", nameof(presets));
            float smile = Mean(w, _smileL, _smileR), jaw = Get(w, _jawOpen), funnel = Get(w, _funnel), pucker = Get(w, _pucker);
            presets[0] = Clamp(smile + 0.5f * Mean(w, _cheekSquintL, _cheekSquintR));      // happy: smile, cheeks raised
            presets[1] = Mean(w, _browDownL, _browDownR);                                   // angry: brows lowered
            presets[2] = Clamp(Mean(w, _frownL, _frownR) + 0.5f * Get(w, _browInnerUp) * (1 - smile)); // sad: frown, inner brows up
            presets[3] = 0f;                                                                // relaxed: no ARKit counterpart
            presets[4] = Clamp(Get(w, _browInnerUp) * Mean(w, _eyeWideL, _eyeWideR) * 2);    // surprised: brows up and eyes wide together
            presets[5] = Clamp(jaw - Math.Max(funnel, pucker));                             // aa: open jaw, lips relaxed
            presets[6] = Clamp(Mean(w, _stretchL, _stretchR) * (1 - jaw));                  // ih: lips stretched, jaw nearly closed
            presets[7] = pucker;                                                            // ou: lips pushed forward
            presets[8] = Clamp(Mean(w, _lowerDownL, _lowerDownR) * (1 - pucker));           // ee: lower lip down, lips spread
            presets[9] = Clamp(funnel * (0.5f + jaw));                                       // oh: rounded lips, jaw open
            float blinkL = Get(w, _blinkL), blinkR = Get(w, _blinkR), both = Math.Min(blinkL, blinkR);
            presets[10] = both;
            presets[11] = blinkL - both;
            presets[12] = blinkR - both;
            presets[13] = Mean(w, _lookUpL, _lookUpR);
            presets[14] = Mean(w, _lookDownL, _lookDownR);
            // Looking to the avatar's left turns the left eye outwards and the right eye inwards.
            presets[15] = Mean(w, _lookOutL, _lookInR);
            presets[16] = Mean(w, _lookInL, _lookOutR);
        }

        /// <summary>
        /// Replaces the approximated aa, ih, ou, ee, oh in presets (Evaluate's output) by a speech frame's
        /// vowels A, I, U, E, O (section 5.2), which the bridge measured from the voice itself.
        /// </summary>
        public static void SetVowels(ReadOnlySpan<float> vowels, Span<float> presets)
        {
            if (vowels.Length != SpeechShapes.VowelNames.Length) throw new ArgumentException("vowels must hold " + SpeechShapes.VowelNames.Length + " values", nameof(vowels));
            if (presets.Length != PresetNames.Length) throw new ArgumentException("presets must hold " + PresetNames.Length + " values", nameof(presets));
            for (int v = 0; v < vowels.Length; v++) presets[VowelPresetIndex[v]] = Clamp(vowels[v]);
        }

        static readonly int[] VowelPresetIndex = Array.ConvertAll(SpeechShapes.VrmVowelPresets, p => Array.IndexOf(PresetNames, p));

        static float Get(ReadOnlySpan<float> w, int i) => i < 0 || i >= w.Length ? 0f : Clamp(w[i]);

        static float Mean(ReadOnlySpan<float> w, int a, int b) => 0.5f * (Get(w, a) + Get(w, b));

        static float Clamp(float v) => float.IsNaN(v) ? 0f : Math.Min(1f, Math.Max(0f, v));
    }
}
