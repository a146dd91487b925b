using System.Collections.Generic;
using AvatarBridge.Core.Client;
using AvatarBridge.Core.Protocol;
using UnityEngine;

namespace AvatarBridge
{
    /// <summary>
    /// Connects to an avatar-bridge and keeps a face, motion and/or speech session open while enabled.
    /// Everything network-side runs on the core's background threads; drivers read the newest frame
    /// from FaceSession / MotionSession / SpeechSession on the main thread. Reconnects by itself; disabling,
    /// leaving play mode, a domain reload or quitting shuts it down within about half a second.
    /// On WebGL (no raw sockets, no threads) it compiles but stays idle: Client and the sessions stay
    /// null, so every other component of the package does nothing either.
    /// </summary>
    [AddComponentMenu("Avatar Bridge/Bridge Client")]
    [DisallowMultipleComponent]
    [DefaultExecutionOrder(-100)]
    public sealed class BridgeClient : MonoBehaviour
    {
        [Header("Bridge")]
        [SerializeField, Tooltip("Host of the bridge; it binds 127.0.0.1 unless started for remote use.")]
        string _host = "127.0.0.1";
        [SerializeField, Tooltip("The bridge's request (ROUTER) port.")]
        int _requestPort = ProtocolConstants.DefaultRequestPort;
        [SerializeField, Tooltip("Frames (PUB) port; 0 = the one the bridge reports in hello.")]
        int _framesPort;

        [Header("Face session")]
        [SerializeField] bool _openFace = true;
        [SerializeField, Tooltip("Empty = the pipeline's default model.")]
        string _faceModel = "";
        [SerializeField, Tooltip("Ask for ARKit-52 weights (needed by a BlendshapeDriver in ARKit mode).")]
        bool _faceBlendshapes = true;
        [SerializeField, Tooltip("One-Euro filter on the bridge side.")]
        bool _faceSmoothing = true;
        [SerializeField, Tooltip("Face tracker only: the session also takes audio (an audio input set to Face) and the voice drives the mouth.")]
        bool _faceSpeech;
        [SerializeField, Tooltip("Face tracker only: also track the body, arms, hands and fingers from the same images (needs `avatar-bridge models install body`); a HumanoidDriver with Source = Face poses the avatar from it.")]
        bool _faceBody;

        [Header("Motion session")]
        [SerializeField] bool _openMotion = true;
        [SerializeField, Tooltip("Empty = the pipeline's default model.")]
        string _motionModel = "";
        [SerializeField, Tooltip("Dance style; empty = the model's default.")]
        string _motionStyle = "";
        [SerializeField, Range(0f, 0.99f), Tooltip("Bridge-side low-pass strength on joint rotations (0 = off).")]
        float _motionSmoothing = 0.5f;

        [Header("Speech session")]
        [SerializeField, Tooltip("A voice drives the face: feed it with a Microphone or Audio Input set to Speech.")]
        bool _openSpeech;
        [SerializeField, Tooltip("Empty = the pipeline's default model.")]
        string _speechModel = "";
        [SerializeField, Tooltip("Bridge-side attack/release filter on the mouth channels.")]
        bool _speechSmoothing = true;

        SessionClient _client;

        /// <summary>The running core client (null while disabled).</summary>
        public SessionClient Client => _client;
        /// <summary>The face session, or null when none is configured or the component is disabled.</summary>
        public BridgeSession FaceSession { get; private set; }
        public BridgeSession MotionSession { get; private set; }
        /// <summary>The speech session, or null when none is configured or the component is disabled.</summary>
        public BridgeSession SpeechSession { get; private set; }

        /// <summary>The session of that kind (null when it is not configured or the component is disabled).</summary>
        public BridgeSession Session(BridgeSessionKind kind) =>
            kind == BridgeSessionKind.Face ? FaceSession : kind == BridgeSessionKind.Motion ? MotionSession : SpeechSession;
        public ConnectionState State => _client == null ? ConnectionState.Idle : _client.State;

        /// <summary>Open a speech session (read when the component is enabled).</summary>
        public bool OpenSpeech { get => _openSpeech; set => _openSpeech = value; }
        /// <summary>Open the face session with body: true (read when the component is enabled).</summary>
        public bool FaceBody { get => _faceBody; set => _faceBody = value; }
        public string Host { get => _host; set => _host = value; }
        public int RequestPort { get => _requestPort; set => _requestPort = value; }

        [RuntimeInitializeOnLoadMethod(RuntimeInitializeLoadType.SubsystemRegistration)]
        static void HookQuit()
        {
            // Players have no domain reload; quitting is their last chance to close sessions politely.
            Application.quitting -= ClientRegistry.ShutdownAll;
            Application.quitting += ClientRegistry.ShutdownAll;
        }

        void OnEnable()
        {
            if (!BridgePlatform.HasSockets)
            {
                Debug.LogWarning("Avatar Bridge: this platform has no TCP sockets (WebGL); the bridge client stays idle.", this);
                return;
            }
            _client = new SessionClient(new ClientOptions
            {
                Host = _host,
                RequestPort = _requestPort,
                FramesPort = _framesPort,
                ClientName = "avatar-bridge-unity " + Application.unityVersion,
            });
            if (_openFace)
            {
                var options = new Dictionary<string, object> { { "blendshapes", _faceBlendshapes }, { "smoothing", _faceSmoothing } };
                if (_faceSpeech) options["speech"] = true; // other face models refuse the option
                if (_faceBody) options["body"] = true; // the same: only the face tracker with the body models takes it
                FaceSession = _client.AddSession(new SessionRequest(Pipeline.Face, _faceModel, options));
            }
            if (_openMotion)
            {
                var options = new Dictionary<string, object> { { "smoothing", (double)_motionSmoothing } };
                if (!string.IsNullOrEmpty(_motionStyle)) options["style"] = _motionStyle;
                MotionSession = _client.AddSession(new SessionRequest(Pipeline.Motion, _motionModel, options));
            }
            if (_openSpeech)
            {
                var options = new Dictionary<string, object> { { "smoothing", _speechSmoothing } };
                SpeechSession = _client.AddSession(new SessionRequest(Pipeline.Speech, _speechModel, options));
            }
            ClientRegistry.Add(_client);
            _client.Start();
        }

        void OnDisable()
        {
            if (_client == null) return;
            ClientRegistry.Remove(_client);
            _client.Dispose(500);
            _client = null;
            FaceSession = null;
            MotionSession = null;
            SpeechSession = null;
        }
    }
}
