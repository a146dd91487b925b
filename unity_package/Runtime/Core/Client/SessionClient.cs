using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading;
using AvatarBridge.Core.MsgPack;
using AvatarBridge.Core.Protocol;
using AvatarBridge.Core.Zmtp;

namespace AvatarBridge.Core.Client
{
    /// <summary>
    /// A client of one bridge: a DEALER for requests and inputs, a SUB for frames and events.
    /// Four background threads: a supervisor (connect, hello, open sessions, ping, reconnect with
    /// backoff), a reply reader, a frame reader and an input sender. Frames go straight from the
    /// socket into each session's LatestFrameBuffer; nothing on the frame path allocates.
    /// Requests block the calling thread up to RequestTimeoutMs. Inputs never block: SendImage,
    /// SendAudio and SendFeatures copy the data into a lock-free queue (images: each session's newest
    /// only) and return; the sender thread converts, encodes and writes them, so neither the main
    /// thread nor Unity's audio thread ever waits on the socket.
    /// Dispose is bounded in time and safe to call from Unity's domain-reload and quit callbacks.
    /// </summary>
    public sealed class SessionClient : IDisposable
    {
        readonly ClientOptions _options;
        readonly object _signal = new object();      // supervisor wake-ups
        readonly object _pendingGate = new object(); // request/reply matching
        readonly HashSet<ulong> _waiting = new HashSet<ulong>();
        readonly Dictionary<ulong, Reply> _replies = new Dictionary<ulong, Reply>();
        readonly MsgPackWriter _inputWriter = new MsgPackWriter(64 * 1024); // the sender thread's
        readonly InputRing _inputs;
        readonly SemaphoreSlim _wakeSender = new SemaphoreSlim(0);
        int _senderParked;
        readonly FrameDecoder _decoder = new FrameDecoder();
        readonly BatchRouter _batches = new BatchRouter();
        static readonly byte[] MotionBatchTopic = System.Text.Encoding.ASCII.GetBytes(ProtocolConstants.MotionBatchTopic);
        volatile BridgeSession[] _sessions = new BridgeSession[0];
        volatile ZmtpConnection _dealer;
        volatile ZmtpConnection _sub; // replaced, and its topics resent, under _subGate
        readonly object _subGate = new object();
        readonly List<string> _subscriptions = new List<string>(); // of this connection, under _subGate
        int _framesPort;
        volatile HelloInfo _hello;
        volatile string _lastError;
        volatile bool _stopping;
        volatile bool _abort; // Dispose gave up waiting: fail every request at once
        readonly CancellationTokenSource _stop = new CancellationTokenSource();
        volatile bool _faulted;
        volatile int _state = (int)ConnectionState.Idle;
        Thread _supervisor;
        Thread _replyThread;
        Thread _frameThread;
        Thread _senderThread;
        int _generation;
        long _nextId;
        long _clockOffsetNs;
        long _roundTripNs;
        long _inputErrors;
        long _connects;
        long _inputsDropped;
        long _imagesReplaced;
        long _resubscribes;
        volatile BridgeErrorException _lastInputError;

        public SessionClient(ClientOptions options)
        {
            _options = options ?? throw new ArgumentNullException(nameof(options));
            _inputs = new InputRing(options.InputQueueChunks);
        }

        public ConnectionState State => (ConnectionState)_state;
        /// <summary>The latest hello reply (null before the first connection).</summary>
        public HelloInfo Hello => _hello;
        /// <summary>Why the last connection attempt or connection failed.</summary>
        public string LastError => _lastError;
        /// <summary>Bridge clock minus client clock, estimated from pings (ns).</summary>
        public long ClockOffsetNs => Interlocked.Read(ref _clockOffsetNs);
        public double RoundTripMs => Interlocked.Read(ref _roundTripNs) / 1e6;
        /// <summary>Error replies to inputs (e.g. OVERLOADED, BAD_SIZE) since start.</summary>
        public long InputErrors => Interlocked.Read(ref _inputErrors);
        public BridgeErrorException LastInputError => _lastInputError;
        /// <summary>Inputs refused because the queue was full, or dropped because the connection was down when their turn came.</summary>
        public long InputsDropped => Interlocked.Read(ref _inputsDropped);
        /// <summary>Images replaced by a newer one before the sender got to them (latest wins).</summary>
        public long ImagesReplaced => Interlocked.Read(ref _imagesReplaced);
        /// <summary>Batched motion messages received and delivered (ClientOptions.MotionBatch).</summary>
        public long BatchesReceived => _batches.Received;
        /// <summary>Batched motion messages that broke the contract and were dropped whole.</summary>
        public long BatchesDropped => _batches.Dropped;
        /// <summary>Successful connections since start (1 + reconnects).</summary>
        public long Connects => Interlocked.Read(ref _connects);
        /// <summary>Fresh frame connections made by the resume-at-newest rule (ClientOptions.ResumeAfterMs).</summary>
        public long Resubscribes => Interlocked.Read(ref _resubscribes);

