using AvatarBridge.Core.Rig;
using System.Collections.Generic;
using System;
using AvatarBridge.Core.MsgPack;
using AvatarBridge.Core.Protocol;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    public class FrameDecoderTests
    {
        const string Session = "0123456789abcdef";

        [Test]
        public void DecodesAFaceFrameEncodedByTheBridge()
        {
            var payload = TestEnvironment.Fixture("face_frame");
            var frame = new Frame();
            new FrameDecoder().Decode(payload, 0, payload.Length, frame, Session);

            Assert.AreEqual(Pipeline.Face, frame.Pipeline);
            Assert.AreSame(Session, frame.Session, "the expected session string is reused, not reallocated");
            Assert.AreEqual(7UL, frame.Seq);
            Assert.AreEqual(5UL, frame.InputSeq);
            Assert.AreEqual(1700000000000000000L, frame.CaptureNs);
            Assert.Greater(frame.PublishNs, 1700000000000000000L);
            Assert.AreEqual(1234.5, frame.EngineMicroseconds);
            Assert.AreEqual(3, frame.Batch);
            Assert.IsTrue(frame.FaceFound);
            // Formulas of make_fixtures.py.
            Assert.AreEqual(50, frame.Expression.Length);
            for (int i = 0; i < 50; i++) Assert.AreEqual(i / 100f, frame.Expression[i], 1e-7);
            Assert.AreEqual(new[] { 0.25f, 0.75f }, frame.Eyelids.ToArray());
            Assert.AreEqual(new[] { 0f, 0f, 0f, 1f }, frame.Jaw.ToArray());
            Assert.AreEqual(new[] { 0f, 0.6f, 0f, 0.8f }, frame.Head.ToArray());
            Assert.AreEqual(52, frame.Blendshapes.Length);
            for (int i = 0; i < 52; i++) Assert.AreEqual(i / 51f, frame.Blendshapes[i], 1e-7);
            Assert.AreEqual(0, frame.Joints.Length);
        }

        [Test]
        public void DecodesAFaceFrameWithoutBlendshapes()
        {
            var payload = TestEnvironment.Fixture("face_frame_no_blendshapes");
            var frame = new Frame();
            new FrameDecoder().Decode(payload, 0, payload.Length, frame, null);
            Assert.AreEqual(Session, frame.Session);
            Assert.AreEqual(8UL, frame.Seq);
            Assert.AreEqual(0, frame.Blendshapes.Length);
            Assert.AreEqual(50, frame.Expression.Length);
        }

        [Test]
        public void DecodesAMotionFrameEncodedByTheBridge()
        {
            var payload = TestEnvironment.Fixture("motion_frame");
            var frame = new Frame();
            new FrameDecoder().Decode(payload, 0, payload.Length, frame, Session);
            Assert.AreEqual(Pipeline.Motion, frame.Pipeline);
            Assert.AreEqual(1UL << 40, frame.Seq);
            Assert.AreEqual(1UL << 33, frame.InputSeq);
            Assert.AreEqual(42.0, frame.EngineMicroseconds);
            Assert.AreEqual(96, frame.Joints.Length);
            Assert.AreEqual(new[] { 0.6f, 0f, 0f, 0.8f }, frame.Joints.Slice(4, 4).ToArray());
            Assert.AreEqual(new[] { 0f, 0f, 0f, 1f }, frame.Joints.Slice(92, 4).ToArray());
            Assert.AreEqual(new[] { 0.1f, 0.9f, -0.2f }, frame.Root.ToArray());
            Assert.AreEqual(0, frame.Expression.Length);
        }

        [Test]
        public void DecodingAllocatesNothing()
        {
            var payload = TestEnvironment.Fixture("face_frame");
            var frame = new Frame();
            var decoder = new FrameDecoder();
            decoder.Decode(payload, 0, payload.Length, frame, Session); // warm up (JIT, statics)
            float sum = 0;
            long before = GC.GetAllocatedBytesForCurrentThread();
            for (int i = 0; i < 1000; i++)
            {
                decoder.Decode(payload, 0, payload.Length, frame, Session);
                sum += frame.Blendshapes[51] + frame.Expression[0];
            }
            long allocated = GC.GetAllocatedBytesForCurrentThread() - before;
            Assert.AreEqual(0, allocated, "bytes allocated by 1000 decodes");
            Assert.AreEqual(1000f, sum, 1e-3);
        }

        [Test]
        public void DecodesAtAnOffsetInsideALargerBuffer()
        {
            var payload = TestEnvironment.Fixture("motion_frame");
            var buffer = new byte[payload.Length + 13];
            Buffer.BlockCopy(payload, 0, buffer, 5, payload.Length);
            var frame = new Frame();
            new FrameDecoder().Decode(buffer, 5, payload.Length, frame, Session);
            Assert.AreEqual(new[] { 0.1f, 0.9f, -0.2f }, frame.Root.ToArray());
        }

        [Test]
        public void ArraysAreTheSameAtEveryAlignmentAndOutliveTheBuffer()
        {
            // Bins start at any byte offset; the frame copies them into its own aligned storage.
            var payload = TestEnvironment.Fixture("face_frame");
            for (int shift = 0; shift < 4; shift++)
            {
                var buffer = new byte[payload.Length + shift];
                Buffer.BlockCopy(payload, 0, buffer, shift, payload.Length);
                var frame = new Frame();
                new FrameDecoder().Decode(buffer, shift, payload.Length, frame, Session);
                Array.Clear(buffer, 0, buffer.Length);
                Assert.AreEqual(1f, frame.Blendshapes[51], 1e-6, "shift " + shift);
                Assert.AreEqual(0.49f, frame.Expression[49], 1e-6, "shift " + shift);
                Assert.AreEqual(new[] { 0.25f, 0.75f }, frame.Eyelids.ToArray());
                Assert.AreEqual(new[] { 0f, 0.6f, 0f, 0.8f }, frame.Head.ToArray());
            }
        }

        [Test]
        public void IgnoresUnknownKeysAndKeyOrder()
        {
            var w = MotionFrame(reverse: true, extraKey: true);
            var frame = new Frame();
            new FrameDecoder().Decode(w.Buffer, 0, w.Length, frame, Session);
            Assert.AreEqual(9UL, frame.Seq);
            Assert.AreEqual(1f, frame.Joints[3]);
        }

        [Test]
        public void RejectsFramesThatBreakTheContract()
        {
            AssertRejected(MotionFrame(dropKey: "root"), "root");
            AssertRejected(MotionFrame(dropKey: "seq"), "seq");
            AssertRejected(MotionFrame(jointCount: 23), "joints");
            AssertRejected(MotionFrame(version: 2), "version");
            AssertRejected(MotionFrame(pipeline: "hands"), "pipeline");
            AssertRejected(MotionFrame(session: "fedcba9876543210"), "session");
            AssertRejected(MotionFrame(op: "event"), "op");
        }

        [Test]
        public void RejectsAFaceFrameWithAWrongBlendshapeCount()
        {
            var w = new MsgPackWriter();
            FacePayload.Write(w, 51);
            var frame = new Frame();
            var e = Assert.Throws<ProtocolException>(() => new FrameDecoder().Decode(w.Buffer, 0, w.Length, frame, Session));
            StringAssert.Contains("blendshapes", e.Message);
        }

        [Test]
        public void RejectsTruncatedPayloads()
        {
            var payload = TestEnvironment.Fixture("face_frame");
            var frame = new Frame();
            var decoder = new FrameDecoder();
            for (int cut = 0; cut < payload.Length; cut += 17)
            {
                int length = cut;
                Assert.Catch<Exception>(() => decoder.Decode(payload, 0, length, frame, Session), "cut at " + cut);
            }
        }

        static void AssertRejected(MsgPackWriter w, string mentioned)
        {
            var e = Assert.Throws<ProtocolException>(() => new FrameDecoder().Decode(w.Buffer, 0, w.Length, new Frame(), Session));
            StringAssert.Contains(mentioned, e.Message);
        }

        /// <summary>A motion frame written key by key so tests can break it in one place.</summary>
        static MsgPackWriter MotionFrame(bool reverse = false, bool extraKey = false, string dropKey = null, int jointCount = 24,
            int version = 1, string pipeline = "motion", string session = Session, string op = "frame")
        {
            var joints = new float[jointCount * 4];
            for (int j = 0; j < jointCount; j++) joints[j * 4 + 3] = 1;
            var keys = new Action<MsgPackWriter>[]
            {
                w => { w.Write("op"); w.Write(op); },
                w => { w.Write("v"); w.Write(version); },
                w => { w.Write("session"); w.Write(session); },
                w => { w.Write("pipeline"); w.Write(pipeline); },
                w => { w.Write("seq"); w.Write(9); },
                w => { w.Write("input_seq"); w.Write(4); },
                w => { w.Write("t_capture_ns"); w.Write(1700000000000000000L); },
                w => { w.Write("t_publish_ns"); w.Write(1700000000001000000L); },
                w => { w.Write("engine_us"); w.Write(12); }, // an int where a float is expected: allowed
                w => { w.Write("batch"); w.Write(1); },
                w => { w.Write("joints"); w.WriteFloat32Binary(joints); },
                w => { w.Write("root"); w.WriteFloat32Binary(new[] { 0f, 1f, 0f }); },
            };
            string[] names = { "op", "v", "session", "pipeline", "seq", "input_seq", "t_capture_ns", "t_publish_ns", "engine_us", "batch", "joints", "root" };
            var writer = new MsgPackWriter();
            int count = keys.Length - (dropKey != null ? 1 : 0) + (extraKey ? 1 : 0);
            writer.WriteMapHeader(count);
            if (extraKey)
            {
                writer.Write("added_in_v1_5");
                writer.WriteObject(new System.Collections.Generic.Dictionary<string, object> { { "nested", new byte[] { 1 } } });
            }
            for (int k = 0; k < keys.Length; k++)
            {
                int index = reverse ? keys.Length - 1 - k : k;
                if (names[index] != dropKey) keys[index](writer);
            }
            return writer;
        }

        [Test]
        public void FaceTrackerFramesHaveNoExpressionAndCarryGazeAndHeadPosition()
        {
            // Section 5.1: an empty expression bin, plus gaze, head_position and warnings.
            var w = new MsgPackWriter();
            FacePayload.Write(w, 52, expression: 0, extraKeys: 3);
            w.Write("gaze"); w.WriteFloat32Binary(new[] { 0.1f, -0.2f, 0.15f, -0.25f });
            w.Write("head_position"); w.WriteFloat32Binary(new[] { 0.01f, 0.02f, -0.6f });
            w.Write("warnings"); w.WriteArrayHeader(1); w.Write("too_dark");
            var frame = new Frame();
            new FrameDecoder().Decode(w.Buffer, 0, w.Length, frame, Session);
            Assert.AreEqual(0, frame.Expression.Length);
            Assert.AreEqual(new[] { 0.1f, -0.2f, 0.15f, -0.25f }, frame.Gaze.ToArray());
            Assert.AreEqual(new[] { 0.01f, 0.02f, -0.6f }, frame.HeadPosition.ToArray());
            // A FLAME frame into the same Frame: no stale gaze from the tracker's frame.
            FacePayload.Write(w, 52);
            new FrameDecoder().Decode(w.Buffer, 0, w.Length, frame, Session);
            Assert.AreEqual(50, frame.Expression.Length);
            Assert.AreEqual(0, frame.Gaze.Length);
            Assert.AreEqual(0, frame.HeadPosition.Length);
            // Neither 0 nor 50 codes is a broken frame.
            w.Reset();
            FacePayload.Write(w, 52, expression: 7);
            Assert.Throws<ProtocolException>(() => new FrameDecoder().Decode(w.Buffer, 0, w.Length, frame, Session));
        }

        [Test]
        public void TheFaceTrackersRigHasNoExpressionNamesAndListsItsExtras()
        {
            var blendshapes = new List<object>(ArkitShapes.Names).ToArray();
            var rig = FaceRig.FromMap(new Dictionary<string, object>
            {
                { "kind", "face" },
                { "coordinates", new Dictionary<string, object> { { "handedness", "right" }, { "up", "+y" }, { "forward", "+z" }, { "units", "m" } } },
                { "quaternion_order", "xyzw" },
                { "expression", new object[0] }, { "eyelids", new object[] { "EyelidLeft", "EyelidRight" } },
                { "rotations", new object[] { "head", "jaw" } }, { "blendshapes", blendshapes },
                { "unsupported", new object[] { "TongueOut" } }, { "extras", new object[] { "head_position", "gaze" } },
            });
            Assert.AreEqual(0, rig.Expression.Length);
            CollectionAssert.AreEqual(new[] { "TongueOut" }, rig.Unsupported);
            CollectionAssert.AreEqual(new[] { "head_position", "gaze" }, rig.Extras);
        }
    }
}
