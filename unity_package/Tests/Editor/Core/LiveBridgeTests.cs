using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Threading;
using AvatarBridge.Core.Client;
using AvatarBridge.Core.MsgPack;
using AvatarBridge.Core.Protocol;
using AvatarBridge.Core.Rig;
using AvatarBridge.Core.Zmtp;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>
    /// Sessions against the real `avatar-bridge serve` started by scripts/test_csharp.sh. The bundled
    /// reference models are untrained, so these check structure, counts, sequence numbers, timing
    /// fields and value ranges, never particular animation values.
    /// </summary>
    public class LiveBridgeTests
    {
        [Test]
        public void HelloAndList()
        {
            int requestPort, framesPort;
            TestEnvironment.BridgePorts(out requestPort, out framesPort);
            using (var client = Live.Client())
            {
                var hello = client.Hello;
                StringAssert.StartsWith("avatar-bridge", hello.Server);
                Assert.AreEqual(framesPort, hello.FramesPort);
                Assert.GreaterOrEqual(hello.MaxMessageBytes, 1 << 20);
                CollectionAssert.IsSubsetOf(new[] { "face", "motion" }, hello.Pipelines);
                Assert.Greater(hello.IdleTimeoutSeconds, 0);

                var models = client.ListModels();
                foreach (var pipeline in new[] { "face", "motion" })
                {
                    var ofPipeline = models.Where(m => m.Pipeline == pipeline).ToArray();
                    Assert.IsNotEmpty(ofPipeline, pipeline + " models");
                    Assert.AreEqual(1, ofPipeline.Count(m => m.IsDefault), "one default " + pipeline + " model");
                    foreach (var m in ofPipeline)
                    {
                        Assert.Greater(m.Fps, 0);
                        Assert.IsNotEmpty(m.Backend);
                        if (pipeline == "motion") Assert.IsNotEmpty(m.Styles, m.Name + " styles");
                    }
                }
                Assert.Greater(client.RoundTripMs, 0);
                Assert.Less(Math.Abs(client.ClockOffsetNs), 50000000L, "same machine: clocks agree within 50 ms");
            }
        }

        /// <summary>
        /// Resume at newest (docs/protocol.md section 1): the frame thread is held up (an EventReceived
        /// handler that blocks for a second) while the bridge publishes 60 frames a second; the first
        /// frame it hands on afterwards was published after the handler returned, the frames of the
        /// hold are skipped, and the client counted one resubscribe. A steady stream never resubscribes.
        /// </summary>
        [Test]
        public void PausedFrameThreadResumesAtTheNewestFrame()
        {
            using (var recorder = Live.Recorder())
            using (var client = Live.Client())
            {
                var streamed = client.AddSession(new SessionRequest(Pipeline.Motion));
                Live.WaitOpen(streamed);
                string id = streamed.Info.Session;
                int hold = 0;
                long resumedNs = 0;
                var atHold = default(FrameStatsSnapshot);
                var resumed = new ManualResetEvent(false);
                client.EventReceived += e =>
                {
                    if (Interlocked.Exchange(ref hold, 0) == 0) return;
                    atHold = streamed.Stats.Snapshot();
                    Thread.Sleep(4 * new ClientOptions().ResumeAfterMs); // the frame thread reads nothing meanwhile
                    Interlocked.Exchange(ref resumedNs, WallClock.NowNs());
                    resumed.Set();
                };
                int k = 0;
                Func<Func<bool>, bool> streamUntil = done => Live.Eventually(() =>
                {
                    client.SendFeatures(streamed, 1, Live.Features(1, 35, k++), WallClock.NowNs());
                    Thread.Sleep(16);
                    return done();
                }, 20000);

                Assert.IsTrue(streamUntil(() => streamed.Stats.Snapshot().Received >= 30));
                Assert.AreEqual(0, streamed.Stats.Snapshot().Lost, "a steady stream loses nothing");
                Assert.AreEqual(0, client.Resubscribes, "a steady stream never resubscribes");

                Interlocked.Exchange(ref hold, 1);
                var trigger = client.AddSession(new SessionRequest(Pipeline.Motion)); // its `opened` event holds the thread
                Assert.IsTrue(streamUntil(() => resumed.WaitOne(0) && streamed.Stats.Snapshot().Received >= atHold.Received + 20));
                var after = streamed.Stats.Snapshot();
                long skipped = after.Lost - atHold.Lost;
                ulong first = atHold.LastSeq + 1 + (ulong)skipped; // the first frame handed on after the hold
                Assert.Greater(skipped, 10, "the frames of the hold were dropped");
                Assert.AreEqual(after.Received - atHold.Received, (long)(after.LastSeq - first + 1), "continuous after the resume");
                Assert.IsTrue(Live.Eventually(() => recorder.Of(id).Any(f => f.Seq == first), 5000));
                var published = recorder.Of(id).First(f => f.Seq == first).PublishNs;
                Assert.GreaterOrEqual(published, Interlocked.Read(ref resumedNs), "published after the resume");
                Assert.AreEqual(1, client.Resubscribes);
                client.RemoveSession(trigger);
            }
        }

        [Test]
        public void MotionSessionStreamsOneFramePerFeatureRow()
        {
            using (var recorder = Live.Recorder())
            using (var client = Live.Client())
            {
                var session = client.AddSession(new SessionRequest(Pipeline.Motion));
                Live.WaitOpen(session);
                var info = session.Info;
                Assert.AreEqual(Pipeline.Motion, info.Pipeline);
                Assert.AreEqual("frame/" + info.Session, info.Topic);
                Assert.AreEqual(16, info.Session.Length);
                Assert.AreEqual(ProtocolConstants.FeatureColumns, info.FeatureColumns);
                CollectionAssert.AreEquivalent(new[] { "audio", "features" }, info.Accepts);
                Assert.Greater(info.Fps, 0);
                Assert.AreEqual(SmplHumanoidMap.JointNames, info.BodyRig.Joints);
                Assert.AreEqual(SmplHumanoidMap.BoneNames, info.BodyRig.Humanoid);

                // 4 inputs of 15 rows: frames seq 0..59, input_seq k for the rows of input k.
                var captures = new long[4];
                for (int k = 0; k < 4; k++)
                {
                    captures[k] = WallClock.NowNs();
                    Assert.IsTrue(client.SendFeatures(session, 15, Live.Features(15, 35, k * 15), captures[k]));
                }
                var pose = new SkeletonPose(info.BodyRig.Parents);
                ulong lastTaken = 0;
                bool any = false;
                long cursor = 0;
                Assert.IsTrue(Live.Eventually(() =>
                {
                    Frame frame;
                    if (session.Frames.TryGetNewest(ref cursor, out frame))
                    {
                        // What the main thread sees: the newest frame, whole and in order.
                        Assert.AreEqual(info.Session, frame.Session);
                        if (any) Assert.Greater(frame.Seq, lastTaken);
                        lastTaken = frame.Seq;
                        any = true;
                        pose.Update(frame.Joints, frame.Root);
                    }
                    return session.Stats.Snapshot().Received == 60;
                }, 20000), "60 frames; got " + session.Stats.Snapshot().Received);

                var stats = session.Stats.Snapshot();
                Assert.AreEqual(0, stats.Lost);
                Assert.AreEqual(59UL, stats.LastSeq);
                Assert.Greater(stats.LatencyMs, 0);
                Assert.Less(stats.LatencyMs, 10000);
                for (int j = 0; j < 24; j++)
                {
                    var g = pose.Global(j);
                    Assert.AreEqual(1.0, Math.Sqrt(g.X * g.X + g.Y * g.Y + g.Z * g.Z + g.W * g.W), 1e-3, "global rotation " + j);
                }

                Assert.IsTrue(Live.Eventually(() => recorder.Of(info.Session).Count == 60, 5000));
                var frames = recorder.Of(info.Session);
                for (int i = 0; i < frames.Count; i++)
                {
                    var f = frames[i];
                    Assert.AreEqual((ulong)i, f.Seq, "seq continuity");
                    Assert.AreEqual((ulong)(i / 15), f.InputSeq, "input_seq of frame " + i);
                    Assert.AreEqual(captures[i / 15], f.CaptureNs, "t_capture_ns copied from the input");
                    Assert.AreEqual(info.Topic, f.Topic);
                    Assert.AreEqual(Pipeline.Motion, f.Pipeline);
                    Assert.GreaterOrEqual(f.PublishNs, f.CaptureNs);
                    Assert.GreaterOrEqual(f.EngineUs, 0);
                    Assert.GreaterOrEqual(f.Batch, 1);
                    Live.AssertUnitQuaternions(f.Joints, "joints");
                    Assert.AreEqual(96, f.Joints.Length);
                    Assert.AreEqual(3, f.Root.Length);
                    Live.AssertFinite(f.Root, "root");
                    Live.AssertInRange(f.Root, -100, 100, "root (metres)");
                }
            }
        }

        [Test]
        public void MotionSessionDancesToFloatAudio()
        {
            using (var recorder = Live.Recorder())
            using (var client = Live.Client())
            {
                var session = client.AddSession(new SessionRequest(Pipeline.Motion));
                Live.WaitOpen(session);
                string id = session.Info.Session;
                double fps = session.Info.Fps;
                // One second of a 120 BPM click at 48 kHz in 1/60 s chunks, as AudioMotionInput sends it.
                const int Rate = 48000, Chunk = Rate / 60;
                var samples = new float[Chunk];
                for (int k = 0; k < 60; k++)
                {
                    for (int i = 0; i < Chunk; i++)
                    {
                        double t = (k * Chunk + i) / (double)Rate;
                        double inBeat = t % 0.5;
                        samples[i] = (float)(System.Math.Sin(2 * System.Math.PI * 80 * t) * System.Math.Exp(-inBeat * 20) * 0.8);
                    }
                    Assert.IsTrue(client.SendAudio(session, Rate, samples, WallClock.NowNs()));
                }
                // One frame per 1/fps s of completed audio: about fps frames for one second.
                int expected = (int)System.Math.Floor(fps);
                Assert.IsTrue(Live.Eventually(() => recorder.Of(id).Count >= expected - 2, 20000),
                    "frames for 1 s of audio: " + recorder.Of(id).Count + ", fps " + fps);
                System.Threading.Thread.Sleep(200);
                var frames = recorder.Of(id);
                Assert.LessOrEqual(frames.Count, expected + 1);
                for (int i = 0; i < frames.Count; i++)
                {
                    Assert.AreEqual((ulong)i, frames[i].Seq);
                    Assert.Less(frames[i].InputSeq, 60UL);
                    if (i > 0) Assert.GreaterOrEqual(frames[i].InputSeq, frames[i - 1].InputSeq);
                    Live.AssertUnitQuaternions(frames[i].Joints, "joints");
                }
            }
        }

        [Test]
        public void AnInputAskingForAnAckGetsOne()
        {
            using (var client = Live.Client())
            {
                var session = client.AddSession(new SessionRequest(Pipeline.Motion));
                Live.WaitOpen(session);
                string id = session.Info.Session;
                var reply = client.Request((w, rid) => RequestEncoder.Features(w, rid, id, 41, WallClock.NowNs(), 1, 35, Live.Features(1, 35, 0), true));
                Assert.AreEqual("ack", reply.Op);
                Assert.AreEqual(id, reply.GetString("session"));
                Assert.AreEqual(41L, reply.GetLong("seq"));
            }
        }

        [Test]
        public void FaceSessionStreamsFramesForImages()
        {
            using (var recorder = Live.Recorder())
            using (var client = Live.Client())
            {
                var session = client.AddSession(new SessionRequest(Pipeline.Face));
                Live.WaitOpen(session);
                var info = session.Info;
                Assert.AreEqual(Pipeline.Face, info.Pipeline);
                CollectionAssert.AreEqual(new[] { "image" }, info.Accepts);
                Assert.AreEqual(52, info.FaceRig.Blendshapes.Length);
                // 50 FLAME codes, or none when the bridge serves faces with its tracker (section 5.1).
                CollectionAssert.Contains(new[] { 0, 50 }, info.FaceRig.Expression.Length);
                CollectionAssert.Contains(info.FaceRig.Blendshapes, "JawOpen");
                CollectionAssert.AreEqual(ArkitShapes.Names, info.FaceRig.Blendshapes, "the core's ARKit list is the bridge's");

                // Paced like a camera; the bridge may still drop queued images (latest wins), so
                // frames ≤ images, and every frame names an input that was sent.
                var sent = new Dictionary<ulong, long>();
                for (int k = 0; k < 8; k++)
                {
                    long capture = WallClock.NowNs();
                    sent[(ulong)k] = capture;
                    Assert.IsTrue(client.SendImage(session, 320, 240, Live.Image(320, 240, k * 10), capture));
                    System.Threading.Thread.Sleep(40);
                }
                Assert.IsTrue(Live.Eventually(() => recorder.Of(info.Session).Any(f => f.InputSeq == 7), 20000), "the last image produced a frame");
                var frames = recorder.Of(info.Session);
                Assert.LessOrEqual(frames.Count, 8);
                ulong previousInput = 0;
                for (int i = 0; i < frames.Count; i++)
                {
                    var f = frames[i];
                    Assert.AreEqual((ulong)i, f.Seq, "seq continuity");
                    Assert.IsTrue(sent.ContainsKey(f.InputSeq), "input_seq " + f.InputSeq + " was sent");
                    if (i > 0) Assert.Greater(f.InputSeq, previousInput, "inputs are answered in order");
                    previousInput = f.InputSeq;
                    Assert.AreEqual(sent[f.InputSeq], f.CaptureNs);
                    Assert.GreaterOrEqual(f.PublishNs, f.CaptureNs);
                    Assert.AreEqual(info.FaceRig.Expression.Length, f.Expression.Length);
                    Live.AssertFinite(f.Expression, "expression");
                    Assert.AreEqual(2, f.Eyelids.Length);
                    Live.AssertInRange(f.Eyelids, 0, 1, "eyelids");
                    Live.AssertUnitQuaternions(f.Jaw, "jaw");
                    Live.AssertUnitQuaternions(f.Head, "head");
                    Assert.AreEqual(52, f.Blendshapes.Length);
                    Live.AssertInRange(f.Blendshapes, 0, 1, "blendshapes");
                }

                // The client's handoff gets the same newest frame.
                Frame newest = null;
                long cursor = 0;
                Assert.IsTrue(Live.Eventually(() => session.Frames.TryGetNewest(ref cursor, out newest) || newest != null, 5000));
                Assert.AreEqual(frames[frames.Count - 1].Seq, newest.Seq);
                Assert.AreEqual(frames.Count, session.Stats.Snapshot().Received);
                Assert.AreEqual(0, session.Stats.Snapshot().Lost);

                // Rig mapping onto a mesh with Apple-style names binds all 52 ARKit weights.
                var mesh = info.FaceRig.Blendshapes.Select(n => "blendShape1." + char.ToLowerInvariant(n[0]) + n.Substring(1)).ToArray();
                Assert.AreEqual(52, BlendshapeBinder.Bind(info.FaceRig.Blendshapes, mesh, null, true).Length);
            }
        }

        [Test]
        public void TurnedBottomUpCameraPixelsReachTheBridgeUpright()
        {
            using (var recorder = Live.Recorder())
            using (var client = Live.Client())
            {
                var session = client.AddSession(new SessionRequest(Pipeline.Face));
                Live.WaitOpen(session);
                // What a phone's WebCamTexture hands over: RGBA, rows bottom to top, turned a quarter.
                var source = ImageSource.Rgba32BottomUp;
                source.RotationClockwise = 90;
                Assert.IsTrue(client.SendImage(session, 48, 64, new byte[48 * 64 * 4], source, 77));
                Assert.IsTrue(Live.Eventually(() => recorder.Of(session.Info.Session).Any(f => f.CaptureNs == 77), 20000), "a frame for the image");
                Assert.Throws<ArgumentException>(() => client.SendImage(session, 48, 64, new byte[48 * 64 * 3], source, 78), "RGBA needs 4 bytes a pixel");
                Assert.AreEqual(0, client.InputErrors, "the bridge took the converted 64x48 rgb8 image");
            }
        }

        [Test]
        public void FaceSessionWithoutBlendshapesSendsEmptyWeights()
        {
            using (var client = Live.Client())
            {
                var session = client.AddSession(new SessionRequest(Pipeline.Face, null, new Dictionary<string, object> { { "blendshapes", false } }));
                Live.WaitOpen(session);
                Assert.AreEqual(0, session.Info.FaceRig.Blendshapes.Length);
                Assert.IsTrue(client.SendImage(session, 64, 48, Live.Image(64, 48, 0), WallClock.NowNs()));
                Frame frame = null;
                long cursor = 0;
                Assert.IsTrue(Live.Eventually(() => session.Frames.TryGetNewest(ref cursor, out frame), 20000));
                Assert.AreEqual(0, frame.Blendshapes.Length);
                Assert.AreEqual(session.Info.FaceRig.Expression.Length, frame.Expression.Length);
            }
        }

        // A 64x48 gradient, JPEG quality 50 (libjpeg-turbo through the bridge's bridge.vision.jpeg.encode).
        const string TinyJpeg = "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1RV19iZ2hnPk1xeXBkeFxlZ2P/2wBDARESEhgVGC8aGi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2P/wAARCAAwAEADASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwDh1iqZYqnWKpVipJip1SBYqmWKp1iqZYqpM7adUgWKpliqZYqmWKrTO6nVIFiqZYqnWKpliqkzup1TDWKpliqdYqmWKuNM+Fp1SBYqlWKp1iqZYqpM7adUgWKpliqdYqlWKrTO6nVIViqVYqnWKpliqkzup1TEWKpViqdYqmWKuNM+Fp1SBYqmWKp1iqVYqpM7adUgWKpliqdYqmWKrTO6nVIFiqZYqmWKpliqkzup1T//2Q==";

        [Test]
        public void FaceSessionTakesJpegImages()
        {
            using (var client = Live.Client())
            {
                var session = client.AddSession(new SessionRequest(Pipeline.Face));
                Live.WaitOpen(session);
                long capture = WallClock.NowNs();
                Assert.IsTrue(client.SendJpeg(session, Convert.FromBase64String(TinyJpeg), capture));
                Frame frame = null;
                long cursor = 0;
                Assert.IsTrue(Live.Eventually(() => session.Frames.TryGetNewest(ref cursor, out frame), 20000), "the JPEG made a frame");
                Assert.AreEqual(capture, frame.CaptureNs);

                // Bytes that are not a JPEG are refused when they arrive: BAD_IMAGE, naming the session.
                long before = client.InputErrors;
                Assert.IsTrue(client.SendJpeg(session, new byte[] { 1, 2, 3, 4, 5, 6 }, WallClock.NowNs()));
                Assert.IsTrue(Live.Eventually(() => client.InputErrors > before, 5000));
                Assert.AreEqual(ErrorCode.BadImage, client.LastInputError.ErrorCode);
                Assert.AreEqual(session.Info.Session, client.LastInputError.Session);
                Assert.Throws<ArgumentException>(() => client.SendJpeg(session, new byte[0], 1));
            }
        }

        [Test]
        public void BadRequestsGetTheirDocumentedErrorCodes()
        {
            using (var client = Live.Client())
            {
                var motion = client.AddSession(new SessionRequest(Pipeline.Motion));
                Live.WaitOpen(motion);
                string id = motion.Info.Session;

                ExpectError(client, ErrorCode.BadValue, (w, rid) => RequestEncoder.Features(w, rid, id, 0, 1, 1, 34, new float[34], false));
                ExpectError(client, ErrorCode.BadSize, (w, rid) => Raw(w, rid, "input", "session", id, "kind", "features", "seq", 0, "t_capture_ns", 1,
                    "rows", 2, "cols", 35, "data", new byte[35 * 4]));
                ExpectError(client, ErrorCode.WrongInputKind, (w, rid) => RequestEncoder.Image(w, rid, id, 0, 1, 2, 2, new byte[12], false));
                ExpectError(client, ErrorCode.UnknownSession, (w, rid) => RequestEncoder.Close(w, rid, "ffffffffffffffff"));
                ExpectError(client, ErrorCode.UnknownPipeline, (w, rid) => Raw(w, rid, "open", "pipeline", "hands"));
                ExpectError(client, ErrorCode.UnknownModel, (w, rid) => Raw(w, rid, "open", "pipeline", "motion", "model", "no_such_model"));
                ExpectError(client, ErrorCode.BadValue, (w, rid) => Raw(w, rid, "open", "pipeline", "motion", "options", new Dictionary<string, object> { { "bogus", 1 } }));
                ExpectError(client, ErrorCode.UnknownOp, (w, rid) => Raw(w, rid, "dance"));
                ExpectError(client, ErrorCode.MissingField, (w, rid) => Raw(w, rid, "close"));
                ExpectError(client, ErrorCode.BadType, (w, rid) => Raw(w, rid, "close", "session", 12));
                ExpectError(client, ErrorCode.UnsupportedVersion, (w, rid) =>
                {
                    w.Reset();
                    w.WriteObject(new Dictionary<string, object> { { "op", "hello" }, { "id", rid }, { "v", 2 } });
                });

                // An input error nobody waits for is counted, with its code and session.
                long before = client.InputErrors;
                Assert.IsTrue(client.SendImage(motion, 2, 2, new byte[12], WallClock.NowNs()));
                Assert.IsTrue(Live.Eventually(() => client.InputErrors > before, 5000));
                Assert.AreEqual(ErrorCode.WrongInputKind, client.LastInputError.ErrorCode);
                Assert.AreEqual(id, client.LastInputError.Session);

                // The bridge keeps serving: the session still streams.
                Assert.IsTrue(client.SendFeatures(motion, 1, Live.Features(1, 35, 0), WallClock.NowNs()));
                Frame frame = null;
                long cursor = 0;
                Assert.IsTrue(Live.Eventually(() => motion.Frames.TryGetNewest(ref cursor, out frame), 10000));
                Assert.AreEqual(0UL, frame.Seq);
            }
        }

        [Test]
        public void GarbageAndBadFramingAreMalformed()
        {
            int requestPort, framesPort;
            TestEnvironment.BridgePorts(out requestPort, out framesPort);
            using (var dealer = ZmtpConnection.Connect("127.0.0.1", requestPort, ZmtpSocketType.Dealer, 5000))
            {
                var garbage = new byte[] { 0xc1, 0xff, 0x00 };
                dealer.Send(garbage, 0, garbage.Length);
                AssertMalformed(dealer);

                var w = new MsgPackWriter();
                RequestEncoder.Hello(w, 1, null);
                dealer.Send(w.Buffer, 0, w.Length, true);
                dealer.Send(w.Buffer, 0, w.Length);
                AssertMalformed(dealer);

                // Still serving this connection.
                dealer.Send(w.Buffer, 0, w.Length);
                Assert.AreEqual("hello", ReceiveReply(dealer).Op);
            }
        }

        [Test]
        public void ClosingPublishesEventsAndDisposeIsQuick()
        {
            using (var observer = Live.Client())
            {
                var events = new List<BridgeEvent>();
                observer.EventReceived += e => { lock (events) events.Add(e); };
                var client = Live.Client();
                var session = client.AddSession(new SessionRequest(Pipeline.Motion));
                Live.WaitOpen(session);
                string id = session.Info.Session;
                Assert.IsTrue(client.SendFeatures(session, 10, Live.Features(10, 35, 0), WallClock.NowNs()));
                Assert.IsTrue(Live.Eventually(() => session.Stats.Snapshot().Received == 10, 10000));

                var watch = Stopwatch.StartNew();
                client.Dispose();
                Assert.Less(watch.ElapsedMilliseconds, 1500, "Dispose is bounded");
                Assert.AreEqual(ConnectionState.Stopped, client.State);
                Assert.IsFalse(session.IsOpen);

                Assert.IsTrue(Live.Eventually(() => { lock (events) return events.Any(e => e.Session == id && e.Name == "closed"); }, 5000), "closed event");
                lock (events)
                {
                    var opened = events.FirstOrDefault(e => e.Session == id && e.Name == "opened");
                    Assert.IsNotNull(opened, "opened event");
                    Assert.AreEqual(24, opened.Opened.BodyRig.Joints.Length);
                    var closed = events.First(e => e.Session == id && e.Name == "closed");
                    Assert.AreEqual("client", closed.Reason);
                    Assert.AreEqual(10, closed.FramesPublished);
                }
                // Requests after the session is gone: UNKNOWN_SESSION.
                var error = Assert.Throws<BridgeErrorException>(() => observer.Request((w, rid) => RequestEncoder.Ping(w, rid, id)));
                Assert.AreEqual(ErrorCode.UnknownSession, error.ErrorCode);
            }
        }

        [Test]
        public void OpenAndCloseByHandReportFramesPublished()
        {
            using (var recorder = Live.Recorder())
            using (var client = Live.Client())
            {
                // Requests without AddSession: the client does not keep this session open by itself.
                var info = SessionInfo.FromReply(client.Request((w, id) => RequestEncoder.Open(w, id, Pipeline.Motion, null, null)));
                var ack = client.Request((w, id) => RequestEncoder.Features(w, id, info.Session, 0, WallClock.NowNs(), 5, 35, Live.Features(5, 35, 0), true));
                Assert.AreEqual("ack", ack.Op);
                Assert.IsTrue(Live.Eventually(() => recorder.Of(info.Session).Count == 5, 10000));

                var closed = client.Request((w, id) => RequestEncoder.Close(w, id, info.Session));
                Assert.AreEqual("close", closed.Op);
                Assert.IsTrue(closed.Ok);
                Assert.AreEqual(info.Session, closed.GetString("session"));
                Assert.AreEqual(5L, closed.GetLong("frames_published"));

                var again = Assert.Throws<BridgeErrorException>(() => client.Request((w, id) => RequestEncoder.Close(w, id, info.Session)));
                Assert.AreEqual(ErrorCode.UnknownSession, again.ErrorCode, "closing twice");
            }
        }

        [Test]
        public void RemovingASessionClosesItOnTheBridge()
        {
            using (var client = Live.Client())
            {
                var events = new List<BridgeEvent>();
                client.EventReceived += e => { lock (events) events.Add(e); };
                var face = client.AddSession(new SessionRequest(Pipeline.Face));
                var motion = client.AddSession(new SessionRequest(Pipeline.Motion));
                Live.WaitOpen(face);
                Live.WaitOpen(motion);
                string id = motion.Info.Session;
                client.RemoveSession(motion);
                Assert.IsFalse(motion.IsOpen);
                Assert.IsTrue(Live.Eventually(() => { lock (events) return events.Any(e => e.Session == id && e.Name == "closed" && e.Reason == "client"); }, 5000));
                Assert.IsTrue(face.IsOpen, "the other session is untouched");
                System.Threading.Thread.Sleep(300);
                Assert.IsFalse(motion.IsOpen, "a removed session is not reopened");
            }
        }

        static void ExpectError(SessionClient client, ErrorCode code, Action<MsgPackWriter, ulong> encode)
        {
            var e = Assert.Throws<BridgeErrorException>(() => client.Request(encode));
            Assert.AreEqual(code, e.ErrorCode, e.Message);
            Assert.AreEqual((int)code, e.Code);
            Assert.IsNotEmpty(e.Name);
        }

        /// <summary>A request map from op, id and key/value pairs, for requests the encoder refuses to write.</summary>
        static void Raw(MsgPackWriter w, ulong id, string op, params object[] pairs)
        {
            var map = new Dictionary<string, object> { { "op", op }, { "id", id }, { "v", 1 } };
            for (int i = 0; i < pairs.Length; i += 2) map[(string)pairs[i]] = pairs[i + 1];
            w.Reset();
            w.WriteObject(map);
        }

        static void AssertMalformed(ZmtpConnection dealer)
        {
            // The error is the last frame. (The bridge currently routes a multi-frame message's error
            // back with the extra frames as envelope, so the first of them comes back in front; the
            // client, like this helper, keeps the last frame.)
            var buffer = new byte[256];
            int length;
            while (dealer.ReceiveFrame(ref buffer, 0, out length))
            {
            }
            var reply = Reply.Parse(buffer, 0, length);
            Assert.IsTrue(reply.IsError);
            Assert.AreEqual(ErrorCode.Malformed, reply.ToException().ErrorCode);
        }

        static Reply ReceiveReply(ZmtpConnection dealer)
        {
            var buffer = new byte[256];
            int length;
            Assert.IsFalse(dealer.ReceiveFrame(ref buffer, 0, out length));
            return Reply.Parse(buffer, 0, length);
        }
    }
}
