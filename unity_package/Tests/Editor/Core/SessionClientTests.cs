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
            // A non-routable address: the connect hangs (or fails at once where there is no route).
            var client = new SessionClient(new ClientOptions { Host = "10.255.255.1", ConnectTimeoutMs = 10000 });
            client.Start();
            Thread.Sleep(200);
            var watch = Stopwatch.StartNew();
            client.Dispose(1000);
            Assert.Less(watch.ElapsedMilliseconds, 1200);
            Assert.AreEqual(ConnectionState.Stopped, client.State);
            client.Dispose(); // twice is harmless
        }
    }
}
