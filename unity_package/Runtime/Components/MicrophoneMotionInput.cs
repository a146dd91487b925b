using System.Collections;
using AvatarBridge.Core.Client;
using UnityEngine;

namespace AvatarBridge
{
    /// <summary>
    /// Feeds a microphone to the motion session (dance to the music in the room) or to the speech
    /// session (lip sync: the user's voice drives the face). Asks for microphone
    /// permission first; records into a looping one-second clip and each frame sends the samples
    /// recorded since the last one, as mono floats. The motion session computes the music features.
    /// Not available on WebGL (Unity has no Microphone class there): the component stays idle.
    /// </summary>
    [AddComponentMenu("Avatar Bridge/Microphone Motion Input")]
    public sealed class MicrophoneMotionInput : MonoBehaviour
    {
        const int ClipSeconds = 1;

        [SerializeField] BridgeClient _client;
        [SerializeField, Tooltip("Motion: the music drives the dance. Speech: the voice drives the face. Face: a face session opened with Face Speech.")]
        BridgeSessionKind _session = BridgeSessionKind.Motion;
#pragma warning disable 0414, 0169 // the same serialized layout on every platform, though WebGL reads none of these
        [SerializeField, Tooltip("Empty = the default microphone.")]
        string _deviceName = "";
        [SerializeField, Tooltip("Recording rate in Hz; the bridge resamples.")]
        int _sampleRate = 16000;

        AudioClip _clip;
        float[] _recorded = new float[0];
        float[] _mono = new float[0];
        int _readPosition;
#pragma warning restore 0414, 0169

        public BridgeClient Client { get => _client; set => _client = value; }
        /// <summary>The session fed: Motion (default), Speech, or a Face session opened with Face Speech.</summary>
        public BridgeSessionKind Session { get => _session; set => _session = value; }

        /// <summary>Set when the microphone could not be opened.</summary>
        public string LastError { get; private set; }

        void OnEnable()
        {
            if (BridgePlatform.HasSockets) StartCoroutine(Open());
        }

        IEnumerator Open()
        {
            yield return DevicePermission.Request(false);
            if (!DevicePermission.Granted(false))
            {
                LastError = "microphone permission was not granted";
                Debug.LogWarning("MicrophoneMotionInput: " + LastError, this);
                yield break;
            }
            if (!isActiveAndEnabled) yield break;
#if !UNITY_WEBGL || UNITY_EDITOR
            _clip = Microphone.Start(Device, true, ClipSeconds, _sampleRate);
            if (_clip == null)
            {
                LastError = "no microphone could be started";
                Debug.LogWarning("MicrophoneMotionInput: " + LastError, this);
                yield break;
            }
            _readPosition = 0;
            _recorded = new float[_clip.samples * _clip.channels];
#endif
        }

        string Device => string.IsNullOrEmpty(_deviceName) ? null : _deviceName;

        void OnDisable()
        {
            StopAllCoroutines();
            if (_clip == null) return;
#if !UNITY_WEBGL || UNITY_EDITOR
            Microphone.End(Device);
#endif
            Destroy(_clip);
            _clip = null;
        }

        void Update()
        {
#if !UNITY_WEBGL || UNITY_EDITOR
            if (_clip == null) return;
            int position = Microphone.GetPosition(Device);
            if (position < 0 || position == _readPosition) return;
            var session = _client != null ? _client.Session(_session) : null;
            var client = _client != null ? _client.Client : null;
            // The whole looping clip is read (GetData wraps only in newer Unity versions), then the
            // samples since the last frame are taken out of it, across the wrap if need be.
            _clip.GetData(_recorded, 0);
            int length = _clip.samples, channels = _clip.channels;
            int count = (position - _readPosition + length) % length;
            if (_mono.Length < count) _mono = new float[length];
            for (int i = 0; i < count; i++)
            {
                int frame = (_readPosition + i) % length;
                float sum = 0;
                for (int c = 0; c < channels; c++) sum += _recorded[frame * channels + c];
                _mono[i] = sum / channels;
            }
            _readPosition = position;
            if (client != null && session != null && session.IsOpen)
                client.SendAudio(session, _clip.frequency, new System.ReadOnlySpan<float>(_mono, 0, count), WallClock.NowNs());
#endif
        }
    }
}
