using System;
using System.Collections.Generic;
using System.Net;
using System.Net.Sockets;
using System.Threading;

namespace AvatarBridge.Tests.Core
{
    /// <summary>
    /// A loopback TCP server that accepts every connection and never sends a byte: a bridge that
    /// hangs mid-handshake. The client's connect succeeds and its greeting read blocks, which is how
    /// tests provoke a stuck connection attempt without dialling any address but 127.0.0.1.
    /// </summary>
    sealed class SilentListener : IDisposable
    {
        readonly TcpListener _listener = new TcpListener(IPAddress.Loopback, 0);
        readonly List<Socket> _accepted = new List<Socket>();
        readonly Thread _acceptor;

        public SilentListener()
        {
            _listener.Start();
            Port = ((IPEndPoint)_listener.LocalEndpoint).Port;
            _acceptor = new Thread(Accept) { IsBackground = true, Name = "SilentListener" };
            _acceptor.Start();
        }

        public int Port { get; }

        /// <summary>Connections accepted so far.</summary>
        public int Accepted
        {
            get { lock (_accepted) return _accepted.Count; }
        }

        void Accept()
        {
            try
            {
                while (true)
                {
                    var socket = _listener.AcceptSocket();
                    lock (_accepted) _accepted.Add(socket); // held open, never written to
                }
            }
            catch (SocketException)
            {
                // Dispose stopped the listener.
            }
            catch (ObjectDisposedException)
            {
            }
        }

        public void Dispose()
        {
            _listener.Stop();
            _acceptor.Join(1000);
            lock (_accepted)
            {
                foreach (var socket in _accepted) socket.Close();
                _accepted.Clear();
            }
        }
    }
}