        /// <summary>Raised on a background thread for every event the bridge publishes (opened, closed).</summary>
        public event Action<BridgeEvent> EventReceived;

        /// <summary>Starts the supervisor thread; the connection is made in the background.</summary>
        public void Start()
        {
            if (_supervisor != null) throw new InvalidOperationException("already started");
            _supervisor = new Thread(Supervise) { IsBackground = true, Name = "AvatarBridge supervisor" };
            _supervisor.Start();
            _senderThread = StartThread(SendInputs, "AvatarBridge inputs");
        }

        /// <summary>Adds a session to keep open; it is opened as soon as (and whenever) the client is connected.</summary>
        public BridgeSession AddSession(SessionRequest request)
        {
            var session = new BridgeSession(request ?? throw new ArgumentNullException(nameof(request)));
            lock (_signal)
            {
                var grown = new BridgeSession[_sessions.Length + 1];
                Array.Copy(_sessions, grown, _sessions.Length);
                grown[grown.Length - 1] = session;
                _sessions = grown;
                Monitor.PulseAll(_signal);
            }
            return session;
        }

        /// <summary>Stops keeping a session open and closes it on the bridge (best effort, bounded by the request timeout).</summary>
        public void RemoveSession(BridgeSession session)
        {
            lock (_signal)
            {
                var kept = new List<BridgeSession>(_sessions);
                if (!kept.Remove(session)) return;
                _sessions = kept.ToArray();
            }
            var info = session.Info;
            Lose(session, info, "removed");
            if (info != null && State == ConnectionState.Connected) TryClose(info.Session, _options.RequestTimeoutMs);
        }

        /// <summary>
        /// Sends one request and waits for its reply. encode writes the request with the given id
        /// (see RequestEncoder). Throws BridgeErrorException for an error reply, TimeoutException,
        /// or InvalidOperationException when not connected.
        /// </summary>
        public Reply Request(Action<MsgPackWriter, ulong> encode, int timeoutMs = -1)
        {
            var dealer = _dealer;
            if (dealer == null) throw new InvalidOperationException("not connected to the bridge");
            int generation = Volatile.Read(ref _generation);
            ulong id = NextId();
            var writer = new MsgPackWriter();
            encode(writer, id);
            lock (_pendingGate) _waiting.Add(id);
            try
            {
                try
                {
                    dealer.Send(writer.Buffer, 0, writer.Length);
                }
                catch (ZmtpException e)
                {
                    Fault(generation, e); // a half-sent frame leaves the stream unusable
                    throw;
                }
                return AwaitReply(id, generation, timeoutMs < 0 ? _options.RequestTimeoutMs : timeoutMs);
            }
            finally
            {
                lock (_pendingGate)
                {
                    _waiting.Remove(id);
                    _replies.Remove(id);
                }
            }
        }

        public ModelInfo[] ListModels() => ModelInfo.FromReply(Request((w, id) => RequestEncoder.List(w, id)));

        /// <summary>
        /// A face tracker session's neutral calibration (section 5.1): the next frame with a face becomes
        /// its neutral. Blocks for the reply; BridgeErrorException BAD_VALUE for a model without one.
        /// </summary>
        public void Calibrate(BridgeSession session)
        {
            string id = OpenId(session);
            Request((w, rid) => RequestEncoder.Calibrate(w, rid, id));
        }

