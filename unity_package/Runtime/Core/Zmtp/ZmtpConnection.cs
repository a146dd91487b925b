using System;
using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Threading;

namespace AvatarBridge.Core.Zmtp
{
    /// <summary>
    /// One ZMTP 3.0 connection (RFC 23) over a TCP socket with the NULL mechanism, for exactly the
    /// socket patterns the bridge uses: a DEALER talking to a ROUTER and a SUB talking to a PUB.
    /// We greet as 3.0 so the peer (libzmq greets 3.1) falls back to 3.0 framing, where subscriptions
    /// are plain messages (0x01 + prefix) and no PING commands are sent unless configured.
    /// Send is thread-safe; receive belongs to one thread. Dispose from any thread unblocks a receive.
    /// </summary>
    public sealed class ZmtpConnection : IDisposable
    {
        const int GreetingSize = 64;
        const byte FlagMore = 0x01;
        const byte FlagLong = 0x02;
        const byte FlagCommand = 0x04;
        const int SmallSendBytes = 8192;

        readonly Socket _socket;
        readonly ZmtpSocketType _type;
        readonly object _sendLock = new object();
        readonly byte[] _sendScratch = new byte[SmallSendBytes + 9];
        readonly byte[] _readBuffer = new byte[64 * 1024];
        readonly byte[] _header = new byte[8];
        byte[] _commandBuffer = new byte[256];
        int _readStart;
        int _readEnd;
        volatile bool _disposed;

        ZmtpConnection(Socket socket, ZmtpSocketType type, int maxFrameBytes)
        {
            _socket = socket;
            _type = type;
            MaxFrameBytes = maxFrameBytes;
        }

        /// <summary>Largest frame accepted from the peer; a bigger one is a protocol error, not an allocation.</summary>
        public int MaxFrameBytes { get; }

        /// <summary>Socket-Type the peer announced in its READY command.</summary>
        public string PeerSocketType { get; private set; }

        /// <summary>
        /// Connects, exchanges greetings and READY commands within timeoutMs; throws ZmtpException or
        /// SocketException on failure, OperationCanceledException when cancel fires first.
        /// </summary>
        public static ZmtpConnection Connect(string host, int port, ZmtpSocketType type, int timeoutMs, int maxFrameBytes = 64 << 20,
            CancellationToken cancel = default(CancellationToken))
        {
            var address = Resolve(host);
            var socket = new Socket(address.AddressFamily, System.Net.Sockets.SocketType.Stream, ProtocolType.Tcp);
            // Closing the socket ends a pending connect or handshake read at once: that is the cancellation.
            using (cancel.Register(() => socket.Close()))
            {
                try
                {
                    socket.NoDelay = true; // frames are small and latency matters more than packet count
                    var pending = socket.BeginConnect(new IPEndPoint(address, port), null, null);
                    if (!pending.AsyncWaitHandle.WaitOne(timeoutMs))
                        throw new ZmtpException("connecting to " + host + ":" + port + " timed out");
                    socket.EndConnect(pending);
                    socket.ReceiveTimeout = timeoutMs;
                    socket.SendTimeout = timeoutMs;
                    var connection = new ZmtpConnection(socket, type, maxFrameBytes);
                    connection.Handshake();
                    socket.ReceiveTimeout = 0; // after the handshake a receive waits until data or Dispose
                    return connection;
                }
                catch
                {
                    socket.Close();
                    if (cancel.IsCancellationRequested) throw new OperationCanceledException(cancel);
                    throw;
                }
            }
        }

        /// <summary>
        /// How long a send may block when the peer stops reading (default: the connect timeout). A
        /// send that times out leaves the stream unusable: the connection must then be dropped.
        /// </summary>
        public int SendTimeoutMs
        {
            get => _socket.SendTimeout;
            set => _socket.SendTimeout = value;
        }

        /// <summary>Sends one message frame; set more for all but the last frame of a multipart message.</summary>
        public void Send(byte[] data, int offset, int count, bool more = false)
        {
            if (data == null) throw new ArgumentNullException(nameof(data));
            if (offset < 0 || count < 0 || offset + count > data.Length) throw new ArgumentOutOfRangeException(nameof(count));
            SendFrame(more ? FlagMore : (byte)0, data, offset, count);
        }

