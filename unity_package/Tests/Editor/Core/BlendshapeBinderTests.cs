using System.Collections.Generic;
using AvatarBridge.Core.Rig;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    public class BlendshapeBinderTests
    {
        [Test]
        public void ExporterSpellingsNormalizeToOneName()
        {
            Assert.AreEqual("eyeblinkleft", BlendshapeBinder.Normalize("EyeBlinkLeft"));   // ARKit / Unreal
            Assert.AreEqual("eyeblinkleft", BlendshapeBinder.Normalize("eyeBlinkLeft"));   // Apple
            Assert.AreEqual("eyeblinkleft", BlendshapeBinder.Normalize("eyeBlink_L"));     // Apple raw / Blender
            Assert.AreEqual("jawopen", BlendshapeBinder.Normalize("blendShape1.jawOpen")); // FBX prefix
            Assert.AreEqual("mouthsmileright", BlendshapeBinder.Normalize("Mouth_Smile-R"));
        }

        [Test]
        public void BindsByNameAndLetsExplicitPairsWin()
        {
            string[] sources = { "EyeBlinkLeft", "JawOpen", "TongueOut", "Exp00" };
            string[] mesh = { "Basis", "blendShape1.eyeBlink_L", "blendShape1.jawOpen", "mouthOpenWide", "tongueOut" };
            var pairs = new List<KeyValuePair<string, KeyValuePair<string, float>>>
            {
                Pair("JawOpen", "mouthOpenWide", 0.5f),  // overrides the by-name match to jawOpen
                Pair("NotInRig", "tongueOut", 1f),       // asset written for another rig: skipped
            };
            var bindings = BlendshapeBinder.Bind(sources, mesh, pairs, true);
            Assert.AreEqual(3, bindings.Length);
            Assert.Contains(new BlendshapeBinding(1, 3, 0.5f), bindings);
            Assert.Contains(new BlendshapeBinding(0, 1, 1f), bindings);
            Assert.Contains(new BlendshapeBinding(2, 4, 1f), bindings);

            var explicitOnly = BlendshapeBinder.Bind(sources, mesh, pairs, false);
            Assert.AreEqual(1, explicitOnly.Length);
        }

        [Test]
        public void EvaluateScalesToPercentClampsAndSumsSharedTargets()
        {
            var bindings = new[]
            {
                new BlendshapeBinding(0, 1, 1f),
                new BlendshapeBinding(1, 2, 1f),
                new BlendshapeBinding(2, 2, 1f),   // two sources on one target: summed, then clamped
                new BlendshapeBinding(3, 3, 1f),
                new BlendshapeBinding(4, 4, 2f),
            };
            var output = new float[] { 42, -1, -1, -1, -1 };
            BlendshapeBinder.Evaluate(bindings, new[] { 0.25f, 0.7f, 0.6f, float.NaN, 0.2f }, 0f, 1f, 100f, output);
            Assert.AreEqual(42f, output[0], "unbound shapes are left alone");
            Assert.AreEqual(25f, output[1], 1e-4);
            Assert.AreEqual(100f, output[2], 1e-4);
            Assert.AreEqual(0f, output[3], "NaN becomes 0, never reaches the mesh");
            Assert.AreEqual(40f, output[4], 1e-4);

            // Signed FLAME coefficients keep their sign within the range given.
            BlendshapeBinder.Evaluate(new[] { new BlendshapeBinding(0, 0, 1f) }, new[] { -2.5f }, -2f, 2f, 100f, output);
            Assert.AreEqual(-200f, output[0], 1e-4);
        }

        [Test]
        public void SmoothingIsFrameRateIndependent()
        {
            // Two 1/60 s steps move as far as one 1/30 s step.
            float a60 = ExponentialSmoothing.Alpha(1 / 60f, 0.05f);
            float a30 = ExponentialSmoothing.Alpha(1 / 30f, 0.05f);
            float after60 = 1 - (1 - a60) * (1 - a60);
            Assert.AreEqual(a30, after60, 1e-5);
            Assert.AreEqual(1f, ExponentialSmoothing.Alpha(0.01f, 0f), "time constant 0 = no smoothing");
            var state = new float[] { 0, 10 };
            ExponentialSmoothing.Apply(state, new float[] { 10, 10 }, 0.5f);
            Assert.AreEqual(new[] { 5f, 10f }, state);
        }

        static KeyValuePair<string, KeyValuePair<string, float>> Pair(string source, string target, float gain) =>
            new KeyValuePair<string, KeyValuePair<string, float>>(source, new KeyValuePair<string, float>(target, gain));
    }
}