        /// <summary>
        /// A speech session's voice calibration (section 5.2): mono samples of the user saying A, I, U, E,
        /// O once, in that order, each followed by a short pause (at most 8 s). Blocks for the reply (the
        /// bridge measures for ~12 ms per second of audio) and returns the vowels' level in dB re full
        /// scale; BridgeErrorException BAD_VALUE when the clip does not hold five voiced stretches.
        /// The calibration lasts as long as the session: a session reopened after a reconnect needs it again.
        /// </summary>
        public double CalibrateVoice(BridgeSession session, int sampleRate, ReadOnlySpan<float> samples)
        {
            string id = OpenId(session);
            var copy = samples.ToArray(); // the encoder runs in a callback, which cannot hold a span
            return Request((w, rid) => RequestEncoder.CalibrateVoice(w, rid, id, sampleRate, copy)).GetDouble("level_db");
        }

        static string OpenId(BridgeSession session)
        {
            var info = session.Info;
            if (info == null) throw new InvalidOperationException("the session is not open");
            return info.Session;
        }

        /// <summary>Queues an rgb8 image (rows top to bottom) for a face session. False when the session is not open or another thread is queuing an image for it.</summary>
        public bool SendImage(BridgeSession session, int width, int height, ReadOnlySpan<byte> rgb, long captureNs) =>
            SendImage(session, width, height, rgb, ImageSource.Rgb8, captureNs);

        /// <summary>
        /// Queues camera pixels for a face session; the sender thread turns them into upright rgb8
        /// (see ImageSource). Only the newest image per session waits: an unsent one is replaced.
        /// </summary>
        public bool SendImage(BridgeSession session, int width, int height, ReadOnlySpan<byte> pixels, ImageSource source, long captureNs)
        {
            if (width < 1 || height < 1) throw new ArgumentOutOfRangeException(nameof(width), "image size must be positive");
            if (pixels.Length != width * height * source.BytesPerPixel) throw new ArgumentException("pixels must be width*height*" + source.BytesPerPixel + " bytes", nameof(pixels));
            if (session.Info == null || _dealer == null) return false;
            bool replaced;
            if (!session.Images.Post(pixels, width, height, source, captureNs, out replaced)) return false;
            if (replaced) Interlocked.Increment(ref _imagesReplaced);
            WakeSender();
            return true;
        }

        /// <summary>
        /// Queues a JPEG image (the bytes of one upright JPEG file, e.g. from the engine's encoder) for a face
        /// session, sent as it is with format "jpeg" (protocol 1.3: a bridge whose hello lists "jpeg" in
        /// image_formats). Latest wins as for SendImage. False when the session is not open or busy.
        /// </summary>
        public bool SendJpeg(BridgeSession session, ReadOnlySpan<byte> jpeg, long captureNs)
        {
            if (jpeg.Length == 0) throw new ArgumentException("a JPEG image needs its bytes", nameof(jpeg));
            if (session.Info == null || _dealer == null) return false;
            bool replaced;
            if (!session.Images.Post(jpeg, 0, 0, ImageSource.Jpeg, captureNs, out replaced)) return false;
            if (replaced) Interlocked.Increment(ref _imagesReplaced);
            WakeSender();
            return true;
        }

        /// <summary>Queues rows of music features (35 per row) for a motion session. False when the session is not open or the queue is full.</summary>
        public bool SendFeatures(BridgeSession session, int rows, ReadOnlySpan<float> values, long captureNs)
        {
            var info = session.Info;
            if (info == null || _dealer == null) return false;
            if (values.Length != rows * info.FeatureColumns) throw new ArgumentException("features must hold rows*" + info.FeatureColumns + " values", nameof(values));
            return Enqueue(session, InputKind.Features, rows, values, captureNs);
        }

        /// <summary>Queues mono float audio (sent as f32le) for a motion session; the bridge computes the music features. Safe on Unity's audio thread.</summary>
        public bool SendAudio(BridgeSession session, int sampleRate, ReadOnlySpan<float> samples, long captureNs)
        {
            if (session.Info == null || _dealer == null) return false;
            return Enqueue(session, InputKind.Audio, sampleRate, samples, captureNs);
        }

        bool Enqueue(BridgeSession session, InputKind kind, int rateOrRows, ReadOnlySpan<float> values, long captureNs)
        {
            if (!_inputs.TryEnqueue(session, kind, rateOrRows, values, captureNs))
            {
                Interlocked.Increment(ref _inputsDropped);
                return false;
            }
            WakeSender();
            return true;
        }

