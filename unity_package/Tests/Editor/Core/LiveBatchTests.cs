using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using AvatarBridge.Core.Client;
using AvatarBridge.Core.Protocol;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>
    /// A crowd of motion sessions reading their frames from the batch topic of the real `avatar-bridge
    /// serve` (section 5.3), checked row by row against the per-session frames a second subscriber gets.
    /// </summary>
    public class LiveBatchTests
    {
        const int Crowd = 12, Rows = 30;

        [Test]
        public void ACrowdReadsItsMotionFromTheBatchTopicAndASpeechSessionBesideIt()
        {
            int requestPort, framesPort;
            TestEnvironment.BridgePorts(out requestPort, out framesPort);
            using (var recorder = Live.Recorder())
            using (var client = Live.Connected(new ClientOptions { RequestPort = requestPort, MotionBatch = true, ClientName = "avatar-bridge C# crowd" }))
            {
                var dancers = new BridgeSession[Crowd];
                for (int i = 0; i < Crowd; i++) dancers[i] = client.AddSession(new SessionRequest(Pipeline.Motion));
                var speech = client.AddSession(new SessionRequest(Pipeline.Speech));
                foreach (var d in dancers) Live.WaitOpen(d);
                Live.WaitOpen(speech);
                Thread.Sleep(50); // the speech session's own subscription, made after its open reply, reaches the bridge

                var captures = new long[Crowd, 2];
                for (int k = 0; k < 2; k++)
                    for (int i = 0; i < Crowd; i++)
                    {
                        captures[i, k] = WallClock.NowNs();
                        Assert.IsTrue(client.SendFeatures(dancers[i], Rows / 2, Live.Features(Rows / 2, 35, i * 1000 + k * 15), captures[i, k]));
                    }
                Assert.IsTrue(client.SendAudio(speech, 16000, new float[16000 / 10], WallClock.NowNs()), "0.1 s of silence: 3 speech frames");

                Assert.IsTrue(Live.Eventually(() => dancers.All(d => d.Stats.Snapshot().Received >= Rows), 20000),
                    "every dancer gets " + Rows + " frames; got " + string.Join(",", dancers.Select(d => d.Stats.Snapshot().Received)) +
                    "; batches " + client.BatchesReceived + " received, " + client.BatchesDropped + " dropped");
                Assert.IsTrue(Live.Eventually(() => speech.Stats.Snapshot().Received >= 3, 10000), "speech frames through frame/<session>");
                Thread.Sleep(100); // anything more (a duplicate per-session copy) would show now

                Assert.Greater(client.BatchesReceived, 0);
                Assert.AreEqual(0, client.BatchesDropped);
                Assert.Less(client.BatchesReceived, (long)Crowd * Rows, "rows share messages");
                for (int i = 0; i < Crowd; i++)
                {
                    var d = dancers[i];
                    var stats = d.Stats.Snapshot();
                    Assert.AreEqual(Rows, stats.Received, "dancer " + i + ": each row once (no per-session copy besides the batch)");
                    Assert.AreEqual(0, stats.Lost, "dancer " + i);
                    Assert.AreEqual(0, stats.Rejected, "dancer " + i);
                    Assert.AreEqual((ulong)Rows - 1, stats.LastSeq, "dancer " + i);

                    // The newest row is the frame/<session> frame of the same seq, value for value.
                    Frame newest;
                    long cursor = 0;
                    Assert.IsTrue(d.Frames.TryGetNewest(ref cursor, out newest));
                    Assert.AreSame(d.Info.Session, newest.Session);
                    Assert.AreEqual(Pipeline.Motion, newest.Pipeline);
                    ulong seq = newest.Seq;
                    Assert.IsTrue(Live.Eventually(() => recorder.Of(d.Info.Session).Any(f => f.Seq == seq), 5000),
                        "dancer " + i + "'s per-session frame " + seq + "; the recorder has " + recorder.Of(d.Info.Session).Count);
                    var same = recorder.Of(d.Info.Session).Single(f => f.Seq == seq);
                    Assert.AreEqual(same.InputSeq, newest.InputSeq);
                    Assert.AreEqual(captures[i, 1], newest.CaptureNs, "t_capture_ns of the second input");
                    // Two messages, each stamped when it was published.
                    Assert.AreEqual(same.PublishNs, newest.PublishNs, 50000000L, "publish times within 50 ms");
                    Assert.AreEqual(same.Batch, newest.Batch);
                    CollectionAssert.AreEqual(same.Joints, newest.Joints.ToArray(), "dancer " + i + " joints");
                    CollectionAssert.AreEqual(same.Root, newest.Root.ToArray(), "dancer " + i + " root");
                    Live.AssertUnitQuaternions(newest.Joints, "joints");
                }
                Frame voice;
                long speechCursor = 0;
                Assert.IsTrue(speech.Frames.TryGetNewest(ref speechCursor, out voice));
                Assert.AreEqual(15, voice.Visemes.Length);
                Assert.IsFalse(voice.Voice, "silence");
            }
        }

        [Test]
        public void RemovedSessionsLeaveNoSubscriptionBehind()
        {
            int requestPort, framesPort;
            TestEnvironment.BridgePorts(out requestPort, out framesPort);
            using (var client = Live.Connected(new ClientOptions { RequestPort = requestPort, MotionBatch = true, ClientName = "avatar-bridge C# churn" }))
            {
                int fixedTopics = client.SubscriptionCount; // the batch topic and events
                for (int i = 0; i < 3; i++)
                {
                    var speech = client.AddSession(new SessionRequest(Pipeline.Speech));
                    Live.WaitOpen(speech);
                    Assert.AreEqual(fixedTopics + 1, client.SubscriptionCount, "its frame/<session> topic, round " + i);
                    client.RemoveSession(speech);
                    Assert.AreEqual(fixedTopics, client.SubscriptionCount, "dropped with the session, round " + i);
                }
            }
        }
    }
}
