using System;
using System.Collections.Generic;
using System.Text;
using AvatarBridge.Core.MsgPack;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    public class MsgPackTests
    {
        static MsgPackReader ReaderOf(MsgPackWriter w) => new MsgPackReader(w.ToArray());

        [Test]
        public void IntegersRoundTripAtEveryEncodingBoundary()
        {
            long[] values =
            {
                0, 1, 127, 128, 255, 256, 65535, 65536, uint.MaxValue, (long)uint.MaxValue + 1, long.MaxValue,
                -1, -32, -33, -128, -129, -32768, -32769, int.MinValue, (long)int.MinValue - 1, long.MinValue,
            };
            var w = new MsgPackWriter(4);
            foreach (long v in values) w.Write(v);
            var r = ReaderOf(w);
            foreach (long v in values) Assert.AreEqual(v, r.ReadInt64(), "value " + v);
            Assert.IsTrue(r.End);
        }

        [Test]
        public void UInt64AboveInt64RoundTrips()
        {
            var w = new MsgPackWriter();
            w.Write(ulong.MaxValue);
            w.Write((ulong)long.MaxValue + 1);
            var r = ReaderOf(w);
            Assert.AreEqual(ulong.MaxValue, r.ReadUInt64());
            Assert.AreEqual((ulong)long.MaxValue + 1, r.ReadUInt64());
        }

        [Test]
        public void SmallestEncodingsMatchTheSpec()
        {
            // Known bytes from the msgpack spec: positive fixint, negative fixint, uint8, int8, uint16, int32.
            Assert.AreEqual(new byte[] { 0x05 }, Encode(w => w.Write(5)));
            Assert.AreEqual(new byte[] { 0xff }, Encode(w => w.Write(-1)));
            Assert.AreEqual(new byte[] { 0xcc, 0xc8 }, Encode(w => w.Write(200)));
            Assert.AreEqual(new byte[] { 0xd0, 0x9c }, Encode(w => w.Write(-100)));
            Assert.AreEqual(new byte[] { 0xcd, 0x01, 0x00 }, Encode(w => w.Write(256)));
            Assert.AreEqual(new byte[] { 0xd2, 0xff, 0xff, 0x7f, 0xff }, Encode(w => w.Write(-32769)));
            // {"a": 1} as msgpack-python packs it.
            Assert.AreEqual(new byte[] { 0x81, 0xa1, 0x61, 0x01 }, Encode(w => { w.WriteMapHeader(1); w.Write("a"); w.Write(1); }));
            // float64 1.5 and float32 1.5, big-endian.
            Assert.AreEqual(new byte[] { 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0 }, Encode(w => w.Write(1.5)));
            Assert.AreEqual(new byte[] { 0xca, 0x3f, 0xc0, 0, 0 }, Encode(w => w.Write(1.5f)));
        }

        [Test]
        public void FloatsAndBooleansAndNilRoundTrip()
        {
            var w = new MsgPackWriter();
            w.Write(Math.PI);
            w.Write(-2.5f);
            w.Write(true);
            w.Write(false);
            w.WriteNil();
            w.Write(7); // an int read as double: the protocol's float fields may arrive as ints
            var r = ReaderOf(w);
            Assert.AreEqual(Math.PI, r.ReadDouble());
            Assert.AreEqual(-2.5, r.ReadDouble());
            Assert.IsTrue(r.ReadBoolean());
            Assert.IsFalse(r.ReadBoolean());
            Assert.IsTrue(r.TryReadNil());
            Assert.AreEqual(7.0, r.ReadDouble());
        }

        [Test]
        public void StringsRoundTripAcrossHeaderSizes()
        {
            string[] values = { "", "a", new string('x', 31), new string('y', 32), new string('z', 255), new string('w', 256), new string('v', 70000), "Grüße, 世界" };
            var w = new MsgPackWriter();
            foreach (var v in values) w.Write(v);
            var r = ReaderOf(w);
            foreach (var v in values) Assert.AreEqual(v, r.ReadString());
        }

        [Test]
        public void StringBytesAreViewedInPlace()
        {
            var w = new MsgPackWriter();
            w.Write("session");
            var r = ReaderOf(w);
            var span = r.ReadStringBytes();
            Assert.IsTrue(span.SequenceEqual(Encoding.ASCII.GetBytes("session")));
        }

        [Test]
        public void BinariesRoundTripAcrossHeaderSizes()
        {
            foreach (int size in new[] { 0, 1, 255, 256, 65535, 65536, 300000 })
            {
                var data = new byte[size];
                for (int i = 0; i < size; i++) data[i] = (byte)(i * 7);
                var w = new MsgPackWriter();
                w.WriteBinary(data);
                var r = ReaderOf(w);
                Assert.AreEqual(data, r.ReadBinary().ToArray(), "size " + size);
                Assert.IsTrue(r.End);
            }
        }

        [Test]
        public void Float32BinaryIsLittleEndian()
        {
            var w = new MsgPackWriter();
            w.WriteFloat32Binary(new[] { 1.0f, -2.0f });
            // bin8 of 8 bytes; 1.0f = 0x3f800000 and -2.0f = 0xc0000000, least significant byte first.
            Assert.AreEqual(new byte[] { 0xc4, 8, 0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0 }, w.ToArray());
        }

        [Test]
        public void MapsAndArraysRoundTripAcrossHeaderSizes()
        {
            foreach (int count in new[] { 0, 15, 16, 65535, 65536 })
            {
                var w = new MsgPackWriter();
                w.WriteArrayHeader(count);
                for (int i = 0; i < count; i++) w.Write(i);
                w.WriteMapHeader(count);
                for (int i = 0; i < count; i++)
                {
                    w.Write("k" + i);
                    w.WriteNil();
                }
                var r = ReaderOf(w);
                Assert.AreEqual(count, r.ReadArrayHeader());
                for (int i = 0; i < count; i++) Assert.AreEqual(i, r.ReadInt64());
                Assert.AreEqual(count, r.ReadMapHeader());
                for (int i = 0; i < count; i++)
                {
                    r.ReadStringBytes();
                    Assert.IsTrue(r.TryReadNil());
                }
                Assert.IsTrue(r.End);
            }
        }

        [Test]
        public void ObjectTreesRoundTrip()
        {
            var tree = new Dictionary<string, object>
            {
                { "op", "open" },
                { "n", 3 },
                { "big", ulong.MaxValue },
                { "f", 0.25 },
                { "ok", true },
                { "none", null },
                { "blob", new byte[] { 1, 2, 3 } },
                { "list", new List<object> { "a", -5, new Dictionary<string, object> { { "x", 1.5f } } } },
            };
            var w = new MsgPackWriter();
            w.WriteObject(tree);
            var back = (Dictionary<string, object>)ReaderOf(w).ReadObject();
            Assert.AreEqual("open", back["op"]);
            Assert.AreEqual(3L, back["n"]);
            Assert.AreEqual(ulong.MaxValue, back["big"]);
            Assert.AreEqual(0.25, back["f"]);
            Assert.AreEqual(true, back["ok"]);
            Assert.IsNull(back["none"]);
            Assert.AreEqual(new byte[] { 1, 2, 3 }, back["blob"]);
            var list = (object[])back["list"];
            Assert.AreEqual("a", list[0]);
            Assert.AreEqual(-5L, list[1]);
            Assert.AreEqual(1.5, ((Dictionary<string, object>)list[2])["x"]);
        }

        [Test]
        public void SkipPassesOverEveryKindOfValue()
        {
            var w = new MsgPackWriter();
            w.WriteObject(new Dictionary<string, object> { { "a", new List<object> { 1, "two", new byte[300], 4.0, null, false } } });
            w.Write(ulong.MaxValue);
            w.Write(-1000000L);
            w.Write(1.5f);
            // fixext 1 (type 5, one data byte): never sent by the bridge, still skippable.
            var ext = new byte[] { 0xd4, 5, 9 };
            var tail = Encode(t => t.Write("end"));
            var bytes = new List<byte>(w.ToArray());
            bytes.AddRange(ext);
            bytes.AddRange(tail);
            var r = new MsgPackReader(bytes.ToArray());
            for (int i = 0; i < 5; i++) r.Skip();
            Assert.AreEqual("end", r.ReadString());
            Assert.IsTrue(r.End);
        }

        [Test]
        public void TruncatedInputThrowsInsteadOfReadingPastTheEnd()
        {
            var w = new MsgPackWriter();
            w.Write("hello world");
            var bytes = w.ToArray();
            for (int cut = 0; cut < bytes.Length; cut++)
            {
                var r = new MsgPackReader(bytes, 0, cut);
                Assert.Throws<MsgPackException>(() => r.ReadString(), "cut at " + cut);
            }
        }

        [Test]
        public void AbsurdLengthsAreRejectedBeforeAllocating()
        {
            // bin32 claiming 2 GB, array32 claiming 4 billion entries.
            Assert.Throws<MsgPackException>(() => new MsgPackReader(new byte[] { 0xc6, 0x7f, 0xff, 0xff, 0xff, 0 }).ReadBinary());
            Assert.Throws<MsgPackException>(() => new MsgPackReader(new byte[] { 0xdd, 0xff, 0xff, 0xff, 0xff }).ReadArrayHeader());
        }

        [Test]
        public void WrongTypesAreReportedWithTheMarker()
        {
            var e = Assert.Throws<MsgPackException>(() => new MsgPackReader(new byte[] { 0xa1, 0x61 }).ReadInt64());
            StringAssert.Contains("0xa1", e.Message);
            Assert.Throws<MsgPackException>(() => new MsgPackReader(new byte[] { 0xff }).ReadUInt64());
            Assert.Throws<MsgPackException>(() => new MsgPackReader(new byte[] { 0xc1 }).Skip());
            Assert.Throws<MsgPackException>(() => new MsgPackReader(new byte[] { 0x81, 0x01, 0x02 }).ReadObject());
        }

        static byte[] Encode(Action<MsgPackWriter> write)
        {
            var w = new MsgPackWriter();
            write(w);
            return w.ToArray();
        }
    }
}
