using System.Collections.Generic;
using AvatarBridge.Core.MsgPack;
using AvatarBridge.Core.Protocol;
using AvatarBridge.Core.Rig;

namespace AvatarBridge.Tests
{
    /// <summary>Rigs and frames as the bridge would send them, built in the test (no bridge in play mode).</summary>
    static class RuntimeRig
    {
        static readonly int[] SmplParents = { -1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21 };

        static Dictionary<string, object> Coordinates() =>
            new Dictionary<string, object> { { "handedness", "right" }, { "up", "+y" }, { "forward", "+z" }, { "units", "m" } };

        public static BodyRig Body()
        {
            var joints = new List<object>();
            var parents = new List<object>();
            var humanoid = new List<object>();
            for (int j = 0; j < 24; j++)
            {
                joints.Add(SmplHumanoidMap.JointNames[j]);
                parents.Add((long)SmplParents[j]);
                humanoid.Add(SmplHumanoidMap.BoneNames[j]);
            }
            return BodyRig.FromMap(new Dictionary<string, object>
            {
                { "kind", "body" }, { "coordinates", Coordinates() }, { "quaternion_order", "xyzw" },
                { "joints", joints.ToArray() }, { "parents", parents.ToArray() }, { "rest_offsets", new byte[24 * 3 * 4] }, { "humanoid", humanoid.ToArray() },
            });
        }

        /// <summary>
        /// The humanoid `body` of a face session opened with body: true (section 5.1.2), in the bridge's order:
        /// torso, arms, legs, then each side's fingers, three joints each; named by HumanBodyBones.
        /// </summary>
        public static BodyRig Humanoid()
        {
            var joints = new List<object> { "Hips", "Spine", "Chest", "UpperChest", "Neck", "Head" };
            var parents = new List<object> { -1L, 0L, 1L, 2L, 3L, 4L };
            foreach (var side in new[] { "Left", "Right" })
            {
                long first = joints.Count;
                joints.AddRange(new object[] { side + "Shoulder", side + "UpperArm", side + "LowerArm", side + "Hand" });
                parents.AddRange(new object[] { 3L, first, first + 1, first + 2 });
            }
            foreach (var side in new[] { "Left", "Right" })
            {
                long first = joints.Count;
                joints.AddRange(new object[] { side + "UpperLeg", side + "LowerLeg", side + "Foot" });
                parents.AddRange(new object[] { 0L, first, first + 1 });
            }
            foreach (var side in new[] { "Left", "Right" })
            {
                long hand = joints.IndexOf(side + "Hand");
                foreach (var finger in new[] { "Thumb", "Index", "Middle", "Ring", "Little" })
                {
                    long first = joints.Count;
                    joints.AddRange(new object[] { side + finger + "Proximal", side + finger + "Intermediate", side + finger + "Distal" });
                    parents.AddRange(new object[] { hand, first, first + 1 });
                }
            }
            return BodyRig.HumanoidFromMap(new Dictionary<string, object>
            {
                { "kind", "body" }, { "coordinates", Coordinates() }, { "quaternion_order", "xyzw" },
                { "joints", joints.ToArray() }, { "parents", parents.ToArray() }, { "rest_offsets", new byte[50 * 3 * 4] }, { "humanoid", joints.ToArray() },
            });
        }

        /// <summary>A face frame with the body: identity rotations but `body` (50×4) as given.</summary>
        public static Frame FaceBodyFrame(float[] body)
        {
            var w = new MsgPackWriter();
            w.WriteMapHeader(17);
            Header(w, "face");
            w.Write("face_found"); w.Write(true);
            w.Write("expression"); w.WriteFloat32Binary(new float[0]);
            w.Write("eyelids"); w.WriteFloat32Binary(new float[2]);
            w.Write("jaw"); w.WriteFloat32Binary(new float[] { 0, 0, 0, 1 });
            w.Write("head"); w.WriteFloat32Binary(new float[] { 0, 0, 0, 1 });
            w.Write("blendshapes"); w.WriteFloat32Binary(new float[52]);
            w.Write("body"); w.WriteFloat32Binary(body);
            return Decode(w);
        }