        /// <summary>Stops: closes open sessions on the bridge, closes the sockets, joins the threads, all within about timeoutMs.</summary>
        public void Dispose() => Dispose(1000);

        public void Dispose(int timeoutMs)
        {
            if (_stopping) return;
            _stopping = true;
            _stop.Cancel(); // ends a connection attempt in progress
            lock (_signal) Monitor.PulseAll(_signal);
            _wakeSender.Release();
            var supervisor = _supervisor;
            if (supervisor != null && !supervisor.Join(timeoutMs))
            {
                // Still closing sessions on a slow bridge: give up on politeness.
                _abort = true;
                lock (_pendingGate) Monitor.PulseAll(_pendingGate);
                CloseSockets();
            }
            JoinQuietly(_senderThread); // closing the sockets ends a send in progress
            _state = (int)ConnectionState.Stopped;
        }

        ulong NextId() => (ulong)Interlocked.Increment(ref _nextId);

        const int ReadPollMs = 50;

        // Monotonic milliseconds; Environment.TickCount wraps after 24.8 days of uptime.
        static long NowMs() => (long)(Stopwatch.GetTimestamp() * (1000.0 / Stopwatch.Frequency));

        void WakeSender()
        {
            // Only a parked sender needs the semaphore; the common case is one interlocked read.
            if (Interlocked.Exchange(ref _senderParked, 0) == 1) _wakeSender.Release();
        }

        /// <summary>The sender thread: each session's newest image, then queued audio and features, in turns.</summary>
        void SendInputs()
        {
            while (!_stopping)
            {
                bool worked = false;
                foreach (var session in _sessions)
                {
                    var job = session.Images.Take();
                    if (job != null)
                    {
                        SendImageJob(session, job);
                        worked = true;
                    }
                }
                // A bounded turn for chunks, so a long audio backlog cannot starve images.
                for (int n = 0; n < 16; n++)
                {
                    var chunk = _inputs.Peek();
                    if (chunk == null) break;
                    SendChunk(chunk);
                    _inputs.Release();
                    worked = true;
                }
                if (!worked) Park();
            }
        }

        void Park()
        {
            Interlocked.Exchange(ref _senderParked, 1);
            if (_inputs.Peek() != null || AnyImagePending()) // arrived between the last look and parking
            {
                Interlocked.Exchange(ref _senderParked, 0);
                return;
            }
            _wakeSender.Wait(100);
            Interlocked.Exchange(ref _senderParked, 0);
        }

        bool AnyImagePending()
        {
            foreach (var session in _sessions)
                if (session.Images.HasPending) return true;
            return false;
        }

        void SendImageJob(BridgeSession session, ImageJob job)
        {
            var info = session.Info;
            var dealer = _dealer;
            if (info == null || dealer == null)
            {
                Interlocked.Increment(ref _inputsDropped);
                return;
            }
            if (job.Source.Format == PixelFormat.Jpeg)
            {
                RequestEncoder.JpegImage(_inputWriter, NextId(), info.Session, session.NextInputSeq(), job.CaptureNs, new ReadOnlySpan<byte>(job.Pixels, 0, job.Length), false);
                Write(dealer);
                return;
            }
            int width, height;
            ImageConversion.UprightSize(job.Width, job.Height, job.Source, out width, out height);
            var target = RequestEncoder.BeginImage(_inputWriter, NextId(), info.Session, session.NextInputSeq(), job.CaptureNs, width, height, false);
            ImageConversion.ToUprightRgb(new ReadOnlySpan<byte>(job.Pixels, 0, job.Length), job.Width, job.Height, job.Source, target);
            Write(dealer);
        }

        void SendChunk(InputChunk chunk)
        {
            var session = chunk.Session;
            var info = session.Info;
            var dealer = _dealer;
            if (info == null || dealer == null)
            {
                Interlocked.Increment(ref _inputsDropped);
                return;
            }
            var values = new ReadOnlySpan<float>(chunk.Values, 0, chunk.Count);
            if (chunk.Kind == InputKind.Audio)
                RequestEncoder.Audio(_inputWriter, NextId(), info.Session, session.NextInputSeq(), chunk.CaptureNs, chunk.RateOrRows, values, false);
            else
                RequestEncoder.Features(_inputWriter, NextId(), info.Session, session.NextInputSeq(), chunk.CaptureNs, chunk.RateOrRows, info.FeatureColumns, values, false);
            Write(dealer);
        }

