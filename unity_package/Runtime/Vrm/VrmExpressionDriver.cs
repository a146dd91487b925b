using System;
using AvatarBridge.Core.Protocol;
using AvatarBridge.Core.Rig;
using UnityEngine;
using UniVRM10;

namespace AvatarBridge
{
    /// <summary>
    /// Drives a VRM 1.0 avatar's expressions (UniVRM's Vrm10Instance) from the face (or speech)
    /// session's ARKit weights; a speech session's vowels A, I, U, E, O set the presets aa, ih, ou,
    /// ee, oh directly. A model with PerfectSync expressions (52 custom expressions named after the ARKit
    /// shapes, in any of the usual spellings) gets each weight on its own expression; any other model
    /// gets VRM's presets (blink, visemes, emotions, gaze) through the core's ArkitToVrm blend. This
    /// assembly compiles only when the VRM 1.0 package (com.vrmc.vrm 0.100 or later) is installed.
    /// The Bridge Client must have Face Blendshapes on. Vrm10Instance applies the weights in its own
    /// LateUpdate (execution order 11000), after this one.
    /// </summary>
    [AddComponentMenu("Avatar Bridge/VRM Expression Driver")]
    [RequireComponent(typeof(Vrm10Instance))]
    public sealed class VrmExpressionDriver : MonoBehaviour
    {
        [SerializeField] BridgeClient _client;
        [SerializeField, Tooltip("Face: the camera's face session. Speech: the voice's session, whose vowels drive aa ih ou ee oh directly.")]
        BridgeSessionKind _session = BridgeSessionKind.Face;
        [SerializeField, Tooltip("Use the model's ARKit-named custom expressions (PerfectSync) when it has them; otherwise, or when off, VRM's presets.")]
        bool _perfectSync = true;
        [SerializeField, Min(0f), Tooltip("Smoothing time constant in seconds (0 = apply frames as they come).")]
        float _smoothingTime = 0.03f;

        Vrm10Instance _vrm;
        ArkitToVrm _map;
        ExpressionKey[] _keys = new ExpressionKey[0];
        int[] _sources = new int[0]; // PerfectSync: the rig index each key reads
        float[] _targets = new float[0];
        float[] _current = new float[0];
        int _boundOpenCount = -1;
        long _cursor;
        bool _hasFrame;

        public BridgeClient Client { get => _client; set => _client = value; }
        public bool PerfectSync { get => _perfectSync; set { _perfectSync = value; _boundOpenCount = -1; } }
        /// <summary>The session read: Face (default) or Speech.</summary>
        public BridgeSessionKind Session { get => _session; set { _session = value; _boundOpenCount = -1; } }

        /// <summary>True when bound to PerfectSync expressions, false for presets (valid once a session is open).</summary>
        public bool UsesPerfectSync { get; private set; }

        /// <summary>Expressions being driven.</summary>
        public int BoundCount => _keys.Length;

        void OnEnable()
        {
            _vrm = GetComponent<Vrm10Instance>();
            _boundOpenCount = -1;
            _hasFrame = false;
        }

        void LateUpdate()
        {
            var session = _client != null ? _client.Session(_session) : null;
            var info = session?.Info;
            if (info == null || info.FaceRig == null) return;
            if (session.OpenCount != _boundOpenCount)
            {
                Bind(info.FaceRig.Blendshapes);
                _boundOpenCount = session.OpenCount;
            }
            Frame frame;
            if (session.Frames.TryGetNewest(ref _cursor, out frame)) Take(frame);
            if (_hasFrame) Apply(Time.deltaTime);
        }

        void Bind(string[] rigNames)
        {
            _hasFrame = false;
            if (rigNames.Length == 0)
                Debug.LogWarning("VrmExpressionDriver: the face session sends no ARKit weights; enable Face Blendshapes on the BridgeClient.", this);
            var available = _vrm.Runtime.Expression.ExpressionKeys;
            var keys = new System.Collections.Generic.List<ExpressionKey>();
            var sources = new System.Collections.Generic.List<int>();
            if (_perfectSync)
            {
                for (int i = 0; i < rigNames.Length; i++)
                {
                    string wanted = BlendshapeBinder.Normalize(rigNames[i]);
                    foreach (var key in available)
                    {
                        if (key.Preset != ExpressionPreset.custom || BlendshapeBinder.Normalize(key.Name) != wanted) continue;
                        keys.Add(key);
                        sources.Add(i);
                        break;
                    }
                }
            }
            UsesPerfectSync = keys.Count > 0;
            if (!UsesPerfectSync)
            {
                _map = new ArkitToVrm(rigNames);
                foreach (var name in ArkitToVrm.PresetNames)
                    keys.Add(ExpressionKey.CreateFromPreset((ExpressionPreset)Enum.Parse(typeof(ExpressionPreset), name)));
            }
            _keys = keys.ToArray();
            _sources = sources.ToArray();
            _targets = new float[_keys.Length];
            _current = new float[_keys.Length];
        }

        void Take(Frame frame)
        {
            var weights = frame.Blendshapes;
            if (UsesPerfectSync)
            {
                for (int k = 0; k < _keys.Length; k++)
                    _targets[k] = _sources[k] < weights.Length ? Mathf.Clamp01(weights[_sources[k]]) : 0f;
            }
            else
            {
                _map.Evaluate(weights, _targets);
                // A voice's own A, I, U, E, O (speech frames) beat vowels guessed from mouth shapes.
                if (frame.Vowels.Length == SpeechShapes.VowelNames.Length)
                    ArkitToVrm.SetVowels(frame.Vowels, _targets);
            }
            _hasFrame = true;
        }

        void Apply(float deltaTime)
        {
            ExponentialSmoothing.Apply(_current, _targets, ExponentialSmoothing.Alpha(deltaTime, _smoothingTime));
            var expression = _vrm.Runtime.Expression;
            for (int k = 0; k < _keys.Length; k++) expression.SetWeight(_keys[k], _current[k]);
        }
    }
}
