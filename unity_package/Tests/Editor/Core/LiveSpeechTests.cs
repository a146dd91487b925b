using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using AvatarBridge.Core.Client;
using AvatarBridge.Core.MsgPack;
using AvatarBridge.Core.Protocol;
using AvatarBridge.Core.Rig;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>
    /// A speech session on the real `avatar-bridge serve` of scripts/test_csharp.sh, fed a held-out
    /// eSpeak NG voice (make_fixtures.py's speech_utterance) through the client's audio queue, then silence.
    /// </summary>
    public class LiveSpeechTests
    {
        [Test]
        public void ASpokenSentenceMovesTheMouthAndSilenceClosesIt()
        {
            int rate;
            var voice = Utterance(out rate);
            var silence = new float[rate]; // one second
            using (var recorder = Live.Recorder())
            using (var client = Live.Client())
            {
                // Smoothing off: each frame's visemes are then the classifier's probabilities, which sum to 1
                // (smoothing eases each weight on its own, and the sum strays up to ~1.5 in transitions).
                var session = client.AddSession(new SessionRequest(Pipeline.Speech, null, new Dictionary<string, object> { { "smoothing", false } }));
                Live.WaitOpen(session);
                var info = session.Info;
                Assert.AreEqual(Pipeline.Speech, info.Pipeline);
                CollectionAssert.AreEqual(new[] { "audio" }, info.Accepts);
                CollectionAssert.AreEqual(new[] { "visemes", "vowels", "voice" }, info.FaceRig.Extras);
                Assert.AreEqual(52, info.FaceRig.Blendshapes.Length);
                int jaw = Array.IndexOf(info.FaceRig.Blendshapes, "JawOpen");
                Assert.GreaterOrEqual(jaw, 0);

                // 1/30 s chunks (one frame each), as a microphone sends them, at most 2 frames ahead of
                // what came back: faster than real time, far within the bridge's pending bound (64 frames).
                int chunk = rate / 30, sent = 0, chunks = 0;
                var audio = voice.Concat(silence).ToArray();
                for (int start = 0; start < audio.Length; start += chunk, chunks++)
                {
                    int length = Math.Min(chunk, audio.Length - start);
                    Assert.IsTrue(Live.Eventually(() => session.Stats.Snapshot().Received + 2 > chunks, 10000), "frames keep coming");
                    while (!client.SendAudio(session, rate, new ReadOnlySpan<float>(audio, start, length), WallClock.NowNs()))
                        Thread.Sleep(2);
                    sent += length;
                }
                int expected = (int)((long)sent * 30 / rate);
                Assert.IsTrue(Live.Eventually(() => recorder.Of(info.Session).Count >= expected, 20000),
                    expected + " frames; recorded " + recorder.Of(info.Session).Count + ", client received " + session.Stats.Snapshot().Received +
                    " (last input_seq " + recorder.Of(info.Session).Last().InputSeq + " of " + chunks + " chunks)" +
                    "; input errors " + client.InputErrors + " (" + client.LastInputError?.Message + "), inputs dropped " + client.InputsDropped);

                Assert.AreEqual(0, client.InputErrors, "the bridge took every chunk: " + client.LastInputError);
                var frames = recorder.Of(info.Session);
                int voiced = 0;
                float widest = 0;
                for (int i = 0; i < frames.Count; i++)
                {
                    var f = frames[i];
                    Assert.AreEqual((ulong)i, f.Seq, "seq continuity");
                    Assert.AreEqual(Pipeline.Face, f.Pipeline, "speech publishes face frames");
                    Assert.IsTrue(f.FaceFound, "the voice drives the face: never 'tracking lost'");
                    Assert.AreEqual(15, f.Visemes.Length, "frame " + i);
                    Assert.AreEqual(5, f.Vowels.Length, "frame " + i);
                    Live.AssertInRange(f.Visemes, 0, 1, "visemes");
                    Assert.AreEqual(1.0, f.Visemes.Sum(), 1e-3, "viseme weights of frame " + i + " sum to 1");
                    Live.AssertInRange(f.Vowels, 0, 1, "vowels");
                    Live.AssertInRange(f.Blendshapes, 0, 1, "blendshapes");
                    if (f.Voice) voiced++;
                    if (i < (long)voice.Length * 30 / rate) widest = Math.Max(widest, f.Blendshapes[jaw]);
                }
                Assert.Greater(voiced, frames.Count / 4, "a spoken sentence is mostly voiced");
                Assert.Greater(widest, 0.2f, "the jaw opens while the voice speaks");
                var tail = frames.Skip(frames.Count - 10).ToList(); // the last third of a second of silence
                Assert.IsTrue(tail.All(f => !f.Voice), "silence clears voice");
                Assert.IsTrue(tail.All(f => f.Blendshapes[jaw] < 0.05f), "silence closes the mouth");

                // What a driver reads: the newest frame through the client, with its speech arrays.
                Frame newest;
                long cursor = 0;
                Assert.IsTrue(session.Frames.TryGetNewest(ref cursor, out newest));
                Assert.AreEqual(15, newest.Visemes.Length);
                Assert.AreEqual(5, newest.Vowels.Length);
                Assert.AreEqual(0, session.Stats.Snapshot().Lost);
            }
        }

        [Test]
        public void TheVoiceIsCalibratedWithFiveVowelsAndBadClipsGetTheirCode()
        {
            int rate;
            var vowels = Pcm("speech_calibration", out rate);
            using (var client = Live.Client())
            {
                var speech = client.AddSession(new SessionRequest(Pipeline.Speech));
                var motion = client.AddSession(new SessionRequest(Pipeline.Motion));
                Live.WaitOpen(speech);
                Live.WaitOpen(motion);
                double level = client.CalibrateVoice(speech, rate, vowels);
                Assert.IsTrue(level < 0 && level > -60, "the vowels' level, dB re full scale: " + level);

                var silence = Assert.Throws<BridgeErrorException>(() => client.CalibrateVoice(speech, rate, new float[rate]));
                Assert.AreEqual(ErrorCode.BadValue, silence.ErrorCode, "no five voiced stretches");
                var tooSlow = Assert.Throws<BridgeErrorException>(() => client.CalibrateVoice(speech, 4000, new float[4000]));
                Assert.AreEqual(ErrorCode.BadValue, tooSlow.ErrorCode, "rate out of range");
                var empty = Assert.Throws<BridgeErrorException>(() => client.CalibrateVoice(speech, rate, new float[0]));
                Assert.AreEqual(ErrorCode.BadSize, empty.ErrorCode, "empty clip");
                var withoutAudio = Assert.Throws<BridgeErrorException>(() => client.Calibrate(speech));
                Assert.AreEqual(ErrorCode.BadValue, withoutAudio.ErrorCode, "a speech session calibrates on a voice");
                var dancer = Assert.Throws<BridgeErrorException>(() => client.Calibrate(motion));
                Assert.AreEqual(ErrorCode.BadValue, dancer.ErrorCode, "a motion session has no calibration");
                Assert.AreEqual(level, client.CalibrateVoice(speech, rate, vowels), 0.01, "calibrating again replaces it, same clip same level");
            }
        }

        /// <summary>The utterance as mono floats in [-1, 1).</summary>
        static float[] Utterance(out int rate) => Pcm("speech_utterance", out rate);

        static float[] Pcm(string fixture, out int rate)
        {
            var payload = TestEnvironment.Fixture(fixture);
            var map = (Dictionary<string, object>)new MsgPackReader(payload).ReadObject();
            rate = (int)(long)map["rate"];
            var pcm = (byte[])map["pcm"];
            var samples = new float[pcm.Length / 2];
            for (int i = 0; i < samples.Length; i++) samples[i] = (short)(pcm[2 * i] | pcm[2 * i + 1] << 8) / 32768f;
            return samples;
        }
    }
}
