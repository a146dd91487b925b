using System;
using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Threading;
using AvatarBridge.Core.Zmtp;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>The ZMTP 3.0 client against a real libzmq peer (pyzmq ROUTER and XPUB).</summary>
    public class ZmtpTests
    {
        [Test]
        public void DealerHandshakesWithARouter()
        {
            using (var peer = ZmqPeer.Start())
            using (var dealer = peer.Dealer())
            {
                Assert.AreEqual("ROUTER", dealer.PeerSocketType);
                Assert.AreEqual("hi", ZmqPeer.Call(dealer, "echo hi"));
            }
        }

        [Test]
        public void FramesOfEverySizeRoundTrip()
        {
            // 0..255 bytes use the short header, 256 and up the 8-byte long one; 1 MiB crosses many TCP reads.
            using (var peer = ZmqPeer.Start())
            using (var dealer = peer.Dealer())
            {
                foreach (int size in new[] { 0, 1, 250, 251, 252, 253, 254, 255, 256, 8187, 8192, 8193, 70000, 1 << 20 })
                {
                    var command = new byte[5 + size];
                    Encoding.ASCII.GetBytes("echo ", 0, 5, command, 0);
                    for (int i = 0; i < size; i++) command[5 + i] = (byte)(i * 31 + size);
                    var answer = ZmqPeer.Call(dealer, command);
                    Assert.AreEqual(size, answer.Length, "size " + size);
                    for (int i = 0; i < size; i++)
                        if (answer[i] != command[5 + i]) Assert.Fail("size " + size + ": byte " + i + " differs");
                }
            }
        }

        [Test]
        public void MultipartMessagesKeepTheirMoreFlags()
        {
            using (var peer = ZmqPeer.Start())
            using (var dealer = peer.Dealer())
            {
                var command = Encoding.ASCII.GetBytes("multi");
                dealer.Send(command, 0, command.Length);
                var buffer = new byte[4];
                int length;
                Assert.IsTrue(dealer.ReceiveFrame(ref buffer, 0, out length));
                Assert.AreEqual("a", Encoding.ASCII.GetString(buffer, 0, length));
                Assert.IsFalse(dealer.ReceiveFrame(ref buffer, 0, out length));
                Assert.AreEqual("b", Encoding.ASCII.GetString(buffer, 0, length));

                // And sending one: the peer's ROUTER sees three frames after our identity.
                var part = Encoding.ASCII.GetBytes("x");
                dealer.Send(part, 0, 1, true);
                dealer.Send(part, 0, 1, true);
                dealer.Send(part, 0, 1);
                Assert.AreEqual("multipart 3", Encoding.ASCII.GetString(ReceiveOne(dealer)));
            }
        }

        [Test]
        public void SubscriptionBytesAreWhatLibzmqExpects()
        {
            using (var peer = ZmqPeer.Start())
            using (var dealer = peer.Dealer())
            using (var sub = peer.Sub())
            {
                Assert.AreEqual("PUB", sub.PeerSocketType.Substring(sub.PeerSocketType.Length - 3), "libzmq's XPUB says XPUB");
                sub.Subscribe("frame/abc");
                sub.Unsubscribe("frame/abc");
                sub.Subscribe("");
                // The XPUB reports each subscription message verbatim: 0x01 + prefix, 0x00 + prefix.
                string expected = "[\"016672616d652f616263\", \"006672616d652f616263\", \"01\"]";
                string seen = null;
                var watch = Stopwatch.StartNew();
                while (watch.ElapsedMilliseconds < 5000)
                {
                    seen = ZmqPeer.Call(dealer, "subs");
                    if (seen == expected) break;
                    Thread.Sleep(20);
                }
                Assert.AreEqual(expected, seen);
            }
        }

        [Test]
        public void SubscriberReceivesOnlyItsTopicInOrder()
        {
            using (var peer = ZmqPeer.Start())
            using (var dealer = peer.Dealer())
            using (var sub = peer.Sub())
            {
                sub.Subscribe("frame/");
                // The peer publishes "zzz/other" first (filtered out by libzmq), then 200 messages of
                // 300 bytes (long frames) on our topic, once our subscription has reached it.
                Assert.AreEqual("done", ZmqPeer.Call(dealer, "publish frame/0123456789abcdef 200 300"));
                var topic = new byte[8];
                var payload = new byte[8];
                for (int i = 0; i < 200; i++)
                {
                    int topicLength, payloadLength;
                    Assert.IsTrue(sub.ReceiveFrame(ref topic, 0, out topicLength), "topic has MORE");
                    Assert.AreEqual("frame/0123456789abcdef", Encoding.ASCII.GetString(topic, 0, topicLength));
                    Assert.IsFalse(sub.ReceiveFrame(ref payload, 0, out payloadLength), "payload is the last frame");
                    Assert.AreEqual(304, payloadLength);
                    Assert.AreEqual(i, BitConverter.ToInt32(payload, 0), "in publish order, none lost");
                    Assert.AreEqual((byte)(i % 251), payload[303]);
                }
            }
        }

        [Test]
        public void SkipFrameDiscardsWithoutLosingSync()
        {
            using (var peer = ZmqPeer.Start())
            using (var dealer = peer.Dealer())
            using (var sub = peer.Sub())
            {
                sub.Subscribe("t/");
                Assert.AreEqual("done", ZmqPeer.Call(dealer, "publish t/x 3 100000"));
                Assert.IsTrue(sub.SkipFrame());
                Assert.IsFalse(sub.SkipFrame());
                var buffer = new byte[0];
                int length;
                Assert.IsTrue(sub.ReceiveFrame(ref buffer, 0, out length));
                Assert.IsFalse(sub.ReceiveFrame(ref buffer, 0, out length));
                Assert.AreEqual(1, BitConverter.ToInt32(buffer, 0));
            }
        }

        [Test]
        public void ADealerIsRefusedByAPublisher()
        {
            // libzmq checks socket-type pairs in the handshake; so do we. Either side may end it.
            using (var peer = ZmqPeer.Start())
            {
                Assert.Throws<ZmtpException>(() => ZmtpConnection.Connect("127.0.0.1", peer.PubPort, ZmtpSocketType.Dealer, 5000).Dispose());
            }
        }

        [Test]
        public void PeerClosingEndsAReceiveWithAnError()
        {
            using (var peer = ZmqPeer.Start())
            using (var dealer = peer.Dealer())
            {
                Assert.AreEqual("bye", ZmqPeer.Call(dealer, "quit"));
                var buffer = new byte[4];
                int length;
                var e = Assert.Throws<ZmtpException>(() => dealer.ReceiveFrame(ref buffer, 0, out length));
                StringAssert.Contains("closed", e.Message);
            }
        }

        [Test]
        public void DisposeFromAnotherThreadUnblocksAReceive()
        {
            using (var peer = ZmqPeer.Start())
            {
                var dealer = peer.Dealer();
                Exception caught = null;
                var reader = new Thread(() =>
                {
                    var buffer = new byte[4];
                    int length;
                    try
                    {
                        dealer.ReceiveFrame(ref buffer, 0, out length);
                    }
                    catch (Exception e)
                    {
                        caught = e;
                    }
                });
                reader.Start();
                Thread.Sleep(100);
                var watch = Stopwatch.StartNew();
                dealer.Dispose();
                Assert.IsTrue(reader.Join(2000), "receive returned after Dispose");
                Assert.Less(watch.ElapsedMilliseconds, 2000);
                Assert.IsInstanceOf<ZmtpException>(caught);
            }
        }

        [Test]
        public void ConnectingToAClosedPortFailsFast()
        {
            int port = TestEnvironment.FreePort();
            var watch = Stopwatch.StartNew();
            Assert.Catch<Exception>(() => ZmtpConnection.Connect("127.0.0.1", port, ZmtpSocketType.Dealer, 2000));
            Assert.Less(watch.ElapsedMilliseconds, 2500);
        }

        [Test]
        public void ACurveBridgeIsRefusedWithAMessageThatSaysWhatToDo()
        {
            // A loopback server greeting as a CURVE server would (ZMTP 3.0, mechanism "CURVE", as-server 1).
            var listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            int port = ((IPEndPoint)listener.LocalEndpoint).Port;
            var server = new Thread(() =>
            {
                using (var client = listener.AcceptTcpClient())
                {
                    var greeting = new byte[64];
                    greeting[0] = 0xff;
                    greeting[9] = 0x7f;
                    greeting[10] = 3;
                    Encoding.ASCII.GetBytes("CURVE", 0, 5, greeting, 12);
                    greeting[32] = 1;
                    client.GetStream().Write(greeting, 0, greeting.Length);
                    Thread.Sleep(200);
                }
            });
            server.Start();
            try
            {
                var e = Assert.Throws<ZmtpException>(() => ZmtpConnection.Connect("127.0.0.1", port, ZmtpSocketType.Dealer, 2000));
                StringAssert.Contains("CURVE", e.Message);
                StringAssert.Contains("README", e.Message);
            }
            finally
            {
                server.Join();
                listener.Stop();
            }
        }

        [Test]
        public void ANonZmtpServerIsRejected()
        {
            // A plain TCP server that answers with HTTP, as a wrong port would.
            var listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            int port = ((IPEndPoint)listener.LocalEndpoint).Port;
            var server = new Thread(() =>
            {
                using (var client = listener.AcceptTcpClient())
                {
                    var reply = Encoding.ASCII.GetBytes(new string(' ', 64).Insert(0, "HTTP/1.1 400 Bad Request\r\n"));
                    client.GetStream().Write(reply, 0, reply.Length);
                    Thread.Sleep(200);
                }
            });
            server.Start();
            try
            {
                var e = Assert.Throws<ZmtpException>(() => ZmtpConnection.Connect("127.0.0.1", port, ZmtpSocketType.Sub, 2000));
                StringAssert.Contains("signature", e.Message);
            }
            finally
            {
                server.Join();
                listener.Stop();
            }
        }

        static byte[] ReceiveOne(ZmtpConnection connection)
        {
            var buffer = new byte[4];
            int length;
            Assert.IsFalse(connection.ReceiveFrame(ref buffer, 0, out length));
            var result = new byte[length];
            Buffer.BlockCopy(buffer, 0, result, 0, length);
            return result;
        }
    }
}