        void Write(ZmtpConnection dealer)
        {
            int generation = Volatile.Read(ref _generation);
            try
            {
                dealer.Send(_inputWriter.Buffer, 0, _inputWriter.Length);
            }
            catch (ZmtpException e)
            {
                Fault(generation, e); // a half-sent frame leaves the stream unusable
            }
        }

        Reply AwaitReply(ulong id, int generation, int timeoutMs)
        {
            long deadline = NowMs() + timeoutMs;
            Reply reply;
            lock (_pendingGate)
            {
                while (!_replies.TryGetValue(id, out reply))
                {
                    if (generation != Volatile.Read(ref _generation) || _faulted || _abort) throw new InvalidOperationException("connection to the bridge was lost");
                    long left = deadline - NowMs();
                    if (left <= 0) throw new TimeoutException("no reply from the bridge within " + timeoutMs + " ms");
                    Monitor.Wait(_pendingGate, (int)Math.Min(left, 100));
                }
            }
            if (reply.IsError) throw reply.ToException();
            return reply;
        }

        void Supervise()
        {
            int backoff = _options.ReconnectMinMs;
            while (!_stopping)
            {
                try
                {
                    _state = (int)ConnectionState.Connecting;
                    Connect();
                    _state = (int)ConnectionState.Connected;
                    Interlocked.Increment(ref _connects);
                    backoff = _options.ReconnectMinMs;
                    Serve();
                }
                catch (Exception e)
                {
                    if (!_stopping) _lastError = e.Message;
                }
                Disconnect();
                if (_stopping) break;
                _state = (int)ConnectionState.Reconnecting;
                Sleep(backoff);
                backoff = Math.Min(backoff * 2, _options.ReconnectMaxMs);
            }
            _state = (int)ConnectionState.Stopped;
        }

        void Connect()
        {
            int generation = Interlocked.Increment(ref _generation);
            _faulted = false;
            var dealer = ZmtpConnection.Connect(_options.Host, _options.RequestPort, ZmtpSocketType.Dealer, _options.ConnectTimeoutMs, _options.MaxFrameBytes, _stop.Token);
            dealer.SendTimeoutMs = _options.SendTimeoutMs;
            _dealer = dealer;
            _replyThread = StartThread(() => ReadReplies(dealer, generation), "AvatarBridge replies");
            var hello = HelloInfo.FromReply(Request((w, id) => RequestEncoder.Hello(w, id, _options.ClientName)));
            _hello = hello;

            _framesPort = _options.FramesPort > 0 ? _options.FramesPort : hello.FramesPort;
            var sub = ConnectFrames();
            lock (_subGate)
            {
                _subscriptions.Clear();
                _sub = sub;
            }
            // All frames and events, filtered here: a session's id is unknown until its open reply, and
            // subscribing before opening is the only way not to miss its first frames (section 1).
            // Batched: motion through the batch topic, and each other session's topic once it is open
            // (a frame/ prefix would make the bridge encode every per-session frame as well).
            Subscribe(_options.MotionBatch ? ProtocolConstants.MotionBatchTopic : ProtocolConstants.FrameTopicPrefix);
            Subscribe(ProtocolConstants.EventTopicPrefix);
            _frameThread = StartThread(() => ReadFrames(sub, generation), "AvatarBridge frames");
            Ping(null); // a round trip before any open usually gives the subscription time to reach the bridge
        }

        void Serve()
        {
            double idle = _hello.IdleTimeoutSeconds;
            int pingInterval = _options.PingIntervalMs > 0 ? _options.PingIntervalMs : (int)Math.Max(250, Math.Min(5000, idle * 1000 / 4));
            long nextPing = NowMs() + pingInterval;
            while (!_stopping && !_faulted)
            {
                foreach (var session in _sessions)
                    if (!session.IsOpen && !session.Failed) Open(session);
                if (NowMs() >= nextPing)
                {
                    foreach (var session in _sessions)
                    {
                        var info = session.Info;
                        if (info != null) PingSession(session, info);
                    }
                    Ping(null);
                    nextPing = NowMs() + pingInterval;
                }
                lock (_signal)
                {
                    if (!_stopping && !_faulted) Monitor.Wait(_signal, Math.Max(1, (int)Math.Min(pingInterval, nextPing - NowMs())));
                }
            }
            if (_stopping && !_faulted) CloseAll();
        }

