using AvatarBridge.Core.Protocol;

namespace AvatarBridge.Core.Client
{
    /// <summary>Per-session receive statistics, written by the receive thread, read by anyone through Snapshot.</summary>
    public sealed class FrameStats
    {
        const double Smoothing = 0.1;       // weight of the newest sample in the averages
        const long FpsWindowNs = 1000000000; // FPS is frames per completed one-second window

        readonly object _gate = new object();
        FrameStatsSnapshot _values;
        bool _hasSeq;
        long _windowStartNs;
        int _windowFrames;

        public FrameStatsSnapshot Snapshot()
        {
            lock (_gate) return _values;
        }

        /// <summary>Forget the sequence (a reopened session starts again at seq 0).</summary>
        public void ResetSequence()
        {
            lock (_gate) _hasSeq = false;
        }

        internal void Rejected()
        {
            lock (_gate) _values.Rejected++;
        }

        internal void Record(Frame frame, long clockOffsetNs)
        {
            lock (_gate)
            {
                if (_hasSeq && frame.Seq > _values.LastSeq + 1) _values.Lost += (long)(frame.Seq - _values.LastSeq - 1);
                _hasSeq = true;
                _values.LastSeq = frame.Seq;
                _values.Received++;

                double latency = frame.LatencyMilliseconds;
                double transport = (frame.ReceivedNs + clockOffsetNs - frame.PublishNs) / 1e6;
                bool first = _values.Received == 1;
                _values.LatencyMs = first ? latency : _values.LatencyMs + (latency - _values.LatencyMs) * Smoothing;
                _values.TransportMs = first ? transport : _values.TransportMs + (transport - _values.TransportMs) * Smoothing;
                _values.EngineUs = first ? frame.EngineMicroseconds : _values.EngineUs + (frame.EngineMicroseconds - _values.EngineUs) * Smoothing;

                if (_windowFrames == 0) _windowStartNs = frame.ReceivedNs;
                _windowFrames++;
                long elapsed = frame.ReceivedNs - _windowStartNs;
                if (elapsed >= FpsWindowNs)
                {
                    _values.Fps = (_windowFrames - 1) * 1e9 / elapsed;
                    _windowFrames = 1;
                    _windowStartNs = frame.ReceivedNs;
                }
            }
        }
    }
}
