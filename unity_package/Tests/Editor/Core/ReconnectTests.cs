using System;
using System.IO;
using System.Threading;
using AvatarBridge.Core.Client;
using AvatarBridge.Core.Protocol;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>The client against a bridge this test starts, kills and starts again on the same ports.</summary>
    public class ReconnectTests
    {
        [Test]
        public void PingsKeepIdleSessionsAndTheClientReconnectsAfterABridgeRestart()
        {
            int requestPort = TestEnvironment.FreePort(), framesPort = TestEnvironment.FreePort();
            string portsFile = Path.Combine(Path.GetTempPath(), "avatar-bridge-reconnect-" + requestPort + ".json");
            var bridge = StartBridge(requestPort, framesPort, portsFile);
            try
            {
                var options = new ClientOptions { RequestPort = requestPort, ReconnectMinMs = 100, ReconnectMaxMs = 400, RequestTimeoutMs = 1000 };
                using (var client = Live.Connected(options))
                {
                    var session = client.AddSession(new SessionRequest(Pipeline.Motion));
                    Live.WaitOpen(session);
                    string firstId = session.Info.Session;

                    // Idle timeout is 1 s, the client pings every 250 ms: after 2.5 s idle the session lives.
                    Thread.Sleep(2500);
                    Assert.AreEqual(firstId, session.Info?.Session, "pinged session was not reaped");
                    Assert.AreEqual(1, session.OpenCount);

                    bridge.Kill();
                    Assert.IsTrue(Live.Eventually(() => client.State != ConnectionState.Connected, 5000), "the drop is noticed");
                    Assert.IsFalse(session.IsOpen);

                    File.Delete(portsFile);
                    bridge.Dispose();
                    bridge = StartBridge(requestPort, framesPort, portsFile);
                    Assert.IsTrue(Live.Eventually(() => client.State == ConnectionState.Connected && session.IsOpen, 15000),
                        "reconnected and reopened: " + client.LastError);
                    Assert.AreEqual(2, client.Connects);
                    Assert.AreEqual(2, session.OpenCount);
                    Assert.AreNotEqual(firstId, session.Info.Session, "a restarted bridge gives a new session id");

                    Assert.IsTrue(client.SendFeatures(session, 3, Live.Features(3, 35, 0), WallClock.NowNs()));
                    Assert.IsTrue(Live.Eventually(() => session.Stats.Snapshot().LastSeq == 2, 10000), "frames flow after reconnecting");
                    Frame frame;
                    long cursor = 0;
                    Assert.IsTrue(session.Frames.TryGetNewest(ref cursor, out frame));
                    Assert.AreEqual(session.Info.Session, frame.Session);
                }
            }
            finally
            {
                bridge.Dispose();
                File.Delete(portsFile);
            }
        }

        static ChildProcess StartBridge(int requestPort, int framesPort, string portsFile)
        {
            var bridge = ChildProcess.Start(TestEnvironment.BridgeCommand,
                "serve --request-port " + requestPort + " --frames-port " + framesPort + " --idle-timeout 1 --ports-file \"" + portsFile + "\"");
            bridge.WaitForFile(portsFile, 30000);
            return bridge;
        }
    }
}