        void Open(BridgeSession session)
        {
            var request = session.Request;
            try
            {
                var reply = Request((w, id) => RequestEncoder.Open(w, id, request.Pipeline, request.Model, request.Options));
                var info = SessionInfo.FromReply(reply);
                if (_options.MotionBatch && info.Pipeline != Pipeline.Motion) Subscribe(info.Topic);
                session.Opened(info);
            }
            catch (BridgeErrorException e)
            {
                session.Refused(e.Message);
            }
            catch (ProtocolException e)
            {
                session.Refused(e.Message);
            }
        }

        void PingSession(BridgeSession session, SessionInfo info)
        {
            try
            {
                Ping(info.Session);
            }
            catch (BridgeErrorException e)
            {
                // UNKNOWN_SESSION: reaped or the bridge restarted under us; the loop reopens it.
                if (e.ErrorCode == ErrorCode.UnknownSession) Lose(session, info, e.Message);
                else throw;
            }
        }

        void Ping(string session)
        {
            long sent = WallClock.NowNs();
            var reply = Request((w, id) => RequestEncoder.Ping(w, id, session));
            long received = WallClock.NowNs();
            long bridgeNs = reply.GetLong("t_ns");
            // The bridge read its clock about halfway through the round trip.
            Interlocked.Exchange(ref _roundTripNs, received - sent);
            Interlocked.Exchange(ref _clockOffsetNs, bridgeNs - (sent + received) / 2);
        }

        void CloseAll()
        {
            foreach (var session in _sessions)
            {
                var info = session.Info;
                if (info == null) continue;
                session.Lost("client stopped");
                TryClose(info.Session, Math.Min(_options.RequestTimeoutMs, 250));
            }
        }

        void TryClose(string id, int timeoutMs)
        {
            try
            {
                Request((w, rid) => RequestEncoder.Close(w, rid, id), timeoutMs);
            }
            catch (Exception e) when (e is BridgeErrorException || e is TimeoutException || e is InvalidOperationException || e is ZmtpException)
            {
                // Closing is a courtesy: the bridge reaps idle sessions anyway.
            }
        }

        void ReadReplies(ZmtpConnection dealer, int generation)
        {
            var buffer = new byte[4096];
            try
            {
                while (true)
                {
                    int length;
                    // We never send a delimiter, so replies are single frames; keep the last frame if not.
                    while (dealer.ReceiveFrame(ref buffer, 0, out length))
                    {
                    }
                    Reply reply;
                    try
                    {
                        reply = Reply.Parse(buffer, 0, length);
                    }
                    catch (Exception e) when (e is MsgPackException || e is ProtocolException)
                    {
                        _lastError = "unreadable reply: " + e.Message;
                        continue;
                    }
                    Dispatch(reply);
                }
            }
            catch (Exception e)
            {
                Fault(generation, e);
            }
        }

        void Dispatch(Reply reply)
        {
            lock (_pendingGate)
            {
                if (_waiting.Contains(reply.Id))
                {
                    _replies[reply.Id] = reply;
                    Monitor.PulseAll(_pendingGate);
                    return;
                }
            }
            if (!reply.IsError) return; // an ack nobody waits for
            var error = reply.ToException();
            Interlocked.Increment(ref _inputErrors);
            _lastInputError = error;
            if (error.ErrorCode == ErrorCode.UnknownSession && error.Session != null) LoseSession(error.Session, error.Message);
        }

        ZmtpConnection ConnectFrames() =>
            ZmtpConnection.Connect(_options.Host, _framesPort, ZmtpSocketType.Sub, _options.ConnectTimeoutMs, _options.MaxFrameBytes, _stop.Token);

        /// <summary>Subscribes the frame connection, and any that replaces it, to prefix.</summary>
        void Subscribe(string prefix)
        {
            lock (_subGate)
            {
                _subscriptions.Add(prefix);
                _sub?.Subscribe(prefix);
            }
        }

