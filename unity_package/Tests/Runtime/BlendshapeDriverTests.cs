using System.Collections.Generic;
using AvatarBridge.Core.Protocol;
using NUnit.Framework;
using UnityEngine;

namespace AvatarBridge.Tests
{
    /// <summary>A BlendshapeDriver on a generated mesh, fed a rig and a frame without a bridge.</summary>
    public class BlendshapeDriverTests
    {
        GameObject _face;

        [TearDown]
        public void TearDown() => Object.DestroyImmediate(_face);

        [Test]
        public void ArkitWeightsLandOnMatchingShapesInPercent()
        {
            _face = new GameObject("face");
            var renderer = _face.AddComponent<SkinnedMeshRenderer>();
            renderer.sharedMesh = MeshWithShapes("blendShape1.jawOpen", "eyeBlink_L", "unrelated");
            var driver = _face.AddComponent<BlendshapeDriver>();
            driver.Renderers = new[] { renderer };
            driver.SmoothingTime = 0;

            var names = new List<object>();
            for (int i = 0; i < 52; i++) names.Add("Shape" + i);
            names[17] = "JawOpen";
            names[0] = "EyeBlinkLeft";
            driver.Bind(RuntimeRig.Face(names), 1);
            Assert.AreEqual(2, driver.BoundCount);

            var weights = new float[52];
            weights[17] = 0.5f;
            weights[0] = 1.5f; // out of range: clamped to 100 %
            driver.Take(RuntimeRig.FaceFrame(weights));
            driver.Apply(0.016f);
            Assert.AreEqual(50f, renderer.GetBlendShapeWeight(0), 1e-3);
            Assert.AreEqual(100f, renderer.GetBlendShapeWeight(1), 1e-3);
            Assert.AreEqual(0f, renderer.GetBlendShapeWeight(2), 1e-3);
        }

        [Test]
        public void TheGeneratedFaceBindsAllFiftyTwoShapes()
        {
            SkinnedMeshRenderer face;
            _face = ProceduralAvatar.Build("avatar", out face);
            var driver = _face.AddComponent<BlendshapeDriver>();
            driver.Renderers = new[] { face };
            driver.Bind(RuntimeRig.ArkitFace(), 1);
            Assert.AreEqual(52, driver.BoundCount);
        }

        [Test]
        public void ChangingTheSourceAtRunTimeRebindsInsteadOfThrowing()
        {
            _face = new GameObject("face");
            var renderer = _face.AddComponent<SkinnedMeshRenderer>();
            renderer.sharedMesh = MeshWithShapes("JawOpen", "Exp03");
            var driver = _face.AddComponent<BlendshapeDriver>();
            driver.Renderers = new[] { renderer };
            driver.SmoothingTime = 0;
            var rig = RuntimeRig.ArkitFace();
            driver.Bind(rig, 1);
            Assert.AreEqual(1, driver.BoundCount);

            driver.Source = FaceSource.FlameExpression; // no rebind by hand
            var expression = new float[50];
            expression[3] = 1.5f;
            Assert.DoesNotThrow(() => driver.Take(RuntimeRig.FaceFrame(new float[52], expression)));
            driver.Bind(rig, 1); // what the next LateUpdate does after the change
            Assert.AreEqual(1, driver.BoundCount, "now Exp03 is the bound shape");
            driver.Take(RuntimeRig.FaceFrame(new float[52], expression));
            driver.Apply(0.016f);
            Assert.AreEqual(150f, renderer.GetBlendShapeWeight(1), 1e-3, "FLAME coefficient 1.5 × Scale 100");
        }

        [Test]
        public void VisemesAndVowelsLandOnTheirShapesUnderTheUsualSpellings()
        {
            _face = new GameObject("face");
            var renderer = _face.AddComponent<SkinnedMeshRenderer>();
            renderer.sharedMesh = MeshWithShapes("viseme_aa", "viseme_U", "vrc.v_pp", "Fcl_MTH_A", "Fcl_MTH_O");
            var driver = _face.AddComponent<BlendshapeDriver>();
            driver.Renderers = new[] { renderer };
            driver.SmoothingTime = 0;
            driver.Session = BridgeSessionKind.Speech;
            driver.Source = FaceSource.Visemes;
            var rig = RuntimeRig.SpeechFace();
            driver.Bind(rig, 1);
            Assert.AreEqual(3, driver.BoundCount, "aa, ou and PP");
            var visemes = new float[15];
            visemes[10] = 0.6f; // aa
            visemes[14] = 0.3f; // ou
            visemes[1] = 0.1f;  // PP
            var frame = RuntimeRig.SpeechFrame(visemes, new[] { 0.7f, 0f, 0f, 0f, 0.2f });
            driver.Take(frame);
            driver.Apply(0.016f);
            Assert.AreEqual(60f, renderer.GetBlendShapeWeight(0), 1e-3);
            Assert.AreEqual(30f, renderer.GetBlendShapeWeight(1), 1e-3);
            Assert.AreEqual(10f, renderer.GetBlendShapeWeight(2), 1e-3);

            driver.Source = FaceSource.Vowels;
            driver.Bind(rig, 1);
            Assert.AreEqual(2, driver.BoundCount, "A and O");
            driver.Take(frame);
            driver.Apply(0.016f);
            Assert.AreEqual(70f, renderer.GetBlendShapeWeight(3), 1e-3);
            Assert.AreEqual(20f, renderer.GetBlendShapeWeight(4), 1e-3);
        }

        static Mesh MeshWithShapes(params string[] names)
        {
            var mesh = new Mesh { vertices = new[] { new Vector3(0, 0, 0), new Vector3(1, 0, 0), new Vector3(0, 1, 0) } };
            var deltas = new Vector3[3];
            foreach (var n in names) mesh.AddBlendShapeFrame(n, 100f, deltas, null, null);
            return mesh;
        }
    }
}