        /// <summary>SUB only: asks the publisher for messages whose first frame starts with prefix (ZMTP 3.0 form: 0x01 + prefix).</summary>
        public void Subscribe(string prefix) => SendSubscription(1, prefix);

        /// <summary>SUB only: cancels a subscription made with Subscribe.</summary>
        public void Unsubscribe(string prefix) => SendSubscription(0, prefix);

        /// <summary>
        /// Receives the next message frame into buffer at offset (growing the array when it is too
        /// small, keeping bytes before offset). Commands from the peer are handled here. Returns the
        /// frame's MORE flag: true when another frame of the same message follows.
        /// </summary>
        public bool ReceiveFrame(ref byte[] buffer, int offset, out int length)
        {
            byte flags = ReadFrameHeader(out length);
            if (buffer == null || buffer.Length < offset + length)
            {
                var bigger = new byte[Math.Max(offset + length, buffer == null ? 0 : buffer.Length * 2)];
                if (buffer != null) System.Buffer.BlockCopy(buffer, 0, bigger, 0, offset);
                buffer = bigger;
            }
            ReadExact(new Span<byte>(buffer, offset, length));
            return (flags & FlagMore) != 0;
        }

        /// <summary>
        /// Receive side: true when a frame has started arriving (buffered here or in the kernel), waiting
        /// up to timeoutMs for one; also true when the peer closed (the next receive then throws).
        /// </summary>
        public bool WaitReadable(int timeoutMs) => _readStart < _readEnd || _socket.Poll(timeoutMs * 1000, SelectMode.SelectRead);

        /// <summary>Receives and discards the next message frame (e.g. a topic nobody asked for); returns its MORE flag.</summary>
        public bool SkipFrame()
        {
            int length;
            byte flags = ReadFrameHeader(out length);
            while (length > 0)
            {
                int chunk = Math.Min(length, _readEnd - _readStart);
                if (chunk == 0)
                {
                    Fill();
                    continue;
                }
                _readStart += chunk;
                length -= chunk;
            }
            return (flags & FlagMore) != 0;
        }

        public void Dispose()
        {
            if (_disposed) return;
            _disposed = true;
            // Close (not Shutdown) both frees the socket and wakes a thread blocked in Receive.
            _socket.Close();
        }

        /// <summary>One frame, message or command: header and body under the send lock.</summary>
        void SendFrame(byte flags, byte[] data, int offset, int count)
        {
            lock (_sendLock)
            {
                int headerLength = WriteHeader(_sendScratch, flags, count);
                if (count <= SmallSendBytes)
                {
                    // One write for header and body: a single TCP segment for every typical request.
                    System.Buffer.BlockCopy(data, offset, _sendScratch, headerLength, count);
                    SendAll(_sendScratch, 0, headerLength + count);
                }
                else
                {
                    SendAll(_sendScratch, 0, headerLength);
                    SendAll(data, offset, count);
                }
            }
        }

        void SendSubscription(byte kind, string prefix)
        {
            if (_type != ZmtpSocketType.Sub) throw new InvalidOperationException("only a SUB connection subscribes");
            var bytes = Encoding.UTF8.GetBytes(prefix ?? string.Empty);
            var body = new byte[bytes.Length + 1];
            body[0] = kind;
            System.Buffer.BlockCopy(bytes, 0, body, 1, bytes.Length);
            Send(body, 0, body.Length);
        }