        /// <summary>
        /// Marks a session lost and, for a batched client, drops the per-session subscription its open
        /// made: a session reopened under a new id subscribes again, so without this the list (and the
        /// bridge's subscription table) would grow by one per reopen.
        /// </summary>
        void Lose(BridgeSession session, SessionInfo info, string why)
        {
            session.Lost(why);
            if (info == null || !_options.MotionBatch || info.Pipeline == Pipeline.Motion) return;
            lock (_subGate)
            {
                if (!_subscriptions.Remove(info.Topic)) return;
                try
                {
                    _sub?.Unsubscribe(info.Topic);
                }
                catch (Exception e) when (e is ZmtpException || e is ObjectDisposedException)
                {
                    // A broken frame connection is replaced with the list above, which no longer has it.
                }
            }
        }

        /// <summary>Prefixes the frame connection is subscribed to (for tests).</summary>
        internal int SubscriptionCount
        {
            get
            {
                lock (_subGate) return _subscriptions.Count;
            }
        }

        /// <summary>
        /// Resume at newest: drops the frame connection and all it holds, connects a fresh one with the
        /// same subscriptions. Throws when the bridge is gone (the connection then faults as usual) or
        /// when Disconnect is under way.
        /// </summary>
        ZmtpConnection Resubscribe(ZmtpConnection stale, int generation)
        {
            lock (_subGate)
            {
                if (_sub == stale) _sub = null;
            }
            stale.Dispose();
            var fresh = ConnectFrames();
            lock (_subGate)
            {
                if (generation != Volatile.Read(ref _generation))
                {
                    fresh.Dispose();
                    throw new ObjectDisposedException("frame connection", "the client is disconnecting");
                }
                try
                {
                    foreach (var prefix in _subscriptions) fresh.Subscribe(prefix);
                }
                catch
                {
                    fresh.Dispose();
                    throw;
                }
                _sub = fresh;
            }
            Interlocked.Increment(ref _resubscribes);
            return fresh;
        }

        void ReadFrames(ZmtpConnection sub, int generation)
        {
            var topic = new byte[64];
            var scratch = new byte[4096];
            var batch = new byte[_options.MotionBatch ? 64 * 1024 : 0]; // grows to the largest batch seen
            // Resume at newest: the thread looks at the socket at least every ReadPollMs, so a longer gap
            // between two looks means it was held up, and what is queued is stale.
            long resumeAfter = _options.ResumeAfterMs * Stopwatch.Frequency / 1000;
            long lastRead = Stopwatch.GetTimestamp();
            try
            {
                while (true)
                {
                    bool readable = sub.WaitReadable(ReadPollMs);
                    long now = Stopwatch.GetTimestamp();
                    bool paused = resumeAfter > 0 && now - lastRead > resumeAfter;
                    lastRead = now;
                    if (!readable) continue;
                    if (paused)
                    {
                        sub = Resubscribe(sub, generation);
                        lastRead = Stopwatch.GetTimestamp();
                        continue;
                    }
                    int topicLength;
                    if (!sub.ReceiveFrame(ref topic, 0, out topicLength)) continue; // not [topic, payload]: ignore
                    SessionInfo info;
                    var session = Route(topic, topicLength, out info);
                    if (session != null)
                    {
                        ReceiveFrame(sub, session, info);
                    }
                    else if (_options.MotionBatch && new ReadOnlySpan<byte>(topic, 0, topicLength).SequenceEqual(MotionBatchTopic))
                    {
                        int length;
                        bool more = sub.ReceiveFrame(ref batch, 0, out length);
                        if (more)
                        {
                            while (sub.SkipFrame())
                            {
                            }
                            _batches.Reject(); // not [topic, payload]
                            continue;
                        }
                        _batches.Deliver(batch, length, _sessions, WallClock.NowNs(), Interlocked.Read(ref _clockOffsetNs));
                    }
                    else if (StartsWith(topic, topicLength, ProtocolConstants.EventTopicPrefix))
                    {
                        int length;
                        bool more = sub.ReceiveFrame(ref scratch, 0, out length);
                        while (more) more = sub.SkipFrame();
                        HandleEvent(scratch, length);
                    }
                    else
                    {
                        while (sub.SkipFrame())
                        {
                        }
                    }
                }
            }
            catch (Exception e)
            {
                Fault(generation, e);
            }
        }

