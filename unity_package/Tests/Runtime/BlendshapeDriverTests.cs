using System.Collections.Generic;
using AvatarBridge.Core.MsgPack;
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
            driver.Bind(FaceRig.FromMap(Rig(names)), 1);
            Assert.AreEqual(2, driver.BoundCount);

            var weights = new float[52];
            weights[17] = 0.5f;
            weights[0] = 1.5f; // out of range: clamped to 100 %
            driver.Take(FaceFrame(weights));
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

        static Mesh MeshWithShapes(params string[] names)
        {
            var mesh = new Mesh { vertices = new[] { new Vector3(0, 0, 0), new Vector3(1, 0, 0), new Vector3(0, 1, 0) } };
            var deltas = new Vector3[3];
            foreach (var n in names) mesh.AddBlendShapeFrame(n, 100f, deltas, null, null);
            return mesh;
        }

        static Dictionary<string, object> Rig(List<object> blendshapes)
        {
            var expression = new List<object>();
            for (int i = 0; i < 50; i++) expression.Add("Exp" + i.ToString("00"));
            return new Dictionary<string, object>
            {
                { "kind", "face" },
                { "coordinates", new Dictionary<string, object> { { "handedness", "right" }, { "up", "+y" }, { "forward", "+z" }, { "units", "m" } } },
                { "quaternion_order", "xyzw" },
                { "expression", expression },
                { "eyelids", new List<object> { "EyelidLeft", "EyelidRight" } },
                { "rotations", new List<object> { "head", "jaw" } },
                { "blendshapes", blendshapes },
            };
        }

        static Frame FaceFrame(float[] blendshapes)
        {
            var w = new MsgPackWriter();
            w.WriteMapHeader(16);
            w.Write("op"); w.Write("frame");
            w.Write("v"); w.Write(1);
            w.Write("session"); w.Write("0123456789abcdef");
            w.Write("pipeline"); w.Write("face");
            w.Write("seq"); w.Write(0);
            w.Write("input_seq"); w.Write(0);
            w.Write("t_capture_ns"); w.Write(1L);
            w.Write("t_publish_ns"); w.Write(2L);
            w.Write("engine_us"); w.Write(1.0);
            w.Write("batch"); w.Write(1);
            w.Write("face_found"); w.Write(true);
            w.Write("expression"); w.WriteFloat32Binary(new float[50]);
            w.Write("eyelids"); w.WriteFloat32Binary(new float[2]);
            w.Write("jaw"); w.WriteFloat32Binary(new float[] { 0, 0, 0, 1 });
            w.Write("head"); w.WriteFloat32Binary(new float[] { 0, 0, 0, 1 });
            w.Write("blendshapes"); w.WriteFloat32Binary(blendshapes);
            var frame = new Frame();
            new FrameDecoder().Decode(w.ToArray(), 0, w.Length, frame, null);
            return frame;
        }
    }
}