        void Handshake()
        {
            var greeting = new byte[GreetingSize];
            greeting[0] = 0xff;   // signature; bytes 1-8 are padding
            greeting[9] = 0x7f;   // signature end, low bit set: a versioned (3.x) peer
            greeting[10] = 3;     // major
            greeting[11] = 0;     // minor: 3.0
            Encoding.ASCII.GetBytes("NULL", 0, 4, greeting, 12);
            // greeting[32] as-server = 0 and the 31-byte filler stay zero.
            SendAll(greeting, 0, GreetingSize);

            var peer = new byte[GreetingSize];
            ReadExact(peer);
            if (peer[0] != 0xff || (peer[9] & 1) == 0)
                throw new ZmtpException("peer is not a ZMTP 3.x endpoint (bad signature)");
            if (peer[10] < 3)
                throw new ZmtpException("peer speaks ZMTP " + peer[10] + ".x; 3.0 or later is required");
            string mechanism = Encoding.ASCII.GetString(peer, 12, 20).TrimEnd('\0');
            if (mechanism != "NULL")
                throw new ZmtpException("peer wants security mechanism " + mechanism + "; only NULL is supported " +
                    "(no CURVE in this client: run the bridge locally or tunnel its ports, see the package README)");

            SendReady();
            ReceiveReady();
        }

        void SendReady()
        {
            string ownType = _type == ZmtpSocketType.Dealer ? "DEALER" : "SUB";
            var command = new byte[1 + 5 + 1 + 11 + 4 + ownType.Length];
            int p = 0;
            command[p++] = 5;
            p += Encoding.ASCII.GetBytes("READY", 0, 5, command, p);
            command[p++] = 11;
            p += Encoding.ASCII.GetBytes("Socket-Type", 0, 11, command, p);
            BinaryPrimitives.WriteInt32BigEndian(new Span<byte>(command, p, 4), ownType.Length);
            p += 4;
            Encoding.ASCII.GetBytes(ownType, 0, ownType.Length, command, p);
            SendFrame(FlagCommand, command, 0, command.Length);
        }

        void ReceiveReady()
        {
            int length;
            byte flags = ReadRawHeader(out length);
            if ((flags & FlagCommand) == 0) throw new ZmtpException("peer sent a message before READY");
            var body = ReadCommandBody(length);
            string name = CommandName(body, length);
            if (name == "ERROR")
            {
                int reasonLength = length > 6 ? body[6] : 0;
                throw new ZmtpException("peer refused the handshake: " + Encoding.ASCII.GetString(body, 7, Math.Min(reasonLength, length - 7)));
            }
            if (name != "READY") throw new ZmtpException("expected READY, got " + name);

            int p = 1 + body[0];
            while (p < length)
            {
                int nameLength = body[p++];
                if (p + nameLength + 4 > length) throw new ZmtpException("truncated READY property");
                string property = Encoding.ASCII.GetString(body, p, nameLength);
                p += nameLength;
                int valueLength = BinaryPrimitives.ReadInt32BigEndian(new ReadOnlySpan<byte>(body, p, 4));
                p += 4;
                if (valueLength < 0 || p + valueLength > length) throw new ZmtpException("truncated READY property");
                if (string.Equals(property, "Socket-Type", StringComparison.OrdinalIgnoreCase))
                    PeerSocketType = Encoding.ASCII.GetString(body, p, valueLength);
                p += valueLength;
            }
            bool compatible = _type == ZmtpSocketType.Dealer
                ? PeerSocketType == "ROUTER" || PeerSocketType == "DEALER" || PeerSocketType == "REP"
                : PeerSocketType == "PUB" || PeerSocketType == "XPUB";
            if (!compatible) throw new ZmtpException("a " + _type.ToString().ToUpperInvariant() + " cannot talk to a " + (PeerSocketType ?? "peer without Socket-Type"));
        }

        /// <summary>Reads headers until a message frame, answering or ignoring commands in between.</summary>
        byte ReadFrameHeader(out int length)
        {
            while (true)
            {
                byte flags = ReadRawHeader(out length);
                if ((flags & FlagCommand) == 0)
                {
                    if (length > MaxFrameBytes) throw new ZmtpException("frame of " + length + " bytes exceeds the " + MaxFrameBytes + "-byte limit");
                    return flags;
                }
                var body = ReadCommandBody(length);
                if (CommandName(body, length) == "PING") SendPong(body, length);
                // Other commands (SUBSCRIBE from a confused peer, PONG) carry nothing a client needs.
            }
        }