        void ReceiveFrame(ZmtpConnection sub, BridgeSession session, SessionInfo info)
        {
            var slot = session.Frames.Back;
            int length;
            bool more = sub.ReceiveFrame(ref slot.Buffer, 0, out length);
            long now = WallClock.NowNs();
            if (more)
            {
                while (sub.SkipFrame())
                {
                }
                session.Stats.Rejected();
                return;
            }
            try
            {
                _decoder.Decode(slot.Buffer, 0, length, slot.Frame, info.Session);
            }
            catch (Exception e) when (e is MsgPackException || e is ProtocolException)
            {
                session.Stats.Rejected();
                return;
            }
            slot.Frame.ReceivedNs = now;
            session.Stats.Record(slot.Frame, Interlocked.Read(ref _clockOffsetNs));
            session.Frames.Publish();
        }

        void HandleEvent(byte[] payload, int length)
        {
            BridgeEvent e;
            try
            {
                e = BridgeEvent.Parse(payload, 0, length);
            }
            catch (Exception ex) when (ex is MsgPackException || ex is ProtocolException)
            {
                return;
            }
            // A session of ours closed by the bridge (idle timeout, shutdown) is reopened by the supervisor.
            if (e.Name == "closed" && e.Reason != "client") LoseSession(e.Session, "closed by the bridge: " + e.Reason);
            try
            {
                EventReceived?.Invoke(e);
            }
            catch (Exception ex)
            {
                // A subscriber's bug must not take the connection down with it.
                _lastError = "EventReceived handler failed: " + ex.Message;
            }
        }

        void LoseSession(string id, string why)
        {
            foreach (var session in _sessions)
            {
                var info = session.Info;
                if (info != null && info.Session == id) Lose(session, info, why);
            }
            lock (_signal) Monitor.PulseAll(_signal);
        }

        BridgeSession Route(byte[] topic, int length, out SessionInfo info)
        {
            foreach (var session in _sessions)
            {
                // One read of Info: the session may be lost concurrently, and this frame is still its own.
                info = session.Info;
                if (info != null && new ReadOnlySpan<byte>(topic, 0, length).SequenceEqual(info.TopicBytes)) return session;
            }
            info = null;
            return null;
        }

        static bool StartsWith(byte[] bytes, int length, string prefix)
        {
            if (length < prefix.Length) return false;
            for (int i = 0; i < prefix.Length; i++)
                if (bytes[i] != prefix[i]) return false;
            return true;
        }

        void Fault(int generation, Exception e)
        {
            if (generation != Volatile.Read(ref _generation)) return;
            if (!_stopping) _lastError = e.Message;
            _faulted = true;
            lock (_signal) Monitor.PulseAll(_signal);
            lock (_pendingGate) Monitor.PulseAll(_pendingGate);
        }

        void Disconnect()
        {
            Interlocked.Increment(ref _generation); // from here on, failures of the old threads are ignored
            CloseSockets();
            JoinQuietly(_replyThread);
            JoinQuietly(_frameThread);
            _replyThread = _frameThread = null;
            foreach (var session in _sessions)
            {
                session.Lost(_stopping ? "client stopped" : "connection lost");
                session.ClearRefusal(); // a new connection may well accept it (e.g. after a bridge upgrade)
            }
            lock (_pendingGate) Monitor.PulseAll(_pendingGate);
        }

        void CloseSockets()
        {
            var dealer = _dealer;
            ZmtpConnection sub;
            lock (_subGate)
            {
                sub = _sub;
                _sub = null;
            }
            _dealer = null;
            dealer?.Dispose();
            sub?.Dispose();
        }

        void Sleep(int ms)
        {
            lock (_signal)
            {
                if (!_stopping) Monitor.Wait(_signal, ms);
            }
        }

        static Thread StartThread(ThreadStart body, string name)
        {
            // Background threads never keep a player or the editor from exiting.
            var thread = new Thread(body) { IsBackground = true, Name = name };
            thread.Start();
            return thread;
        }

        static void JoinQuietly(Thread thread)
        {
            if (thread != null && thread != Thread.CurrentThread) thread.Join(1000);
        }
    }
}
