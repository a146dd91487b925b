using System;
using System.IO;
using System.Text;
using AvatarBridge.Core.Zmtp;

namespace AvatarBridge.Tests.Core
{
    /// <summary>Tests/Tools~/zmq_peer.py: a pyzmq (libzmq) ROUTER and XPUB to test the ZMTP client against.</summary>
    sealed class ZmqPeer : IDisposable
    {
        readonly ChildProcess _process;

        ZmqPeer(ChildProcess process, int routerPort, int pubPort)
        {
            _process = process;
            RouterPort = routerPort;
            PubPort = pubPort;
        }

        public int RouterPort { get; }
        public int PubPort { get; }
        public bool HasExited => _process.HasExited;

        public static ZmqPeer Start()
        {
            string script = Path.Combine(TestEnvironment.Tools, "zmq_peer.py");
            var process = ChildProcess.Start(TestEnvironment.Python, "\"" + script + "\"");
            try
            {
                int router, pub;
                TestEnvironment.ReadPorts(process.ReadLine(15000), "router", "pub", out router, out pub);
                return new ZmqPeer(process, router, pub);
            }
            catch
            {
                process.Dispose();
                throw;
            }
        }

        public ZmtpConnection Dealer() => ZmtpConnection.Connect("127.0.0.1", RouterPort, ZmtpSocketType.Dealer, 5000);

        public ZmtpConnection Sub() => ZmtpConnection.Connect("127.0.0.1", PubPort, ZmtpSocketType.Sub, 5000);

        /// <summary>Sends a one-frame command and returns the one-frame answer.</summary>
        public static byte[] Call(ZmtpConnection dealer, byte[] command)
        {
            dealer.Send(command, 0, command.Length);
            var buffer = new byte[16];
            int length;
            bool more = dealer.ReceiveFrame(ref buffer, 0, out length);
            if (more) throw new InvalidOperationException("unexpected multipart answer");
            var answer = new byte[length];
            Buffer.BlockCopy(buffer, 0, answer, 0, length);
            return answer;
        }

        public static string Call(ZmtpConnection dealer, string command) => Encoding.UTF8.GetString(Call(dealer, Encoding.UTF8.GetBytes(command)));

        public void Dispose() => _process.Dispose();
    }
}
