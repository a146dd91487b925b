using System;
using System.Collections.Generic;
using AvatarBridge.Core.MsgPack;
using AvatarBridge.Core.Protocol;
using AvatarBridge.Core.Rig;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>Speech frames (section 5.2): visemes, vowels and voice, from the bridge's encoder and handmade.</summary>
    public class SpeechFrameTests
    {
        const string Session = "0123456789abcdef";
        static readonly float[] Vowels = { 0.1f, 0.2f, 0.3f, 0.4f, 0.5f };

        [Test]
        public void DecodesASpeechFrameEncodedByTheBridge()
        {
            var payload = TestEnvironment.Fixture("speech_frame");
            var frame = new Frame();
            new FrameDecoder().Decode(payload, 0, payload.Length, frame, Session);
            Assert.AreEqual(Pipeline.Face, frame.Pipeline, "speech publishes face frames");
            Assert.AreEqual(9UL, frame.Seq);
            Assert.AreEqual(0, frame.Expression.Length);
            Assert.AreEqual(52, frame.Blendshapes.Length);
            // Formulas of make_fixtures.py.
            Assert.AreEqual(ProtocolConstants.VisemeCount, frame.Visemes.Length);
            for (int i = 0; i < 15; i++) Assert.AreEqual((i + 1) / 120f, frame.Visemes[i], 1e-7, "viseme " + SpeechShapes.VisemeNames[i]);
            Assert.AreEqual(Vowels, frame.Vowels.ToArray());
            Assert.IsTrue(frame.Voice);
        }

        [Test]
        public void ASpeechOpenReplyIsASpeechSessionWithAFaceRig()
        {
            var payload = TestEnvironment.Fixture("open_speech_reply");
            var info = SessionInfo.FromReply(Reply.Parse(payload, 0, payload.Length));
            Assert.AreEqual(Pipeline.Speech, info.Pipeline);
            Assert.AreEqual("speech_visemes", info.Model);
            CollectionAssert.AreEqual(new[] { "audio" }, info.Accepts);
            Assert.AreEqual(0, info.FeatureColumns);
            Assert.AreEqual(52, info.FaceRig.Blendshapes.Length);
            CollectionAssert.AreEqual(new[] { "visemes", "vowels", "voice" }, info.FaceRig.Extras);
            Assert.AreEqual("speech", ProtocolConstants.PipelineName(Pipeline.Speech), "what an open request for it sends");
        }

        [Test]
        public void OtherFramesIntoTheSameFrameCarryNoStaleSpeech()
        {
            var frame = new Frame();
            var decoder = new FrameDecoder();
            var w = SpeechFrame(15, 5, voice: true);
            decoder.Decode(w.Buffer, 0, w.Length, frame, Session);
            Assert.AreEqual(15, frame.Visemes.Length);
            Assert.IsTrue(frame.Voice);
            var face = TestEnvironment.Fixture("face_frame");
            decoder.Decode(face, 0, face.Length, frame, Session);
            Assert.AreEqual(0, frame.Visemes.Length);
            Assert.AreEqual(0, frame.Vowels.Length);
            Assert.IsFalse(frame.Voice);
        }

        [Test]
        public void NilSpeechKeysMeanAbsent()
        {
            var w = SpeechFrame(-1, -1, voice: null);
            var frame = new Frame();
            new FrameDecoder().Decode(w.Buffer, 0, w.Length, frame, Session);
            Assert.AreEqual(0, frame.Visemes.Length);
            Assert.AreEqual(0, frame.Vowels.Length);
            Assert.IsFalse(frame.Voice);
        }

        [Test]
        public void WrongSpeechArraysAreRejectedByName()
        {
            AssertRejected(SpeechFrame(14, 5, true), "visemes");
            AssertRejected(SpeechFrame(16, 5, true), "visemes");
            AssertRejected(SpeechFrame(15, 4, true), "vowels");
            AssertRejected(SpeechFrame(15, 0, true), "vowels");
            var w = SpeechFrame(15, 5, true, voiceAsInt: true);
            Assert.Throws<MsgPackException>(() => new FrameDecoder().Decode(w.Buffer, 0, w.Length, new Frame(), Session), "voice must be a bool");
        }

        [Test]
        public void SpeechArraysAreTheSameAtEveryAlignment()
        {
            var payload = TestEnvironment.Fixture("speech_frame");
            for (int shift = 0; shift < 4; shift++)
            {
                var buffer = new byte[payload.Length + shift];
                Buffer.BlockCopy(payload, 0, buffer, shift, payload.Length);
                var frame = new Frame();
                new FrameDecoder().Decode(buffer, shift, payload.Length, frame, Session);
                Array.Clear(buffer, 0, buffer.Length);
                Assert.AreEqual(15 / 120f, frame.Visemes[14], 1e-7, "shift " + shift);
                Assert.AreEqual(Vowels, frame.Vowels.ToArray(), "shift " + shift);
            }
        }

        [Test]
        public void DecodingSpeechAllocatesNothing()
        {
            var payload = TestEnvironment.Fixture("speech_frame");
            var frame = new Frame();
            var decoder = new FrameDecoder();
            decoder.Decode(payload, 0, payload.Length, frame, Session); // warm up
            float sum = 0;
            long before = GC.GetAllocatedBytesForCurrentThread();
            for (int i = 0; i < 1000; i++)
            {
                decoder.Decode(payload, 0, payload.Length, frame, Session);
                sum += frame.Visemes[14] + frame.Vowels[4] + (frame.Voice ? 1 : 0);
            }
            long allocated = GC.GetAllocatedBytesForCurrentThread() - before;
            Assert.AreEqual(0, allocated, "bytes allocated by 1000 decodes");
            Assert.AreEqual(1000 * (0.125f + 0.5f + 1f), sum, 1e-2);
        }

        [Test]
        public void VisemeAndVowelShapesBindUnderTheirUsualSpellings()
        {
            // Ready Player Me, VRChat (after the dot), OVRLipSync's own names; VRoid, MMD, VRM 1.0 presets.
            var mesh = new[] { "viseme_sil", "viseme_PP", "vrc.v_ff", "TH", "viseme_I", "viseme_O", "viseme_U", "unrelated" };
            var bindings = BlendshapeBinder.Bind(SpeechShapes.VisemeNames, SpeechShapes.VisemeSpellings, mesh, null, true);
            var bound = new Dictionary<string, string>();
            foreach (var b in bindings) bound[SpeechShapes.VisemeNames[b.Source]] = mesh[b.Target];
            Assert.AreEqual("viseme_sil", bound["sil"]);
            Assert.AreEqual("viseme_PP", bound["PP"]);
            Assert.AreEqual("vrc.v_ff", bound["FF"]);
            Assert.AreEqual("TH", bound["TH"]);
            Assert.AreEqual("viseme_I", bound["ih"]);
            Assert.AreEqual("viseme_O", bound["oh"]);
            Assert.AreEqual("viseme_U", bound["ou"]);
            Assert.AreEqual(7, bindings.Length);

            var face = new[] { "Fcl_MTH_A", "Fcl_MTH_I", "\u3046", "ee", "MTH_O", "Fcl_MTH_Angry" };
            var vowels = BlendshapeBinder.Bind(SpeechShapes.VowelNames, SpeechShapes.VowelSpellings, face, null, true);
            Assert.AreEqual(5, vowels.Length);
            for (int v = 0; v < 5; v++) Assert.AreEqual(v, vowels[v].Target, "vowel " + SpeechShapes.VowelNames[v]);
            // Without the spellings only exact (normalized) names bind, as before.
            Assert.AreEqual(1, BlendshapeBinder.Bind(SpeechShapes.VisemeNames, mesh, null, true).Length);
        }

        [Test]
        public void VowelsReplaceTheApproximatedVrmVowelPresets()
        {
            var presets = new float[ArkitToVrm.PresetNames.Length];
            var map = new ArkitToVrm(ArkitShapes.Names);
            var weights = new float[52];
            weights[ArkitShapes.IndexOf("JawOpen")] = 1f;
            map.Evaluate(weights, presets);
            Assert.Greater(presets[Array.IndexOf(ArkitToVrm.PresetNames, "aa")], 0.5f, "jaw open alone reads as aa");
            ArkitToVrm.SetVowels(new[] { 0f, 0.25f, 0.5f, 0.75f, 2f }, presets);
            float[] expected = { 0f, 0.25f, 0.5f, 0.75f, 1f };
            for (int v = 0; v < 5; v++)
                Assert.AreEqual(expected[v], presets[Array.IndexOf(ArkitToVrm.PresetNames, SpeechShapes.VrmVowelPresets[v])], 1e-6, SpeechShapes.VowelNames[v]);
            Assert.Throws<ArgumentException>(() => ArkitToVrm.SetVowels(new float[4], presets));
        }

        static void AssertRejected(MsgPackWriter w, string mentioned)
        {
            var e = Assert.Throws<ProtocolException>(() => new FrameDecoder().Decode(w.Buffer, 0, w.Length, new Frame(), Session));
            StringAssert.Contains(mentioned, e.Message);
        }

        /// <summary>A speech session's face frame; a count of -1 writes nil for that key, voice null writes nil.</summary>
        static MsgPackWriter SpeechFrame(int visemes, int vowels, bool? voice, bool voiceAsInt = false)
        {
            var w = new MsgPackWriter();
            FacePayload.Write(w, 52, expression: 0, extraKeys: 3);
            w.Write("visemes");
            if (visemes < 0) w.WriteNil(); else w.WriteFloat32Binary(new float[visemes]);
            w.Write("vowels");
            if (vowels < 0) w.WriteNil(); else w.WriteFloat32Binary(new float[vowels]);
            w.Write("voice");
            if (voiceAsInt) w.Write(1);
            else if (voice == null) w.WriteNil();
            else w.Write(voice.Value);
            return w;
        }
    }
}
