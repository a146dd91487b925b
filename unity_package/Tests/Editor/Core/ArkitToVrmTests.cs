using System;
using AvatarBridge.Core.Rig;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>The ARKit → VRM 1.0 preset mapping the optional VRM driver uses.</summary>
    public class ArkitToVrmTests
    {
        readonly ArkitToVrm _map = new ArkitToVrm(ArkitShapes.Names);
        readonly float[] _presets = new float[ArkitToVrm.PresetNames.Length];

        [Test]
        public void ANeutralFaceIsNeutral()
        {
            _map.Evaluate(new float[52], _presets);
            CollectionAssert.AreEqual(new float[_presets.Length], _presets);
        }

        [Test]
        public void BlinksSplitSoEveryModelClosesEachEyeByItsOwnWeight()
        {
            Evaluate("EyeBlinkLeft", 1f, "EyeBlinkRight", 0.25f);
            Assert.AreEqual(0.25f, Preset("blink"), 1e-6);
            Assert.AreEqual(0.75f, Preset("blinkLeft"), 1e-6);
            Assert.AreEqual(0f, Preset("blinkRight"), 1e-6);
            // A model with all three: left eye = blink + blinkLeft = 1, right = 0.25.
            Assert.AreEqual(1f, Preset("blink") + Preset("blinkLeft"), 1e-6);
        }

        [Test]
        public void GazeToTheAvatarsLeftIsLeftEyeOutRightEyeIn()
        {
            Evaluate("EyeLookOutLeft", 0.8f, "EyeLookInRight", 0.8f);
            Assert.AreEqual(0.8f, Preset("lookLeft"), 1e-6);
            Assert.AreEqual(0f, Preset("lookRight"), 1e-6);
        }

        [Test]
        public void AnOpenJawIsAaAndRoundedLipsAreOuOrOh()
        {
            Evaluate("JawOpen", 0.9f);
            Assert.AreEqual(0.9f, Preset("aa"), 1e-6);
            Assert.AreEqual(0f, Preset("ou"), 1e-6);
            Evaluate("JawOpen", 0.3f, "MouthPucker", 0.8f);
            Assert.AreEqual(0.8f, Preset("ou"), 1e-6);
            Assert.AreEqual(0f, Preset("aa"), 1e-6, "puckered lips are not aa");
        }

        [Test]
        public void ASmileIsHappyAndWeightsStayInRangeWhateverComesIn()
        {
            Evaluate("MouthSmileLeft", 1f, "MouthSmileRight", 1f, "CheekSquintLeft", 1f, "CheekSquintRight", 1f);
            Assert.AreEqual(1f, Preset("happy"), 1e-6);
            var wild = new float[52];
            for (int i = 0; i < wild.Length; i++) wild[i] = i % 3 == 0 ? 5f : i % 3 == 1 ? -2f : float.NaN;
            _map.Evaluate(wild, _presets);
            foreach (var p in _presets) Assert.IsTrue(p >= 0f && p <= 1f, "preset " + p);
        }

        [Test]
        public void PresetNamesAreVrmsAndARigInAnotherOrderMapsByName()
        {
            CollectionAssert.AllItemsAreUnique(ArkitToVrm.PresetNames);
            var reversed = (string[])ArkitShapes.Names.Clone();
            Array.Reverse(reversed);
            var weights = new float[52];
            weights[Array.IndexOf(reversed, "JawOpen")] = 0.5f;
            new ArkitToVrm(reversed).Evaluate(weights, _presets);
            Assert.AreEqual(0.5f, Preset("aa"), 1e-6);
            // A rig without ARKit names (blendshapes off) reads as neutral, not as an error.
            new ArkitToVrm(new string[0]).Evaluate(new float[0], _presets);
            Assert.AreEqual(0f, Preset("aa"));
            Assert.Throws<ArgumentException>(() => _map.Evaluate(weights, new float[3]));
        }

        void Evaluate(params object[] pairs)
        {
            var weights = new float[52];
            for (int i = 0; i < pairs.Length; i += 2) weights[ArkitShapes.IndexOf((string)pairs[i])] = (float)pairs[i + 1];
            _map.Evaluate(weights, _presets);
        }

        float Preset(string name) => _presets[Array.IndexOf(ArkitToVrm.PresetNames, name)];
    }
}
