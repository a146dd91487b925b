using System.Diagnostics;
using System.Threading;
using AvatarBridge.Core.Client;
using AvatarBridge.Core.Protocol;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>The session client without a bridge: what a Unity user sees before starting one.</summary>
    public class SessionClientTests
    {
        [Test]
        public void KeepsRetryingWhileNobodyListensAndRefusesInputs()
        {
            int port = TestEnvironment.FreePort();
            using (var client = new SessionClient(new ClientOptions { RequestPort = port, ReconnectMinMs = 50, ReconnectMaxMs = 100 }))
            {
                var session = client.AddSession(new SessionRequest(Pipeline.Face));
                Assert.AreEqual(ConnectionState.Idle, client.State);
                client.Start();
                Assert.IsTrue(Live.Eventually(() => client.State == ConnectionState.Reconnecting && client.LastError != null, 5000));
                Assert.IsFalse(session.IsOpen);
                Assert.IsFalse(client.SendImage(session, 2, 2, new byte[12], WallClock.NowNs()));
                Assert.Throws<System.InvalidOperationException>(() => client.ListModels());
                Thread.Sleep(300);
                Assert.AreEqual(0, client.Connects);
            }
        }

        [Test]
        public void DisposeDuringAConnectionAttemptIsQuick()
        {
            // A loopback server that accepts and never greets: the attempt hangs in the handshake
            // until the 10 s connect timeout unless Dispose cuts it short.
            using (var silent = new SilentListener())
            {
                var client = new SessionClient(new ClientOptions { RequestPort = silent.Port, ConnectTimeoutMs = 10000 });
                client.Start();
                Assert.IsTrue(Live.Eventually(() => silent.Accepted == 1, 5000), "the client reached the listener");
                Thread.Sleep(100);
                Assert.AreEqual(ConnectionState.Connecting, client.State);
                var watch = Stopwatch.StartNew();
                client.Dispose(1000);
                Assert.Less(watch.ElapsedMilliseconds, 1200);
                Assert.AreEqual(ConnectionState.Stopped, client.State);
                Assert.AreEqual(0, client.Connects);
                client.Dispose(); // twice is harmless
            }
        }

        [Test]
        public void AHandshakeThatNeverCompletesTimesOutAndIsRetried()
        {
            using (var silent = new SilentListener())
            using (var client = new SessionClient(new ClientOptions { RequestPort = silent.Port, ConnectTimeoutMs = 200, ReconnectMinMs = 50, ReconnectMaxMs = 50 }))
            {
                client.Start();
                Assert.IsTrue(Live.Eventually(() => silent.Accepted >= 2, 5000), "a second attempt after the first timed out");
                Assert.IsNotNull(client.LastError);
                Assert.AreEqual(0, client.Connects);
            }
        }
    }
}
