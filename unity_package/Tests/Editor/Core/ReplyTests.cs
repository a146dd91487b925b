using System;
using System.Collections.Generic;
using AvatarBridge.Core.MsgPack;
using AvatarBridge.Core.Protocol;
using AvatarBridge.Core.Rig;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>Every reply and event type, as encoded by the bridge's Python protocol code.</summary>
    public class ReplyTests
    {
        static Reply Parse(string fixture)
        {
            var bytes = TestEnvironment.Fixture(fixture);
            return Reply.Parse(bytes, 0, bytes.Length);
        }

        [Test]
        public void Hello()
        {
            var reply = Parse("hello_reply");
            Assert.AreEqual("hello", reply.Op);
            Assert.AreEqual(1UL, reply.Id);
            Assert.IsTrue(reply.Ok);
            var hello = HelloInfo.FromReply(reply);
            Assert.AreEqual("avatar-bridge 0.1.0", hello.Server);
            Assert.AreEqual(5571, hello.FramesPort);
            Assert.AreEqual(8L << 20, hello.MaxMessageBytes);
            Assert.AreEqual(new[] { "face", "motion" }, hello.Pipelines);
            Assert.AreEqual(10.0, hello.IdleTimeoutSeconds);
        }

        [Test]
        public void List()
        {
            var models = ModelInfo.FromReply(Parse("list_reply"));
            Assert.AreEqual(2, models.Length);
            Assert.AreEqual("face_expression_small", models[0].Name);
            Assert.AreEqual("face", models[0].Pipeline);
            Assert.AreEqual(0, models[0].Styles.Length);
            Assert.IsFalse(models[0].Trained);
            Assert.AreEqual("motion", models[1].Pipeline);
            Assert.AreEqual(60.0, models[1].Fps);
            Assert.IsTrue(models[1].IsDefault);
            Assert.AreEqual("onnxruntime", models[1].Backend);
            Assert.AreEqual(new[] { "house", "break" }, models[1].Styles);
        }

        [Test]
        public void OpenFace()
        {
            var info = SessionInfo.FromReply(Parse("open_face_reply"));
            Assert.AreEqual("0123456789abcdef", info.Session);
            Assert.AreEqual("frame/0123456789abcdef", info.Topic);
            Assert.AreEqual(Pipeline.Face, info.Pipeline);
            Assert.AreEqual(30.0, info.Fps);
            Assert.IsTrue(info.AcceptsKind("image"));
            Assert.IsFalse(info.AcceptsKind("audio"));
            Assert.IsNull(info.BodyRig);
            Assert.AreEqual(50, info.FaceRig.Expression.Length);
            Assert.AreEqual("Exp00", info.FaceRig.Expression[0]);
            Assert.AreEqual(new[] { "EyelidLeft", "EyelidRight" }, info.FaceRig.Eyelids);
            Assert.AreEqual(new[] { "head", "jaw" }, info.FaceRig.Rotations);
            Assert.AreEqual(52, info.FaceRig.Blendshapes.Length);
            Assert.AreEqual("EyeBlinkLeft", info.FaceRig.Blendshapes[0]);
            Assert.AreEqual("TongueOut", info.FaceRig.Blendshapes[51]);
        }

        [Test]
        public void OpenMotion()
        {
            var info = SessionInfo.FromReply(Parse("open_motion_reply"));
            Assert.AreEqual(Pipeline.Motion, info.Pipeline);
            Assert.AreEqual(35, info.FeatureColumns);
            var rig = info.BodyRig;
            Assert.AreEqual(SmplHumanoidMap.JointNames, rig.Joints);
            Assert.AreEqual(-1, rig.Parents[0]);
            Assert.AreEqual(72, rig.RestOffsets.Length);
            Assert.AreEqual(-0.223f, rig.RestOffsets[1], 1e-6); // pelvis rest height in SMPL model space
            Assert.AreEqual(SmplHumanoidMap.BoneNames, rig.Humanoid, "the fallback table agrees with the bridge's");
        }

        [Test]
        public void CloseAndPongAndAck()
        {
            var close = Parse("close_reply");
            Assert.AreEqual("close", close.Op);
            Assert.AreEqual(600L, close.GetLong("frames_published"));
            var pong = Parse("pong_reply");
            Assert.AreEqual("pong", pong.Op);
            Assert.AreEqual(1700000000123456789L, pong.GetLong("t_ns"));
            var ack = Parse("ack_reply");
            Assert.AreEqual("ack", ack.Op);
            Assert.AreEqual(9UL, ack.Id);
            Assert.AreEqual(12L, ack.GetLong("seq"));
        }

        [Test]
        public void ErrorReplyBecomesAnException()
        {
            var reply = Parse("error_reply");
            Assert.IsTrue(reply.IsError);
            Assert.IsFalse(reply.Ok);
            var e = reply.ToException();
            Assert.AreEqual(107, e.Code);
            Assert.AreEqual(ErrorCode.BadSize, e.ErrorCode);
            Assert.AreEqual("BAD_SIZE", e.Name);
            Assert.AreEqual("data is 3 bytes short", e.BridgeMessage);
            Assert.AreEqual(8UL, e.RequestId);
            Assert.AreEqual("0123456789abcdef", e.Session);
        }

        [Test]
        public void Events()
        {
            var bytes = TestEnvironment.Fixture("opened_event");
            var opened = BridgeEvent.Parse(bytes, 0, bytes.Length);
            Assert.AreEqual("opened", opened.Name);
            Assert.AreEqual("0123456789abcdef", opened.Session);
            Assert.AreEqual(Pipeline.Motion, opened.Opened.Pipeline);
            Assert.AreEqual("frame/0123456789abcdef", opened.Opened.Topic);
            Assert.AreEqual(24, opened.Opened.BodyRig.Joints.Length);

            bytes = TestEnvironment.Fixture("closed_event");
            var closed = BridgeEvent.Parse(bytes, 0, bytes.Length);
            Assert.AreEqual("closed", closed.Name);
            Assert.AreEqual("idle_timeout", closed.Reason);
            Assert.AreEqual(17L, closed.FramesPublished);
            Assert.IsNull(closed.Opened);
        }

        [Test]
        public void RigsInAnotherConventionAreRefused()
        {
            var w = new MsgPackWriter();
            w.WriteObject(new Dictionary<string, object>
            {
                { "op", "open" }, { "session", "0123456789abcdef" }, { "topic", "frame/0123456789abcdef" },
                { "pipeline", "face" }, { "model", "m" }, { "fps", 30 }, { "accepts", new List<object> { "image" } },
                { "rig", new Dictionary<string, object>
                    {
                        { "kind", "face" }, { "quaternion_order", "wxyz" },
                        { "coordinates", new Dictionary<string, object> { { "handedness", "right" }, { "up", "+y" }, { "forward", "+z" }, { "units", "m" } } },
                        { "expression", new List<object>() }, { "eyelids", new List<object>() }, { "rotations", new List<object>() }, { "blendshapes", new List<object>() },
                    }
                },
            });
            var reply = Reply.Parse(w.Buffer, 0, w.Length);
            Assert.Throws<ProtocolException>(() => SessionInfo.FromReply(reply));
        }

        [Test]
        public void RequestsCarryTheContractsKeys()
        {
            var w = new MsgPackWriter();
            RequestEncoder.Open(w, 5, Pipeline.Motion, null, new Dictionary<string, object> { { "style", "house" }, { "smoothing", 0.3 } });
            var open = (Dictionary<string, object>)new MsgPackReader(w.Buffer, 0, w.Length).ReadObject();
            Assert.AreEqual("open", open["op"]);
            Assert.AreEqual(5L, open["id"]);
            Assert.AreEqual(1L, open["v"]);
            Assert.AreEqual("motion", open["pipeline"]);
            Assert.IsFalse(open.ContainsKey("model"));
            Assert.AreEqual("house", ((Dictionary<string, object>)open["options"])["style"]);

            RequestEncoder.Features(w, 6, "0123456789abcdef", 3, 99, 2, 35, new float[70], true);
            var input = (Dictionary<string, object>)new MsgPackReader(w.Buffer, 0, w.Length).ReadObject();
            Assert.AreEqual("input", input["op"]);
            Assert.AreEqual("features", input["kind"]);
            Assert.AreEqual(3L, input["seq"]);
            Assert.AreEqual(99L, input["t_capture_ns"]);
            Assert.AreEqual(2L, input["rows"]);
            Assert.AreEqual(35L, input["cols"]);
            Assert.AreEqual(280, ((byte[])input["data"]).Length);
            Assert.AreEqual(true, input["ack"]);

            var rgb = RequestEncoder.BeginImage(w, 7, "0123456789abcdef", 0, 1, 4, 2, false);
            Assert.AreEqual(24, rgb.Length);
            rgb.Fill(200);
            var image = (Dictionary<string, object>)new MsgPackReader(w.Buffer, 0, w.Length).ReadObject();
            Assert.AreEqual("rgb8", image["format"]);
            Assert.AreEqual(4L, image["width"]);
            Assert.AreEqual(200, ((byte[])image["data"])[23]);
            Assert.IsFalse(image.ContainsKey("ack"));
        }

        [Test]
        public void JpegImagesCarryTheirBytesAndNoSize()
        {
            var w = new MsgPackWriter();
            RequestEncoder.JpegImage(w, 8, "0123456789abcdef", 4, 55, new byte[] { 0xFF, 0xD8, 0xFF, 0xD9 }, true);
            var input = (Dictionary<string, object>)new MsgPackReader(w.Buffer, 0, w.Length).ReadObject();
            Assert.AreEqual("image", input["kind"]);
            Assert.AreEqual("jpeg", input["format"]);
            Assert.AreEqual(new byte[] { 0xFF, 0xD8, 0xFF, 0xD9 }, (byte[])input["data"]);
            Assert.IsFalse(input.ContainsKey("width"), "the bridge reads the size from the JPEG header");
            Assert.AreEqual(4L, input["seq"]);
            Assert.AreEqual(true, input["ack"]);
            Assert.Throws<ArgumentException>(() => RequestEncoder.JpegImage(w, 9, "0123456789abcdef", 5, 56, new byte[0], false));
        }
    }
}
