using UnityEngine;

namespace AvatarBridge
{
    /// <summary>
    /// Feeds the audio passing through this GameObject (an AudioSource playing music, or the
    /// AudioListener) to the motion session as mono float samples (the bridge computes the music
    /// features), or to the speech session (a voice, e.g. a text-to-speech AudioSource, drives the face). Runs on Unity's audio thread: SendAudio only copies the block into the client's
    /// lock-free queue (it never waits on the socket), so a large image send cannot cause dropouts.
    /// Unity calls no audio filters on WebGL, so there it does nothing.
    /// </summary>
    [AddComponentMenu("Avatar Bridge/Audio Motion Input")]
    public sealed class AudioMotionInput : MonoBehaviour
    {
        [SerializeField] BridgeClient _client;
        [SerializeField, Tooltip("Motion: the music drives the dance. Speech: the voice drives the face. Face: a face session opened with Face Speech.")]
        BridgeSessionKind _session = BridgeSessionKind.Motion;
        [SerializeField, Tooltip("Silence the output after capturing it (e.g. when the music only drives the dance).")]
        bool _mute;

        int _sampleRate;
        float[] _mono = new float[0];

        public BridgeClient Client { get => _client; set => _client = value; }
        /// <summary>The session fed: Motion (default), Speech, or a Face session opened with Face Speech.</summary>
        public BridgeSessionKind Session { get => _session; set => _session = value; }

        void OnEnable()
        {
            // AudioSettings is main-thread only; OnAudioFilterRead runs elsewhere.
            _sampleRate = AudioSettings.outputSampleRate;
        }

        void OnAudioFilterRead(float[] data, int channels)
        {
            var bridge = _client;
            var client = bridge != null ? bridge.Client : null;
            var session = bridge != null ? bridge.Session(_session) : null;
            if (client != null && session != null && session.IsOpen)
            {
                int frames = data.Length / channels;
                if (_mono.Length != frames) _mono = new float[frames];
                for (int i = 0; i < frames; i++)
                {
                    float sum = 0;
                    for (int c = 0; c < channels; c++) sum += data[i * channels + c];
                    _mono[i] = sum / channels;
                }
                client.SendAudio(session, _sampleRate, _mono, Core.Client.WallClock.NowNs());
            }
            if (_mute) System.Array.Clear(data, 0, data.Length);
        }
    }
}
