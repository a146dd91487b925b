using System;
using System.Text;
using AvatarBridge.Core.MsgPack;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>
    /// Decodes a frame payload (section 5) into a reused Frame without allocating: keys are compared
    /// as bytes, arrays are copied into the Frame's own aligned storage. Every required key is checked and every array's size
    /// is checked against the count the contract gives; unknown keys are skipped.
    /// </summary>
    public sealed class FrameDecoder
    {
        // Presence bits of the required keys.
        const int HasOp = 1, HasV = 2, HasSession = 4, HasPipeline = 8, HasSeq = 16, HasInputSeq = 32,
            HasCapture = 64, HasPublish = 128, HasEngine = 256, HasBatch = 512, HasFaceFound = 1024,
            HasExpression = 2048, HasEyelids = 4096, HasJaw = 8192, HasHead = 16384, HasBlendshapes = 32768,
            HasJoints = 65536, HasRoot = 131072, HasGaze = 262144, HasHeadPosition = 524288, HasVisemes = 1 << 20,
            HasVowels = 1 << 21, HasVoice = 1 << 22, HasBody = 1 << 23, HasBodyFound = 1 << 24, HasHandsFound = 1 << 25;
        const int CommonKeys = HasOp | HasV | HasSession | HasPipeline | HasSeq | HasInputSeq | HasCapture | HasPublish | HasEngine | HasBatch;
        const int FaceKeys = CommonKeys | HasFaceFound | HasExpression | HasEyelids | HasJaw | HasHead | HasBlendshapes;
        const int MotionKeys = CommonKeys | HasJoints | HasRoot;

        static readonly byte[] KeyOp = Ascii("op"), KeyV = Ascii("v"), KeySession = Ascii("session"),
            KeyPipeline = Ascii("pipeline"), KeySeq = Ascii("seq"), KeyInputSeq = Ascii("input_seq"),
            KeyCapture = Ascii("t_capture_ns"), KeyPublish = Ascii("t_publish_ns"), KeyEngine = Ascii("engine_us"),
            KeyBatch = Ascii("batch"), KeyFaceFound = Ascii("face_found"), KeyExpression = Ascii("expression"),
            KeyEyelids = Ascii("eyelids"), KeyJaw = Ascii("jaw"), KeyHead = Ascii("head"),
            KeyBlendshapes = Ascii("blendshapes"), KeyJoints = Ascii("joints"), KeyRoot = Ascii("root"),
            KeyGaze = Ascii("gaze"), KeyHeadPosition = Ascii("head_position"), KeyVisemes = Ascii("visemes"),
            KeyVowels = Ascii("vowels"), KeyVoice = Ascii("voice"), KeyBody = Ascii("body"), KeyBodyFound = Ascii("body_found"),
            KeyHandsFound = Ascii("hands_found");
        static readonly byte[] ValueFrame = Ascii("frame"), ValueFace = Ascii("face"), ValueMotion = Ascii("motion");

        readonly MsgPackReader _reader = new MsgPackReader();

        /// <summary>
        /// Decodes buffer[offset..offset+count) into frame. expectedSession, when given, must match the
        /// frame's session and becomes frame.Session (no allocation); without it the id is allocated.
        /// Throws ProtocolException or MsgPackException when the payload breaks the contract.
        /// </summary>
        public void Decode(byte[] buffer, int offset, int count, Frame frame, string expectedSession)
        {
            var r = _reader;
            r.Reset(buffer, offset, count);
            frame.Bind(buffer);
            int seen = 0;
            int fields = r.ReadMapHeader();
            for (int i = 0; i < fields; i++)
            {
                if (r.PeekType() != MsgPackType.String) throw new ProtocolException("frame: map keys must be strings");
                var key = r.ReadStringBytes();
                if (key.SequenceEqual(KeyOp))
                {
                    if (!r.ReadStringBytes().SequenceEqual(ValueFrame)) throw new ProtocolException("frame: op must be 'frame'");
                    seen |= HasOp;
                }
                else if (key.SequenceEqual(KeyV))
                {
                    long v = r.ReadInt64();
                    if (v != ProtocolConstants.Version) throw new ProtocolException("frame: version " + v + " is not supported");
                    seen |= HasV;
                }
                else if (key.SequenceEqual(KeySession))
                {
                    var id = r.ReadStringBytes();
                    if (expectedSession == null) frame.Session = Encoding.UTF8.GetString(buffer, r.Position - id.Length, id.Length);
                    else if (!AsciiEquals(id, expectedSession)) throw new ProtocolException("frame: session does not match its topic");
                    else frame.Session = expectedSession;
                    seen |= HasSession;
                }
                else if (key.SequenceEqual(KeyPipeline))
                {
                    var name = r.ReadStringBytes();
                    if (name.SequenceEqual(ValueFace)) frame.Pipeline = Pipeline.Face;
                    else if (name.SequenceEqual(ValueMotion)) frame.Pipeline = Pipeline.Motion;
                    else throw new ProtocolException("frame: unknown pipeline '" + Encoding.UTF8.GetString(name.ToArray()) + "'");
                    seen |= HasPipeline;
                }
                else if (key.SequenceEqual(KeySeq)) { frame.Seq = r.ReadUInt64(); seen |= HasSeq; }
                else if (key.SequenceEqual(KeyInputSeq)) { frame.InputSeq = r.ReadUInt64(); seen |= HasInputSeq; }
                else if (key.SequenceEqual(KeyCapture)) { frame.CaptureNs = r.ReadInt64(); seen |= HasCapture; }
                else if (key.SequenceEqual(KeyPublish)) { frame.PublishNs = r.ReadInt64(); seen |= HasPublish; }
                else if (key.SequenceEqual(KeyEngine)) { frame.EngineMicroseconds = r.ReadDouble(); seen |= HasEngine; }
                else if (key.SequenceEqual(KeyBatch)) { frame.Batch = (int)r.ReadInt64(); seen |= HasBatch; }
                else if (key.SequenceEqual(KeyFaceFound)) { frame.FaceFound = r.ReadBoolean(); seen |= HasFaceFound; }
                else if (key.SequenceEqual(KeyExpression))
                {
                    int at, length;
                    r.ReadBinarySegment(out at, out length);
                    // 50 FLAME codes, or none from the face tracker (section 5.1).
                    if (length != 0 && length != ProtocolConstants.ExpressionCount * 4)
                        throw new ProtocolException("frame: 'expression' must hold 0 or 50 float32, got " + length + " bytes");
                    frame.SetExpression(at, length / 4);
                    seen |= HasExpression;
                }
                else if (key.SequenceEqual(KeyGaze)) { int at = Floats(r, 4, "gaze"); frame.SetGaze(at, 4); seen |= HasGaze; }
                else if (key.SequenceEqual(KeyHeadPosition)) { int at = Floats(r, 3, "head_position"); frame.SetHeadPosition(at, 3); seen |= HasHeadPosition; }
                // Speech's keys (section 5.2): optional (absent or nil in other sessions' frames), sized when present.
                else if (key.SequenceEqual(KeyVisemes))
                {
                    if (!r.TryReadNil()) frame.SetVisemes(Floats(r, ProtocolConstants.VisemeCount, "visemes"), ProtocolConstants.VisemeCount);
                    seen |= HasVisemes;
                }
                else if (key.SequenceEqual(KeyVowels))
                {
                    if (!r.TryReadNil()) frame.SetVowels(Floats(r, ProtocolConstants.VowelCount, "vowels"), ProtocolConstants.VowelCount);
                    seen |= HasVowels;
                }
                else if (key.SequenceEqual(KeyVoice))
                {
                    if (!r.TryReadNil()) frame.Voice = r.ReadBoolean();
                    seen |= HasVoice;
                }
                // The body's keys (section 5.1.2): optional like speech's, sized when present.
                else if (key.SequenceEqual(KeyBody))
                {
                    const int floats = ProtocolConstants.HumanoidJointCount * 4;
                    if (!r.TryReadNil()) frame.SetBody(Floats(r, floats, "body"), floats);
                    seen |= HasBody;
                }
                else if (key.SequenceEqual(KeyBodyFound))
                {
                    if (!r.TryReadNil()) frame.BodyFound = r.ReadBoolean();
                    seen |= HasBodyFound;
                }
                else if (key.SequenceEqual(KeyHandsFound))
                {
                    if (!r.TryReadNil())
                    {
                        if (r.ReadArrayHeader() != 2) throw new ProtocolException("frame: 'hands_found' must hold 2 bools (left, right)");
                        frame.LeftHandFound = r.ReadBoolean();
                        frame.RightHandFound = r.ReadBoolean();
                    }
                    seen |= HasHandsFound;
                }
                else if (key.SequenceEqual(KeyEyelids)) { int at = Floats(r, ProtocolConstants.EyelidCount, "eyelids"); frame.SetEyelids(at, ProtocolConstants.EyelidCount); seen |= HasEyelids; }
                else if (key.SequenceEqual(KeyJaw)) { int at = Floats(r, 4, "jaw"); frame.SetJaw(at, 4); seen |= HasJaw; }
                else if (key.SequenceEqual(KeyHead)) { int at = Floats(r, 4, "head"); frame.SetHead(at, 4); seen |= HasHead; }
                else if (key.SequenceEqual(KeyBlendshapes))
                {
                    int at, length;
                    r.ReadBinarySegment(out at, out length);
                    // 52 weights, or an empty bin when the session opened with blendshapes off.
                    if (length != 0 && length != ProtocolConstants.BlendshapeCount * 4)
                        throw new ProtocolException("frame: 'blendshapes' must hold 0 or 52 float32, got " + length + " bytes");
                    frame.SetBlendshapes(at, length / 4);
                    seen |= HasBlendshapes;
                }
                else if (key.SequenceEqual(KeyJoints)) { int at = Floats(r, ProtocolConstants.JointCount * 4, "joints"); frame.SetJoints(at, ProtocolConstants.JointCount * 4); seen |= HasJoints; }
                else if (key.SequenceEqual(KeyRoot)) { int at = Floats(r, 3, "root"); frame.SetRoot(at, 3); seen |= HasRoot; }
                else r.Skip();
            }
            int required = (seen & HasPipeline) == 0 ? CommonKeys : frame.Pipeline == Pipeline.Face ? FaceKeys : MotionKeys;
            if ((seen & required) != required) throw new ProtocolException("frame: missing '" + MissingKey(required & ~seen) + "'");
        }

        static int Floats(MsgPackReader r, int count, string key)
        {
            int at, length;
            r.ReadBinarySegment(out at, out length);
            if (length != count * 4) throw new ProtocolException("frame: '" + key + "' must hold " + count + " float32, got " + length + " bytes");
            return at;
        }

        static bool AsciiEquals(ReadOnlySpan<byte> bytes, string text)
        {
            if (bytes.Length != text.Length) return false;
            for (int i = 0; i < bytes.Length; i++)
                if (bytes[i] != text[i]) return false;
            return true;
        }

        static string MissingKey(int missing)
        {
            var keys = new[] { KeyOp, KeyV, KeySession, KeyPipeline, KeySeq, KeyInputSeq, KeyCapture, KeyPublish, KeyEngine, KeyBatch,
                KeyFaceFound, KeyExpression, KeyEyelids, KeyJaw, KeyHead, KeyBlendshapes, KeyJoints, KeyRoot };
            for (int bit = 0; bit < keys.Length; bit++)
                if ((missing & (1 << bit)) != 0) return Encoding.ASCII.GetString(keys[bit]);
            return "?";
        }

        static byte[] Ascii(string text) => Encoding.ASCII.GetBytes(text);
    }
}
