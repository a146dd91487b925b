using System;
using System.Runtime.InteropServices;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>
    /// One decoded animation frame (section 5) as a view over its receive buffer: header fields are
    /// copied out, arrays are float spans over the msgpack bins (no copy, no allocation). A Frame is
    /// reused; its arrays are valid until the buffer it views is refilled, which the client's
    /// newest-frame handoff guarantees not to happen while the main thread holds it.
    /// </summary>
    public sealed class Frame
    {
        byte[] _buffer = Array.Empty<byte>();
        // Byte offset and float count of each array inside _buffer.
        int _expressionAt, _expressionCount;
        int _eyelidsAt, _eyelidsCount;
        int _jawAt, _jawCount;
        int _headAt, _headCount;
        int _blendshapesAt, _blendshapesCount;
        int _jointsAt, _jointsCount;
        int _rootAt, _rootCount;

        public Pipeline Pipeline { get; internal set; }
        /// <summary>Session id; the client sets its own session's string, so routing allocates nothing.</summary>
        public string Session { get; internal set; }
        public ulong Seq { get; internal set; }
        public ulong InputSeq { get; internal set; }
        public long CaptureNs { get; internal set; }
        public long PublishNs { get; internal set; }
        public double EngineMicroseconds { get; internal set; }
        public int Batch { get; internal set; }
        /// <summary>Face only: false when no face was found (arrays then hold the last good values).</summary>
        public bool FaceFound { get; internal set; }
        /// <summary>Position of this frame in its session's handoff (1, 2, ...), so each reader can tell new from seen.</summary>
        public long Number { get; internal set; }
        /// <summary>Client wall clock (ns since the Unix epoch) when the frame arrived; set by the receiver.</summary>
        public long ReceivedNs { get; internal set; }

        /// <summary>Face: 50 FLAME expression coefficients.</summary>
        public ReadOnlySpan<float> Expression => View(_expressionAt, _expressionCount);
        /// <summary>Face: left, right eyelid closure in [0, 1].</summary>
        public ReadOnlySpan<float> Eyelids => View(_eyelidsAt, _eyelidsCount);
        /// <summary>Face: jaw quaternion (x, y, z, w) relative to the head, wire coordinates.</summary>
        public ReadOnlySpan<float> Jaw => View(_jawAt, _jawCount);
        /// <summary>Face: head quaternion (x, y, z, w), wire coordinates.</summary>
        public ReadOnlySpan<float> Head => View(_headAt, _headCount);
        /// <summary>Face: 52 ARKit weights in [0, 1] in rig order, or empty when the session did not ask for them.</summary>
        public ReadOnlySpan<float> Blendshapes => View(_blendshapesAt, _blendshapesCount);
        /// <summary>Motion: 24×4 local joint quaternions (x, y, z, w), rig order, wire coordinates.</summary>
        public ReadOnlySpan<float> Joints => View(_jointsAt, _jointsCount);
        /// <summary>Motion: root translation (x, y, z) in metres, wire coordinates.</summary>
        public ReadOnlySpan<float> Root => View(_rootAt, _rootCount);

        /// <summary>End-to-end latency in milliseconds: arrival minus capture (both on the client's clock for its own inputs).</summary>
        public double LatencyMilliseconds => (ReceivedNs - CaptureNs) / 1e6;

        internal void Bind(byte[] buffer)
        {
            _buffer = buffer;
            _expressionCount = _eyelidsCount = _jawCount = _headCount = _blendshapesCount = _jointsCount = _rootCount = 0;
        }

        internal void SetExpression(int at, int count) { _expressionAt = at; _expressionCount = count; }
        internal void SetEyelids(int at, int count) { _eyelidsAt = at; _eyelidsCount = count; }
        internal void SetJaw(int at, int count) { _jawAt = at; _jawCount = count; }
        internal void SetHead(int at, int count) { _headAt = at; _headCount = count; }
        internal void SetBlendshapes(int at, int count) { _blendshapesAt = at; _blendshapesCount = count; }
        internal void SetJoints(int at, int count) { _jointsAt = at; _jointsCount = count; }
        internal void SetRoot(int at, int count) { _rootAt = at; _rootCount = count; }

        // Bins are little-endian float32 and every Unity/Mono platform is little-endian, so a cast is
        // the whole decode. Unaligned float loads are fine on x86-64 and ARM64.
        ReadOnlySpan<float> View(int at, int count) =>
            count == 0 ? ReadOnlySpan<float>.Empty : MemoryMarshal.Cast<byte, float>(new ReadOnlySpan<byte>(_buffer, at, count * 4));
    }
}
