using System;
using AvatarBridge.Core.Protocol;
using AvatarBridge.Core.Rig;
using UnityEngine;

namespace AvatarBridge
{
    /// <summary>
    /// Drives SkinnedMeshRenderer blendshapes from the face or speech session: ARKit weights (0..1),
    /// FLAME coefficients, or a voice's visemes or vowels, scaled to Unity's percent (0..100),
    /// optionally smoothed; optionally turns head and jaw bones. Bindings are rebuilt whenever the session is (re)opened.
    /// </summary>
    [AddComponentMenu("Avatar Bridge/Blendshape Driver")]
    public sealed class BlendshapeDriver : MonoBehaviour
    {
        // FLAME coefficients are signed and roughly within ±3 standard deviations.
        const float FlameLimit = 3f;

        [SerializeField] BridgeClient _client;
        [SerializeField, Tooltip("Face: the camera's face session. Speech: the voice's session (ARKit mouth shapes, visemes, vowels).")]
        BridgeSessionKind _session = BridgeSessionKind.Face;
        [SerializeField, Tooltip("Meshes to drive (face, teeth, eyelashes often are separate meshes).")]
        SkinnedMeshRenderer[] _renderers = new SkinnedMeshRenderer[0];
        [SerializeField] FaceSource _source = FaceSource.ArkitBlendshapes;
        [SerializeField, Tooltip("Optional explicit name mapping; without one, names are matched after normalization.")]
        BlendshapeMapping _mapping;
        [SerializeField, Tooltip("Blendshape weight for a bridge weight of 1 (Unity imports use percent).")]
        float _scale = 100f;
        [SerializeField, Min(0f), Tooltip("Smoothing time constant in seconds (0 = apply frames as they come).")]
        float _smoothingTime = 0.03f;

        [Header("Optional bones")]
        [SerializeField, Tooltip("Turned by the frame's head rotation, relative to its pose when this component was enabled.")]
        Transform _head;
        [SerializeField, Tooltip("Turned by the frame's jaw rotation (relative to the head).")]
        Transform _jaw;
        [SerializeField, Tooltip("Turned by the face tracker's gaze (relative to the head; other face models send none).")]
        Transform _leftEye;
        [SerializeField] Transform _rightEye;

        BlendshapeBinding[][] _bindings = new BlendshapeBinding[0][];
        float[][] _targets = new float[0][];
        float[][] _current = new float[0][];
        float[] _sourceValues = new float[0];
        int _boundOpenCount = -1;
        long _cursor;
        bool _hasFrame;
        Quaternion _headRest, _jawRest, _headTarget = Quaternion.identity, _jawTarget = Quaternion.identity;
        Quaternion _leftEyeRest, _rightEyeRest, _leftEyeTarget = Quaternion.identity, _rightEyeTarget = Quaternion.identity;

        public BridgeClient Client { get => _client; set => _client = value; }
        /// <summary>The session read: Face (default) or Speech.</summary>
        public BridgeSessionKind Session { get => _session; set { _session = value; Unbind(); } }
        // Renderers, Source and Mapping may change at any time: the driver rebinds before the next frame.
        public SkinnedMeshRenderer[] Renderers { get => _renderers; set { _renderers = value ?? new SkinnedMeshRenderer[0]; Unbind(); } }
        public FaceSource Source { get => _source; set { _source = value; Unbind(); } }
        public BlendshapeMapping Mapping { get => _mapping; set { _mapping = value; Unbind(); } }
        public float SmoothingTime { get => _smoothingTime; set => _smoothingTime = Mathf.Max(0f, value); }

        /// <summary>Bindings made for each renderer (for the inspector and tests).</summary>
        public int BoundCount
        {
            get
            {
                int n = 0;
                foreach (var b in _bindings) n += b.Length;
                return n;
            }
        }

        void OnValidate() => Unbind(); // inspector edits in play mode

        void OnEnable()
        {
            _boundOpenCount = -1;
            _hasFrame = false;
            var root = transform;
            if (_head != null) _headRest = Quaternion.Inverse(root.rotation) * _head.rotation;
            if (_jaw != null) _jawRest = Quaternion.Inverse(root.rotation) * _jaw.rotation;
            if (_leftEye != null) _leftEyeRest = Quaternion.Inverse(root.rotation) * _leftEye.rotation;
            if (_rightEye != null) _rightEyeRest = Quaternion.Inverse(root.rotation) * _rightEye.rotation;
        }

        void LateUpdate()
        {
            var session = _client != null ? _client.Session(_session) : null;
            var info = session?.Info;
            if (info == null) return;
            if (info.FaceRig == null) return; // a motion session: nothing for a face
            if (session.OpenCount != _boundOpenCount) Bind(info.FaceRig, session.OpenCount);

            Frame frame;
            if (session.Frames.TryGetNewest(ref _cursor, out frame)) Take(frame);
            if (!_hasFrame) return;
            Apply(Time.deltaTime);
        }

        // The targets and bindings were made for other renderers or another source: bind again, and
        // forget the last frame's values, which were read for the old source.
        void Unbind()
        {
            _boundOpenCount = -1;
            _hasFrame = false;
        }

