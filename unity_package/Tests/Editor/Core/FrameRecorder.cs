using System;
using System.Collections.Generic;
using System.Text;
using System.Threading;
using AvatarBridge.Core.Protocol;
using AvatarBridge.Core.Zmtp;

namespace AvatarBridge.Tests.Core
{
    /// <summary>
    /// A second, independent subscriber that decodes and keeps every frame of every session, so the
    /// tests can check seq continuity frame by frame (the client itself keeps only the newest).
    /// </summary>
    sealed class FrameRecorder : IDisposable
    {
        readonly ZmtpConnection _sub;
        readonly Thread _thread;
        readonly List<RecordedFrame> _frames = new List<RecordedFrame>();

        public FrameRecorder(int framesPort)
        {
            _sub = ZmtpConnection.Connect("127.0.0.1", framesPort, ZmtpSocketType.Sub, 5000);
            _sub.Subscribe(ProtocolConstants.FrameTopicPrefix);
            _thread = new Thread(Run) { IsBackground = true };
            _thread.Start();
            Thread.Sleep(200); // PUB/SUB: let the subscription reach the bridge before anything is opened
        }

        public List<RecordedFrame> Of(string session)
        {
            lock (_frames) return _frames.FindAll(f => f.Session == session);
        }

        public void Dispose()
        {
            _sub.Dispose();
            _thread.Join(2000);
        }

        void Run()
        {
            var topic = new byte[64];
            var payload = new byte[4096];
            var decoder = new FrameDecoder();
            var frame = new Frame();
            try
            {
                while (true)
                {
                    int topicLength, length;
                    _sub.ReceiveFrame(ref topic, 0, out topicLength);
                    _sub.ReceiveFrame(ref payload, 0, out length);
                    decoder.Decode(payload, 0, length, frame, null);
                    var recorded = new RecordedFrame
                    {
                        Topic = Encoding.ASCII.GetString(topic, 0, topicLength),
                        Session = frame.Session,
                        Pipeline = frame.Pipeline,
                        Seq = frame.Seq,
                        InputSeq = frame.InputSeq,
                        CaptureNs = frame.CaptureNs,
                        PublishNs = frame.PublishNs,
                        EngineUs = frame.EngineMicroseconds,
                        Batch = frame.Batch,
                        FaceFound = frame.FaceFound,
                        Expression = frame.Expression.ToArray(),
                        Eyelids = frame.Eyelids.ToArray(),
                        Jaw = frame.Jaw.ToArray(),
                        Head = frame.Head.ToArray(),
                        Blendshapes = frame.Blendshapes.ToArray(),
                        Joints = frame.Joints.ToArray(),
                        Root = frame.Root.ToArray(),
                        Visemes = frame.Visemes.ToArray(),
                        Vowels = frame.Vowels.ToArray(),
                        Voice = frame.Voice,
                    };
                    lock (_frames) _frames.Add(recorded);
                }
            }
            catch (ZmtpException)
            {
                // Disposed.
            }
        }
    }
}
