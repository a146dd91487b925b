using System;
using AvatarBridge.Core.MsgPack;
using AvatarBridge.Core.Protocol;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>Batched motion messages (section 5.3): the bridge's encoder's, and built by hand to the layout (BatchPayload).</summary>
    public class BatchDecoderTests
    {
        const string A = "0123456789abcdef", B = "fedcba9876543210", C = "00000000deadbeef";

        [Test]
        public void EveryRowIsTheMotionFrameItsSessionWouldGet()
        {
            var w = new BatchPayload(A, B, C).Write();
            var decoder = new BatchDecoder();
            decoder.Decode(w.Buffer, 0, w.Length);
            Assert.AreEqual(3, decoder.Rows);
            Assert.AreEqual(1, decoder.Minor);
            Assert.AreEqual(6, decoder.Batch, "the engine batch may exceed the rows (padded to a tier)");
            var frame = new Frame();
            for (int r = 0; r < 3; r++)
            {
                string id = new[] { A, B, C }[r];
                Assert.AreEqual(id, System.Text.Encoding.ASCII.GetString(decoder.SessionId(r).ToArray()));
                decoder.CopyRow(r, frame, id);
                Assert.AreSame(id, frame.Session);
                Assert.AreEqual(Pipeline.Motion, frame.Pipeline);
                Assert.AreEqual(100UL + (ulong)r, frame.Seq);
                Assert.AreEqual(100UL + (ulong)r, decoder.Seq(r));
                Assert.AreEqual(50UL + (ulong)r, frame.InputSeq);
                Assert.AreEqual(1700000000000000000L + r, frame.CaptureNs);
                Assert.AreEqual(1700000000005000000L, frame.PublishNs);
                Assert.AreEqual(45.5, frame.EngineMicroseconds);
                Assert.AreEqual(6, frame.Batch);
                Assert.AreEqual(96, frame.Joints.Length);
                for (int k = 0; k < 96; k++) Assert.AreEqual(BatchPayload.Joint(r, k), frame.Joints[k], "row " + r + " joint value " + k);
                Assert.AreEqual(new[] { (float)r, -r, 0.5f }, frame.Root.ToArray());
                Assert.AreEqual(0, frame.Blendshapes.Length);
            }
            Assert.Throws<ArgumentOutOfRangeException>(() => decoder.CopyRow(3, frame, A));
        }

        [Test]
        public void DecodesABatchEncodedByTheBridge()
        {
            // make_fixtures.py: rows r = 0..2, the bridge's encode_batch.
            var payload = TestEnvironment.Fixture("motion_batch");
            var decoder = new BatchDecoder();
            decoder.Decode(payload, 0, payload.Length);
            Assert.AreEqual(3, decoder.Rows);
            Assert.AreEqual(1, decoder.Minor);
            Assert.AreEqual(4, decoder.Batch);
            Assert.AreEqual(77.5, decoder.EngineMicroseconds);
            Assert.AreEqual(1700000000000000123L, decoder.PublishNs);
            var frame = new Frame();
            for (int r = 0; r < 3; r++)
            {
                string id = r.ToString("x16");
                Assert.AreEqual(id, System.Text.Encoding.ASCII.GetString(decoder.SessionId(r).ToArray()));
                decoder.CopyRow(r, frame, id);
                Assert.AreEqual((1UL << 40) + (ulong)r, frame.Seq);
                Assert.AreEqual((ulong)r, frame.InputSeq);
                Assert.AreEqual(1700000000000000000L + r, frame.CaptureNs);
                Assert.AreEqual(1700000000000000123L, frame.PublishNs);
                for (int j = 0; j < 24; j++)
                {
                    double n = Math.Sqrt(r * r + j * j + 0.25 + 1);
                    Assert.AreEqual(r / n, frame.Joints[j * 4], 1e-6, "row " + r + " joint " + j + " x");
                    Assert.AreEqual(j / n, frame.Joints[j * 4 + 1], 1e-6);
                    Assert.AreEqual(0.5 / n, frame.Joints[j * 4 + 2], 1e-6);
                    Assert.AreEqual(1 / n, frame.Joints[j * 4 + 3], 1e-6);
                }
                Assert.AreEqual(0.1 * r, frame.Root[0], 1e-6);
                Assert.AreEqual(0.9, frame.Root[1], 1e-6);
                Assert.AreEqual(-0.2, frame.Root[2], 1e-6);
            }
        }

        [Test]
        public void EveryBinFormatKeyOrderAndAlignmentReadsTheSame()
        {
            foreach (int format in new[] { 0, 16, 32 })
                foreach (bool reverse in new[] { false, true })
                    for (int shift = 0; shift < 4; shift++)
                    {
                        string what = "bin" + (format == 0 ? "8" : format.ToString()) + (reverse ? " reversed" : "") + " shift " + shift;
                        var w = new BatchPayload(A, B) { BinFormat = format, Reverse = reverse }.Write();
                        var buffer = new byte[w.Length + shift];
                        Buffer.BlockCopy(w.Buffer, 0, buffer, shift, w.Length);
                        var decoder = new BatchDecoder();
                        decoder.Decode(buffer, shift, w.Length);
                        var frame = new Frame();
                        decoder.CopyRow(1, frame, B);
                        Array.Clear(buffer, 0, buffer.Length); // the frame owns its copy
                        Assert.AreEqual(101UL, frame.Seq, what);
                        Assert.AreEqual(1700000000000000001L, frame.CaptureNs, what);
                        Assert.AreEqual(BatchPayload.Joint(1, 95), frame.Joints[95], what);
                        Assert.AreEqual(-1f, frame.Root[1], what);
                    }
        }

        [Test]
        public void UnknownKeysAreIgnored()
        {
            var w = new BatchPayload(A, B) { ExtraKey = true, Minor = 2 }.Write();
            var decoder = new BatchDecoder();
            decoder.Decode(w.Buffer, 0, w.Length);
            Assert.AreEqual(2, decoder.Rows);
            Assert.AreEqual(2, decoder.Minor, "a later minor adds columns; the ones we know still read");
        }

        [Test]
        public void MalformedBatchesAreRefusedWhole()
        {
            AssertRejected(new BatchPayload(A, B) { ShortColumn = "joints" }, "joints");
            AssertRejected(new BatchPayload(A, B) { ShortColumn = "session", ShortBy = 16 }, "session");
            AssertRejected(new BatchPayload(A, B) { ShortColumn = "seq", ShortBy = -8 }, "seq");
            AssertRejected(new BatchPayload(A, B) { ShortColumn = "root" }, "root");
            AssertRejected(new BatchPayload(A, B) { ShortColumn = "t_capture_ns" }, "t_capture_ns");
            AssertRejected(new BatchPayload(A, B) { ShortColumn = "input_seq" }, "input_seq");
            AssertRejected(new BatchPayload(A, B) { Rows = 3 }, "rows");
            AssertRejected(new BatchPayload(A, B) { Rows = 0 }, "rows");
            AssertRejected(new BatchPayload(A, B) { Rows = long.MaxValue }, "rows");
            AssertRejected(new BatchPayload(A, B) { DropKey = "root" }, "root");
            AssertRejected(new BatchPayload(A, B) { DropKey = "minor" }, "minor");
            AssertRejected(new BatchPayload(A, B) { DropKey = "t_publish_ns" }, "t_publish_ns");
            AssertRejected(new BatchPayload(A, B) { Op = "frame" }, "op");
            AssertRejected(new BatchPayload(A, B) { Version = 2 }, "version");
            AssertRejected(new BatchPayload(A, B) { Minor = 0 }, "minor");
            AssertRejected(new BatchPayload(A, B) { Pipeline = "face" }, "motion");
            var w = new BatchPayload(A, B).Write();
            var decoder = new BatchDecoder();
            for (int cut = 0; cut < w.Length; cut += 7)
            {
                int length = cut;
                Assert.Catch<Exception>(() => decoder.Decode(w.Buffer, 0, length), "cut at " + cut);
                Assert.AreEqual(0, decoder.Rows, "a refused batch has no rows");
            }
        }

        [Test]
        public void DecodingAndCopyingRowsAllocatesNothing()
        {
            var sessions = new string[64];
            for (int i = 0; i < sessions.Length; i++) sessions[i] = i.ToString("x16");
            var w = new BatchPayload(sessions).Write();
            var decoder = new BatchDecoder();
            var frame = new Frame();
            decoder.Decode(w.Buffer, 0, w.Length); // warm up
            decoder.CopyRow(0, frame, sessions[0]);
            double sum = 0;
            long before = GC.GetAllocatedBytesForCurrentThread();
            for (int i = 0; i < 100; i++)
            {
                decoder.Decode(w.Buffer, 0, w.Length);
                for (int r = 0; r < decoder.Rows; r++)
                {
                    decoder.CopyRow(r, frame, sessions[r]);
                    sum += frame.Root[0];
                }
            }
            long allocated = GC.GetAllocatedBytesForCurrentThread() - before;
            Assert.AreEqual(0, allocated, "bytes allocated by 100 batches of 64 rows");
            Assert.AreEqual(100 * 63 * 64 / 2, sum, 1e-6);
        }

        static void AssertRejected(BatchPayload payload, string mentioned)
        {
            var w = payload.Write();
            var decoder = new BatchDecoder();
            var good = new BatchPayload(A).Write();
            decoder.Decode(good.Buffer, 0, good.Length);
            var e = Assert.Catch<Exception>(() => decoder.Decode(w.Buffer, 0, w.Length));
            Assert.IsTrue(e is ProtocolException || e is MsgPackException, e.GetType().Name);
            StringAssert.Contains(mentioned, e.Message);
            Assert.AreEqual(0, decoder.Rows, "a refused batch leaves no rows from the one before");
        }
    }
}