        /// <summary>Matches the rig's names against each renderer's blendshapes.</summary>
        internal void Bind(FaceRig rig, int openCount)
        {
            string[] sources = SourceNames(rig);
            _sourceValues = new float[sources.Length];
            _bindings = new BlendshapeBinding[_renderers.Length][];
            _targets = new float[_renderers.Length][];
            _current = new float[_renderers.Length][];
            for (int r = 0; r < _renderers.Length; r++)
            {
                var mesh = _renderers[r] != null ? _renderers[r].sharedMesh : null;
                var names = new string[mesh != null ? mesh.blendShapeCount : 0];
                for (int i = 0; i < names.Length; i++) names[i] = mesh.GetBlendShapeName(i);
                _bindings[r] = BlendshapeBinder.Bind(sources, Spellings(), names, _mapping != null ? _mapping.Pairs() : null,
                    _mapping == null || _mapping.MatchRemainingByName);
                _targets[r] = new float[names.Length];
                _current[r] = new float[names.Length];
                for (int i = 0; i < names.Length; i++) _current[r][i] = _renderers[r].GetBlendShapeWeight(i);
            }
            if (BoundCount == 0)
                Debug.LogWarning("BlendshapeDriver: no blendshape of " + name + " matches the rig's " + _source + " names; add a BlendshapeMapping.", this);
            _boundOpenCount = openCount;
        }

        /// <summary>Copies one frame's weights into the targets (the frame is only valid during this call).</summary>
        internal void Take(Frame frame)
        {
            // A frame that does not fit the bound source (blendshapes switched off on the bridge, a
            // source change not yet rebound) is skipped rather than thrown on every LateUpdate.
            int length = _source == FaceSource.ArkitBlendshapes ? frame.Blendshapes.Length
                : _source == FaceSource.Visemes ? frame.Visemes.Length
                : _source == FaceSource.Vowels ? frame.Vowels.Length
                : frame.Expression.Length + frame.Eyelids.Length;
            if (length != _sourceValues.Length || length == 0) return;
            if (_source == FaceSource.ArkitBlendshapes) frame.Blendshapes.CopyTo(_sourceValues);
            else if (_source == FaceSource.Visemes) frame.Visemes.CopyTo(_sourceValues);
            else if (_source == FaceSource.Vowels) frame.Vowels.CopyTo(_sourceValues);
            else
            {
                frame.Expression.CopyTo(_sourceValues);
                frame.Eyelids.CopyTo(new Span<float>(_sourceValues, frame.Expression.Length, frame.Eyelids.Length));
            }
            // Weights in [0, 1] except FLAME's signed coefficients.
            float min = _source == FaceSource.FlameExpression ? -FlameLimit : 0f;
            float max = _source == FaceSource.FlameExpression ? FlameLimit : 1f;
            for (int r = 0; r < _bindings.Length; r++)
                BlendshapeBinder.Evaluate(_bindings[r], _sourceValues, min, max, _scale, _targets[r]);
            if (frame.Head.Length == 4) _headTarget = AxisConversion.RotationToUnity(Quat.Read(frame.Head, 0).Normalized).ToUnity();
            if (frame.Jaw.Length == 4) _jawTarget = AxisConversion.RotationToUnity(Quat.Read(frame.Jaw, 0).Normalized).ToUnity();
            var gaze = frame.Gaze; // left yaw, pitch, right yaw, pitch
            if (gaze.Length == 4)
            {
                _leftEyeTarget = AxisConversion.GazeToUnity(gaze[0], gaze[1]).ToUnity();
                _rightEyeTarget = AxisConversion.GazeToUnity(gaze[2], gaze[3]).ToUnity();
            }
            _hasFrame = true;
        }

        internal void Apply(float deltaTime)
        {
            float alpha = ExponentialSmoothing.Alpha(deltaTime, _smoothingTime);
            for (int r = 0; r < _bindings.Length && r < _renderers.Length; r++)
            {
                var renderer = _renderers[r];
                if (renderer == null) continue;
                ExponentialSmoothing.Apply(_current[r], _targets[r], alpha);
                foreach (var b in _bindings[r]) renderer.SetBlendShapeWeight(b.Target, _current[r][b.Target]);
            }
            // Head and jaw: rotation relative to the pose at enable, in the avatar root's frame.
            var root = transform.rotation;
            if (_head != null) _head.rotation = Quaternion.Slerp(_head.rotation, root * _headTarget * _headRest, alpha);
            if (_jaw != null) _jaw.rotation = Quaternion.Slerp(_jaw.rotation, root * _headTarget * _jawTarget * _jawRest, alpha);
            if (_leftEye != null) _leftEye.rotation = Quaternion.Slerp(_leftEye.rotation, root * _headTarget * _leftEyeTarget * _leftEyeRest, alpha);
            if (_rightEye != null) _rightEye.rotation = Quaternion.Slerp(_rightEye.rotation, root * _headTarget * _rightEyeTarget * _rightEyeRest, alpha);
        }

        string[][] Spellings() =>
            _source == FaceSource.Visemes ? SpeechShapes.VisemeSpellings : _source == FaceSource.Vowels ? SpeechShapes.VowelSpellings : null;

        string[] SourceNames(FaceRig rig)
        {
            // Speech's arrays have fixed names (section 5.2); the rig lists them only as extras.
            if (_source == FaceSource.Visemes || _source == FaceSource.Vowels)
            {
                string extra = _source == FaceSource.Visemes ? "visemes" : "vowels";
                if (Array.IndexOf(rig.Extras, extra) < 0)
                    Debug.LogWarning("BlendshapeDriver: the " + _session + " session sends no " + extra + "; open a speech session and set Session to Speech.", this);
                return _source == FaceSource.Visemes ? SpeechShapes.VisemeNames : SpeechShapes.VowelNames;
            }
            if (_source == FaceSource.ArkitBlendshapes)
            {
                if (rig.Blendshapes.Length == 0)
                    Debug.LogWarning("BlendshapeDriver: the face session sends no ARKit weights; enable Face Blendshapes on the BridgeClient.", this);
                return rig.Blendshapes;
            }
            var names = new string[rig.Expression.Length + rig.Eyelids.Length];
            rig.Expression.CopyTo(names, 0);
            rig.Eyelids.CopyTo(names, rig.Expression.Length);
            return names;
        }
    }
}