        public static FaceRig Face(IList<object> blendshapes)
        {
            var expression = new List<object>();
            for (int i = 0; i < 50; i++) expression.Add("Exp" + i.ToString("00"));
            return FaceRig.FromMap(new Dictionary<string, object>
            {
                { "kind", "face" }, { "coordinates", Coordinates() }, { "quaternion_order", "xyzw" },
                // The msgpack reader hands arrays over as object[], so the rig is built the same way.
                { "expression", expression.ToArray() }, { "eyelids", new object[] { "EyelidLeft", "EyelidRight" } },
                { "rotations", new object[] { "head", "jaw" } }, { "blendshapes", new List<object>(blendshapes).ToArray() },
            });
        }

        public static FaceRig ArkitFace()
        {
            var names = new List<object>();
            foreach (var n in ArkitShapes.Names) names.Add(n);
            return Face(names);
        }

        public static Frame MotionFrame(float[] joints)
        {
            var w = new MsgPackWriter();
            w.WriteMapHeader(12);
            Header(w, "motion");
            w.Write("joints"); w.WriteFloat32Binary(joints);
            w.Write("root"); w.WriteFloat32Binary(new float[] { 0, 0.9f, 0 });
            return Decode(w);
        }

        public static Frame FaceFrame(float[] blendshapes, float[] expression = null)
        {
            var w = new MsgPackWriter();
            w.WriteMapHeader(16);
            Header(w, "face");
            w.Write("face_found"); w.Write(true);
            w.Write("expression"); w.WriteFloat32Binary(expression ?? new float[50]);
            w.Write("eyelids"); w.WriteFloat32Binary(new float[2]);
            w.Write("jaw"); w.WriteFloat32Binary(new float[] { 0, 0, 0, 1 });
            w.Write("head"); w.WriteFloat32Binary(new float[] { 0, 0, 0, 1 });
            w.Write("blendshapes"); w.WriteFloat32Binary(blendshapes);
            return Decode(w);
        }

        /// <summary>A speech session's rig: ARKit names, no FLAME codes, speech's extras (section 5.2).</summary>
        public static FaceRig SpeechFace()
        {
            var names = new List<object>();
            foreach (var n in ArkitShapes.Names) names.Add(n);
            return FaceRig.FromMap(new Dictionary<string, object>
            {
                { "kind", "face" }, { "coordinates", Coordinates() }, { "quaternion_order", "xyzw" },
                { "expression", new object[0] }, { "eyelids", new object[] { "EyelidLeft", "EyelidRight" } },
                { "rotations", new object[] { "head", "jaw" } }, { "blendshapes", names.ToArray() },
                { "extras", new object[] { "visemes", "vowels", "voice" } },
            });
        }

        public static Frame SpeechFrame(float[] visemes, float[] vowels)
        {
            var w = new MsgPackWriter();
            w.WriteMapHeader(19);
            Header(w, "face");
            w.Write("face_found"); w.Write(true);
            w.Write("expression"); w.WriteFloat32Binary(new float[0]);
            w.Write("eyelids"); w.WriteFloat32Binary(new float[2]);
            w.Write("jaw"); w.WriteFloat32Binary(new float[] { 0, 0, 0, 1 });
            w.Write("head"); w.WriteFloat32Binary(new float[] { 0, 0, 0, 1 });
            w.Write("blendshapes"); w.WriteFloat32Binary(new float[52]);
            w.Write("visemes"); w.WriteFloat32Binary(visemes);
            w.Write("vowels"); w.WriteFloat32Binary(vowels);
            w.Write("voice"); w.Write(true);
            return Decode(w);
        }

        public static float[] IdentityJoints(int count = 24)
        {
            var joints = new float[count * 4];
            for (int j = 0; j < count; j++) joints[j * 4 + 3] = 1;
            return joints;
        }

        static void Header(MsgPackWriter w, string pipeline)
        {
            w.Write("op"); w.Write("frame");
            w.Write("v"); w.Write(1);
            w.Write("session"); w.Write("0123456789abcdef");
            w.Write("pipeline"); w.Write(pipeline);
            w.Write("seq"); w.Write(0);
            w.Write("input_seq"); w.Write(0);
            w.Write("t_capture_ns"); w.Write(1L);
            w.Write("t_publish_ns"); w.Write(2L);
            w.Write("engine_us"); w.Write(1.0);
            w.Write("batch"); w.Write(1);
        }

        static Frame Decode(MsgPackWriter w)
        {
            var frame = new Frame();
            new FrameDecoder().Decode(w.ToArray(), 0, w.Length, frame, null);
            return frame;
        }
    }
}
