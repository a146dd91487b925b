using System;
using System.Collections.Generic;
using AvatarBridge.Core.Client;
using AvatarBridge.Core.Protocol;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>What the frame thread does with a batch: each row into its own session's newest-frame handoff.</summary>
    public class BatchRouterTests
    {
        const string A = "0123456789abcdef", B = "fedcba9876543210", Foreign = "00000000deadbeef";

        [Test]
        public void RowsReachTheirSessionsAndForeignRowsAreSkipped()
        {
            var a = Opened(A);
            var b = Opened(B);
            var sessions = new[] { a, b };
            var router = new BatchRouter();
            var w = new BatchPayload(Foreign, B, A).Write();
            Assert.IsTrue(router.Deliver(w.Buffer, w.Length, sessions, 1700000000009000000L, 0));
            Assert.AreEqual(1, router.Received);
            Assert.AreEqual(2, router.Rows, "the foreign session's row is not ours");

            Frame frame;
            long cursor = 0;
            Assert.IsTrue(a.Frames.TryGetNewest(ref cursor, out frame));
            Assert.AreSame(a.Info.Session, frame.Session);
            Assert.AreEqual(102UL, frame.Seq, "A is row 2");
            Assert.AreEqual(BatchPayload.Joint(2, 7), frame.Joints[7]);
            Assert.AreEqual(1700000000009000000L, frame.ReceivedNs);
            cursor = 0;
            Assert.IsTrue(b.Frames.TryGetNewest(ref cursor, out frame));
            Assert.AreEqual(101UL, frame.Seq, "B is row 1");
            Assert.AreEqual(1, b.Stats.Snapshot().Received);
        }

        [Test]
        public void TheLatestBatchWinsAndGapsCountAsLost()
        {
            var a = Opened(A);
            var sessions = new[] { a };
            var router = new BatchRouter();
            var payload = new BatchPayload(A);
            for (ulong tick = 0; tick < 3; tick++)
            {
                payload.SeqOffset = tick == 2 ? 5UL : tick; // seq 100, 101, then 105: 3 lost
                var w = payload.Write();
                router.Deliver(w.Buffer, w.Length, sessions, 1, 0);
            }
            Frame frame;
            long cursor = 0;
            Assert.IsTrue(a.Frames.TryGetNewest(ref cursor, out frame));
            Assert.AreEqual(105UL, frame.Seq, "only the newest is handed over");
            Assert.IsFalse(a.Frames.TryGetNewest(ref cursor, out frame), "and only once");
            var stats = a.Stats.Snapshot();
            Assert.AreEqual(3, stats.Received);
            Assert.AreEqual(3, stats.Lost);
            Assert.AreEqual(105UL, stats.LastSeq);
        }

        [Test]
        public void AMalformedBatchIsDroppedAndCountedAndTouchesNoSession()
        {
            var a = Opened(A);
            var router = new BatchRouter();
            var w = new BatchPayload(A) { ShortColumn = "root" }.Write();
            Assert.IsFalse(router.Deliver(w.Buffer, w.Length, new[] { a }, 1, 0));
            router.Reject();
            Assert.AreEqual(2, router.Dropped);
            Assert.AreEqual(0, router.Received);
            Frame frame;
            long cursor = 0;
            Assert.IsFalse(a.Frames.TryGetNewest(ref cursor, out frame));
            Assert.AreEqual(0, a.Stats.Snapshot().Received);
        }

        [Test]
        public void ALostSessionGetsNothingAndItsReopenedSelfGetsItsNewId()
        {
            var a = Opened(A);
            var sessions = new[] { a };
            var router = new BatchRouter();
            var w = new BatchPayload(A, B).Write();
            router.Deliver(w.Buffer, w.Length, sessions, 1, 0);
            Assert.AreEqual(1, router.Rows);
            a.Lost("idle timeout");
            router.Deliver(w.Buffer, w.Length, sessions, 1, 0);
            Assert.AreEqual(1, router.Rows, "no session of ours is open");
            a.Opened(Info(B)); // the bridge gave it a new id
            router.Deliver(w.Buffer, w.Length, sessions, 1, 0);
            Assert.AreEqual(2, router.Rows);
            Frame frame;
            long cursor = 0;
            Assert.IsTrue(a.Frames.TryGetNewest(ref cursor, out frame));
            Assert.AreEqual(B, frame.Session);
            Assert.AreEqual(101UL, frame.Seq);
        }

        [Test]
        public void ABatchOfAnySizeAllocatesNothing()
        {
            var ids = new string[256];
            var sessions = new BridgeSession[ids.Length];
            for (int i = 0; i < ids.Length; i++)
            {
                ids[i] = (0x1000 + i).ToString("x16");
                sessions[i] = Opened(ids[i]);
            }
            var router = new BatchRouter();
            var w = new BatchPayload(ids).Write();
            router.Deliver(w.Buffer, w.Length, sessions, 1, 0); // warm up: builds the routing table
            long before = GC.GetAllocatedBytesForCurrentThread();
            for (int i = 0; i < 50; i++) router.Deliver(w.Buffer, w.Length, sessions, 1, 0);
            long allocated = GC.GetAllocatedBytesForCurrentThread() - before;
            Assert.AreEqual(0, allocated, "bytes allocated by 50 batches of 256 rows");
            Assert.AreEqual(51 * 256, router.Rows);
        }

        static BridgeSession Opened(string id)
        {
            var session = new BridgeSession(new SessionRequest(Pipeline.Motion));
            session.Opened(Info(id));
            return session;
        }

        /// <summary>The bridge's own open reply (make_fixtures.py) with another session id.</summary>
        static SessionInfo Info(string id)
        {
            var payload = TestEnvironment.Fixture("open_motion_reply");
            var map = new Dictionary<string, object>(Reply.Parse(payload, 0, payload.Length).Map)
            {
                ["session"] = id,
                ["topic"] = ProtocolConstants.FrameTopicPrefix + id,
            };
            return SessionInfo.FromMap(map, true);
        }
    }
}
