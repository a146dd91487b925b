using System.Threading;
using AvatarBridge.Core.Client;
using AvatarBridge.Core.MsgPack;
using AvatarBridge.Core.Protocol;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>The newest-frame triple buffer and the loss/latency statistics, without sockets.</summary>
    public class HandoffTests
    {
        const string Session = "0123456789abcdef";
        readonly FrameDecoder _decoder = new FrameDecoder();

        [Test]
        public void ReaderGetsOnlyTheNewestFrameAndKeepsItIntact()
        {
            var frames = new LatestFrameBuffer();
            long cursor = 0;
            Frame frame;
            Assert.IsFalse(frames.TryGetNewest(ref cursor, out frame));
            Assert.IsNull(frame);

            Produce(frames, 1);
            Produce(frames, 2);
            Produce(frames, 3);
            Assert.IsTrue(frames.TryGetNewest(ref cursor, out frame));
            Assert.AreEqual(3UL, frame.Seq, "latest wins: 1 and 2 were overwritten");

            // The receiver keeps going; the frame the reader holds must not change under it.
            Produce(frames, 4);
            Produce(frames, 5);
            Assert.AreEqual(3UL, frame.Seq);
            Assert.AreEqual(3f, frame.Root[0]);

            Assert.IsTrue(frames.TryGetNewest(ref cursor, out frame));
            Assert.AreEqual(5UL, frame.Seq);
            Assert.IsFalse(frames.TryGetNewest(ref cursor, out frame), "nothing new");
            Assert.AreEqual(5UL, frame.Seq, "the last frame stays available");
        }

        [Test]
        public void SeveralReadersEachSeeEveryNewestFrame()
        {
            // A face driver and a UI reading one session on the main thread.
            var frames = new LatestFrameBuffer();
            long driver = 0, ui = 0;
            Frame frame;
            Produce(frames, 1);
            Assert.IsTrue(frames.TryGetNewest(ref driver, out frame));
            Assert.IsTrue(frames.TryGetNewest(ref ui, out frame), "the second reader still gets it");
            Assert.AreEqual(1UL, frame.Seq);
            Assert.IsFalse(frames.TryGetNewest(ref driver, out frame));
            Produce(frames, 2);
            Assert.IsTrue(frames.TryGetNewest(ref ui, out frame));
            Assert.IsTrue(frames.TryGetNewest(ref driver, out frame));
            Assert.AreEqual(2UL, frame.Seq);
        }

        [Test]
        public void ConcurrentProducerNeverTearsAFrame()
        {
            var frames = new LatestFrameBuffer();
            var done = false;
            var producer = new Thread(() =>
            {
                for (ulong seq = 1; seq <= 20000; seq++) Produce(frames, seq);
                Volatile.Write(ref done, true);
            });
            producer.Start();
            ulong last = 0;
            long cursor = 0;
            int taken = 0;
            while (!Volatile.Read(ref done) || taken == 0)
            {
                Frame frame;
                if (!frames.TryGetNewest(ref cursor, out frame)) continue;
                taken++;
                Assert.Greater(frame.Seq, last, "frames only move forward");
                // Every value of a frame was written from its seq: a torn frame would mix two.
                Assert.AreEqual((float)frame.Seq, frame.Root[0]);
                Assert.AreEqual((float)frame.Seq, frame.Root[2]);
                last = frame.Seq;
            }
            producer.Join();
            Assert.Greater(taken, 0);
        }

        [Test]
        public void StatsCountGapsInSeqAsLoss()
        {
            var stats = new FrameStats();
            var frame = new Frame();
            foreach (ulong seq in new ulong[] { 0, 1, 2, 5, 6, 10 })
            {
                Decode(frame, seq);
                frame.ReceivedNs = frame.CaptureNs + 2000000; // 2 ms after capture
                stats.Record(frame, 0);
            }
            var snapshot = stats.Snapshot();
            Assert.AreEqual(6, snapshot.Received);
            Assert.AreEqual(5, snapshot.Lost); // 3, 4, 7, 8, 9
            Assert.AreEqual(5.0 / 11, snapshot.LossRatio, 1e-9);
            Assert.AreEqual(2.0, snapshot.LatencyMs, 1e-9);
            Assert.AreEqual(10UL, snapshot.LastSeq);

            stats.ResetSequence(); // a reopened session starts at 0 again: not a loss
            Decode(frame, 0);
            stats.Record(frame, 0);
            Assert.AreEqual(5, stats.Snapshot().Lost);
        }

        [Test]
        public void WallClockIsTheUnixEpochInNanoseconds()
        {
            long unixNs = (System.DateTime.UtcNow.Ticks - 621355968000000000L) * 100;
            Assert.AreEqual(unixNs, WallClock.NowNs(), 50e6, "within 50 ms of DateTime.UtcNow");
            long a = WallClock.NowNs();
            long b = WallClock.NowNs();
            Assert.GreaterOrEqual(b, a);
        }

        void Produce(LatestFrameBuffer frames, ulong seq)
        {
            var slot = frames.Back;
            var w = MotionPayload(seq);
            if (slot.Buffer.Length < w.Length) slot.Buffer = new byte[w.Length];
            System.Buffer.BlockCopy(w.Buffer, 0, slot.Buffer, 0, w.Length);
            _decoder.Decode(slot.Buffer, 0, w.Length, slot.Frame, Session);
            frames.Publish();
        }

        void Decode(Frame frame, ulong seq)
        {
            var w = MotionPayload(seq);
            _decoder.Decode(w.ToArray(), 0, w.Length, frame, Session);
        }

        static MsgPackWriter MotionPayload(ulong seq)
        {
            var w = new MsgPackWriter();
            w.WriteMapHeader(12);
            w.Write("op"); w.Write("frame");
            w.Write("v"); w.Write(1);
            w.Write("session"); w.Write(Session);
            w.Write("pipeline"); w.Write("motion");
            w.Write("seq"); w.Write(seq);
            w.Write("input_seq"); w.Write(seq);
            w.Write("t_capture_ns"); w.Write(1700000000000000000L);
            w.Write("t_publish_ns"); w.Write(1700000000001000000L);
            w.Write("engine_us"); w.Write(10.0);
            w.Write("batch"); w.Write(1);
            w.Write("joints"); w.WriteFloat32Binary(new float[96]);
            w.Write("root"); w.WriteFloat32Binary(new float[] { seq, seq, seq });
            return w;
        }
    }
}
