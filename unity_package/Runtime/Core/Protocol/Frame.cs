using System;
using System.Buffers.Binary;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>
    /// One decoded animation frame (section 5): header fields and arrays copied out of the receive
    /// buffer into storage the Frame owns, allocated once. The arrays are copied (a few hundred bytes
    /// per frame) rather than viewed in place because a msgpack bin starts at any byte offset, and an
    /// unaligned float load faults on some ARMv7 IL2CPP targets. A Frame is reused; its arrays are valid
    /// until the next decode into it, which the client's newest-frame handoff guarantees not to happen
    /// while the main thread holds it.
    /// </summary>
    public sealed class Frame
    {
        // Fixed places of each array inside _floats (the contract fixes every size).
        const int ExpressionAt = 0, EyelidsAt = ExpressionAt + ProtocolConstants.ExpressionCount, JawAt = EyelidsAt + ProtocolConstants.EyelidCount,
            HeadAt = JawAt + 4, BlendshapesAt = HeadAt + 4, JointsAt = BlendshapesAt + ProtocolConstants.BlendshapeCount,
            RootAt = JointsAt + ProtocolConstants.JointCount * 4, GazeAt = RootAt + 3, HeadPositionAt = GazeAt + 4,
            VisemesAt = HeadPositionAt + 3, VowelsAt = VisemesAt + ProtocolConstants.VisemeCount, BodyAt = VowelsAt + ProtocolConstants.VowelCount,
            Capacity = BodyAt + ProtocolConstants.HumanoidJointCount * 4;

        readonly float[] _floats = new float[Capacity];
        byte[] _buffer = Array.Empty<byte>();
        int _expressionCount, _eyelidsCount, _jawCount, _headCount, _blendshapesCount, _jointsCount, _rootCount, _gazeCount, _headPositionCount,
            _visemesCount, _vowelsCount, _bodyCount;

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
        /// <summary>Speech only (section 5.2): voice activity; false while the mouth is closing, and in every other session's frames.</summary>
        public bool Voice { get; internal set; }
        /// <summary>Face with body (section 5.1.2): a body was tracked in this image; false in every other session's frames.</summary>
        public bool BodyFound { get; internal set; }
        /// <summary>Face with body: the subject's own left / right hand was tracked (after the bridge's mirror); false otherwise.</summary>
        public bool LeftHandFound { get; internal set; }
        public bool RightHandFound { get; internal set; }
        /// <summary>Position of this frame in its session's handoff (1, 2, ...), so each reader can tell new from seen.</summary>
        public long Number { get; internal set; }
        /// <summary>Client wall clock (ns since the Unix epoch) when the frame arrived; set by the receiver.</summary>
        public long ReceivedNs { get; internal set; }

        /// <summary>Face: 50 FLAME expression coefficients; empty from the face tracker, which has none.</summary>
        public ReadOnlySpan<float> Expression => View(ExpressionAt, _expressionCount);
        /// <summary>Face: left, right eyelid closure in [0, 1].</summary>
        public ReadOnlySpan<float> Eyelids => View(EyelidsAt, _eyelidsCount);
        /// <summary>Face: jaw quaternion (x, y, z, w) relative to the head, wire coordinates.</summary>
        public ReadOnlySpan<float> Jaw => View(JawAt, _jawCount);
        /// <summary>Face: head quaternion (x, y, z, w), wire coordinates.</summary>
        public ReadOnlySpan<float> Head => View(HeadAt, _headCount);
        /// <summary>Face: 52 ARKit weights in [0, 1] in rig order, or empty when the session did not ask for them.</summary>
        public ReadOnlySpan<float> Blendshapes => View(BlendshapesAt, _blendshapesCount);
        /// <summary>
        /// Face tracking only (empty otherwise): left eye yaw, pitch, right eye yaw, pitch in radians, wire
        /// axes: yaw &gt; 0 towards the subject's left (about +Y), pitch &gt; 0 up (about −X). In Unity's
        /// left-handed axes a turn to the subject's left is a negative turn about +Y.
        /// </summary>
        public ReadOnlySpan<float> Gaze => View(GazeAt, _gazeCount);
        /// <summary>Face tracking only (empty otherwise): head position in metres, camera at the origin looking along −Z, wire axes.</summary>
        public ReadOnlySpan<float> HeadPosition => View(HeadPositionAt, _headPositionCount);
        /// <summary>
        /// Speech only (empty otherwise): 15 Oculus viseme weights, sum ≈ 1, in the order of
        /// Rig.SpeechShapes.VisemeNames (sil, PP, FF, TH, DD, kk, CH, SS, nn, RR, aa, E, ih, oh, ou).
        /// </summary>
        public ReadOnlySpan<float> Visemes => View(VisemesAt, _visemesCount);
        /// <summary>Speech only (empty otherwise): VRM's vowels A, I, U, E, O in [0, 1].</summary>
        public ReadOnlySpan<float> Vowels => View(VowelsAt, _vowelsCount);
        /// <summary>
        /// Face with body (section 5.1.2; empty otherwise): 50×4 local joint quaternions (x, y, z, w) of the
        /// humanoid in FaceRig.Body order (Hips ... fingers), each relative to its parent, wire coordinates.
        /// </summary>
        public ReadOnlySpan<float> Body => View(BodyAt, _bodyCount);
        /// <summary>Motion: 24×4 local joint quaternions (x, y, z, w), rig order, wire coordinates.</summary>
        public ReadOnlySpan<float> Joints => View(JointsAt, _jointsCount);
        /// <summary>Motion: root translation (x, y, z) in metres, wire coordinates.</summary>
        public ReadOnlySpan<float> Root => View(RootAt, _rootCount);

        /// <summary>End-to-end latency in milliseconds: arrival minus capture (both on the client's clock for its own inputs).</summary>
        public double LatencyMilliseconds => (ReceivedNs - CaptureNs) / 1e6;

        internal void Bind(byte[] buffer)
        {
            _buffer = buffer;
            _expressionCount = _eyelidsCount = _jawCount = _headCount = _blendshapesCount = _jointsCount = _rootCount = _gazeCount = _headPositionCount = 0;
            _visemesCount = _vowelsCount = _bodyCount = 0;
            Voice = BodyFound = LeftHandFound = RightHandFound = false;
        }

        internal void SetExpression(int at, int count) => _expressionCount = Copy(at, count, ExpressionAt);
        internal void SetEyelids(int at, int count) => _eyelidsCount = Copy(at, count, EyelidsAt);
        internal void SetJaw(int at, int count) => _jawCount = Copy(at, count, JawAt);
        internal void SetHead(int at, int count) => _headCount = Copy(at, count, HeadAt);
        internal void SetBlendshapes(int at, int count) => _blendshapesCount = Copy(at, count, BlendshapesAt);
        internal void SetJoints(int at, int count) => _jointsCount = Copy(at, count, JointsAt);
        internal void SetRoot(int at, int count) => _rootCount = Copy(at, count, RootAt);
        internal void SetGaze(int at, int count) => _gazeCount = Copy(at, count, GazeAt);
        internal void SetHeadPosition(int at, int count) => _headPositionCount = Copy(at, count, HeadPositionAt);
        internal void SetVisemes(int at, int count) => _visemesCount = Copy(at, count, VisemesAt);
        internal void SetVowels(int at, int count) => _vowelsCount = Copy(at, count, VowelsAt);
        internal void SetBody(int at, int count) => _bodyCount = Copy(at, count, BodyAt);

        // Buffer.BlockCopy moves bytes, so the source offset needs no alignment. Bins are little-endian
        // float32, as is every platform Unity ships to; a big-endian host swaps each value.
        int Copy(int at, int count, int into)
        {
            System.Buffer.BlockCopy(_buffer, at, _floats, into * 4, count * 4);
            if (!BitConverter.IsLittleEndian)
                for (int i = 0; i < count; i++)
                    _floats[into + i] = BitConverter.Int32BitsToSingle(BinaryPrimitives.ReadInt32LittleEndian(new ReadOnlySpan<byte>(_buffer, at + i * 4, 4)));
            return count;
        }

        ReadOnlySpan<float> View(int at, int count) => new ReadOnlySpan<float>(_floats, at, count);
    }
}