        void SendPong(byte[] ping, int length)
        {
            // PING = name, 2-byte TTL, context; PONG echoes the context (RFC 37).
            int contextOffset = 1 + 4 + 2;
            int contextLength = Math.Max(0, length - contextOffset);
            var pong = new byte[1 + 4 + contextLength];
            pong[0] = 4;
            Encoding.ASCII.GetBytes("PONG", 0, 4, pong, 1);
            if (contextLength > 0) System.Buffer.BlockCopy(ping, contextOffset, pong, 5, contextLength);
            SendFrame(FlagCommand, pong, 0, pong.Length);
        }

        byte ReadRawHeader(out int length)
        {
            ReadExact(new Span<byte>(_header, 0, 1));
            byte flags = _header[0];
            if ((flags & 0xf8) != 0) throw new ZmtpException("invalid frame flags 0x" + flags.ToString("x2"));
            if ((flags & FlagLong) != 0)
            {
                ReadExact(new Span<byte>(_header, 0, 8));
                ulong size = BinaryPrimitives.ReadUInt64BigEndian(_header);
                if (size > int.MaxValue) throw new ZmtpException("frame of " + size + " bytes is too large");
                length = (int)size;
            }
            else
            {
                ReadExact(new Span<byte>(_header, 0, 1));
                length = _header[0];
            }
            return flags;
        }

        byte[] ReadCommandBody(int length)
        {
            if (length < 1 || length > 64 * 1024) throw new ZmtpException("invalid command size " + length);
            if (_commandBuffer.Length < length) _commandBuffer = new byte[length];
            ReadExact(new Span<byte>(_commandBuffer, 0, length));
            if (_commandBuffer[0] + 1 > length) throw new ZmtpException("truncated command name");
            return _commandBuffer;
        }

        static string CommandName(byte[] body, int length) => Encoding.ASCII.GetString(body, 1, Math.Min(body[0], length - 1));

        static int WriteHeader(byte[] target, byte flags, int length)
        {
            if (length <= byte.MaxValue)
            {
                target[0] = flags;
                target[1] = (byte)length;
                return 2;
            }
            target[0] = (byte)(flags | FlagLong);
            BinaryPrimitives.WriteUInt64BigEndian(new Span<byte>(target, 1, 8), (ulong)length);
            return 9;
        }

        void ReadExact(Span<byte> target)
        {
            while (target.Length > 0)
            {
                if (_readStart == _readEnd) Fill();
                int chunk = Math.Min(target.Length, _readEnd - _readStart);
                new ReadOnlySpan<byte>(_readBuffer, _readStart, chunk).CopyTo(target);
                _readStart += chunk;
                target = target.Slice(chunk);
            }
        }

        void Fill()
        {
            int received;
            try
            {
                received = _socket.Receive(_readBuffer, 0, _readBuffer.Length, SocketFlags.None);
            }
            catch (ObjectDisposedException e)
            {
                throw new ZmtpException("connection closed", e);
            }
            catch (SocketException e)
            {
                throw new ZmtpException(_disposed ? "connection closed" : "receive failed: " + e.SocketErrorCode, e);
            }
            if (received == 0) throw new ZmtpException("peer closed the connection");
            _readStart = 0;
            _readEnd = received;
        }

        void SendAll(byte[] data, int offset, int count)
        {
            try
            {
                while (count > 0)
                {
                    int sent = _socket.Send(data, offset, count, SocketFlags.None);
                    offset += sent;
                    count -= sent;
                }
            }
            catch (ObjectDisposedException e)
            {
                throw new ZmtpException("connection closed", e);
            }
            catch (SocketException e)
            {
                throw new ZmtpException("send failed: " + e.SocketErrorCode, e);
            }
        }

        static IPAddress Resolve(string host)
        {
            IPAddress address;
            if (IPAddress.TryParse(host, out address)) return address;
            if (string.Equals(host, "localhost", StringComparison.OrdinalIgnoreCase)) return IPAddress.Loopback;
            foreach (var candidate in Dns.GetHostAddresses(host))
                if (candidate.AddressFamily == AddressFamily.InterNetwork) return candidate;
            var all = Dns.GetHostAddresses(host);
            if (all.Length == 0) throw new ZmtpException("cannot resolve " + host);
            return all[0];
        }
    }
}
