using System;
using System.Diagnostics;

namespace AvatarBridge.Core.Client
{
    /// <summary>
    /// Wall clock in nanoseconds since the Unix epoch, the protocol's time base. DateTime.UtcNow ticks
    /// in coarse steps on some platforms (up to ~16 ms on Windows), too coarse for latency; so the
    /// time is a Stopwatch offset from a DateTime anchor, re-anchored each minute to follow clock
    /// adjustments without per-call jumps.
    /// </summary>
    public static class WallClock
    {
        const long UnixEpochTicks = 621355968000000000L;
        const long ReanchorNs = 60L * 1000 * 1000 * 1000;
        static readonly double NsPerTick = 1e9 / Stopwatch.Frequency;
        static WallClockAnchor _anchor = NewAnchor();

        public static long NowNs()
        {
            var anchor = _anchor;
            long elapsed = (long)((Stopwatch.GetTimestamp() - anchor.Timestamp) * NsPerTick);
            if (elapsed > ReanchorNs) _anchor = NewAnchor(); // a reference swap: safe from any thread
            return anchor.WallNs + elapsed;
        }

        static WallClockAnchor NewAnchor() => new WallClockAnchor((DateTime.UtcNow.Ticks - UnixEpochTicks) * 100, Stopwatch.GetTimestamp());
    }
}
