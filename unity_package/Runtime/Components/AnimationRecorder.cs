using System.Collections.Generic;
using UnityEngine;

namespace AvatarBridge
{
    /// <summary>
    /// Records what the drivers put on an avatar into an AnimationClip: the humanoid pose as Mecanim
    /// muscle curves plus RootT/RootQ (a humanoid clip, retargetable to any humanoid) and every
    /// blendshape of the given renderers as "blendShape.NAME" curves. Samples once per frame after
    /// the drivers (execution order 10000). BuildClip uses AnimationClip.SetCurve, which Unity allows
    /// on non-legacy clips only in the editor: record in play mode and save from the inspector
    /// ("Save as AnimationClip"). Finger muscles are not recorded (SMPL has no fingers, and their
    /// clip curve names differ from HumanTrait.MuscleName's).
    /// </summary>
    [AddComponentMenu("Avatar Bridge/Animation Recorder")]
    [DefaultExecutionOrder(10000)]
    public sealed class AnimationRecorder : MonoBehaviour
    {
        static readonly string[] Fingers = { "Thumb", "Index", "Middle", "Ring", "Little" };
        static readonly string[] RootCurves = { "RootT.x", "RootT.y", "RootT.z", "RootQ.x", "RootQ.y", "RootQ.z", "RootQ.w" };

        [SerializeField, Tooltip("The humanoid whose pose is recorded (its Animator needs a humanoid Avatar); empty = no body.")]
        Animator _humanoid;
        [SerializeField, Tooltip("Renderers whose blendshape weights are recorded (paths are relative to the humanoid, or to this object).")]
        SkinnedMeshRenderer[] _faces = new SkinnedMeshRenderer[0];
        [SerializeField, Tooltip("Start recording when enabled.")]
        bool _recordOnEnable;

        HumanPoseHandler _handler;
        HumanPose _pose;
        readonly List<int> _muscleIndex = new List<int>();
        readonly List<string> _muscleNames = new List<string>();
        AnimationCurve[] _muscles = new AnimationCurve[0];
        AnimationCurve[] _root = new AnimationCurve[0];
        readonly List<Track> _shapes = new List<Track>();
        float _startTime;

        public Animator Humanoid { get => _humanoid; set => _humanoid = value; }
        public SkinnedMeshRenderer[] Faces { get => _faces; set => _faces = value ?? new SkinnedMeshRenderer[0]; }
        public bool IsRecording { get; private set; }
        /// <summary>Frames sampled since StartRecording.</summary>
        public int Frames { get; private set; }

        void OnEnable()
        {
            if (_recordOnEnable) StartRecording();
        }

        void OnDisable()
        {
            IsRecording = false;
            _handler?.Dispose();
            _handler = null;
        }

        /// <summary>Drops what was recorded and starts again from now.</summary>
        public void StartRecording()
        {
            _handler?.Dispose();
            _handler = null;
            _muscleIndex.Clear();
            _muscleNames.Clear();
            var avatar = _humanoid != null ? _humanoid.avatar : null;
            if (avatar != null && avatar.isHuman)
            {
                _handler = new HumanPoseHandler(avatar, _humanoid.transform);
                _pose.muscles = new float[HumanTrait.MuscleCount];
                var names = HumanTrait.MuscleName;
                for (int m = 0; m < names.Length; m++)
                {
                    if (IsFinger(names[m])) continue;
                    _muscleIndex.Add(m);
                    _muscleNames.Add(names[m]);
                }
            }
            else if (_humanoid != null)
            {
                Debug.LogWarning("AnimationRecorder: " + _humanoid.name + " has no humanoid Avatar; only blendshapes are recorded.", this);
            }
            _muscles = NewCurves(_muscleIndex.Count);
            _root = NewCurves(_handler != null ? RootCurves.Length : 0);
            _shapes.Clear();
            var root = _humanoid != null ? _humanoid.transform : transform;
            foreach (var face in _faces)
            {
                var mesh = face != null ? face.sharedMesh : null;
                if (mesh == null) continue;
                string path = PathFrom(root, face.transform);
                for (int i = 0; i < mesh.blendShapeCount; i++)
                    _shapes.Add(new Track { Renderer = face, Index = i, Path = path, Property = "blendShape." + mesh.GetBlendShapeName(i), Curve = new AnimationCurve() });
            }
            _startTime = Time.time;
            Frames = 0;
            IsRecording = true;
        }

        public void StopRecording() => IsRecording = false;

        void LateUpdate()
        {
            if (IsRecording) Sample(Time.time - _startTime);
        }

        void Sample(float t)
        {
            if (_handler != null)
            {
                _handler.GetHumanPose(ref _pose);
                for (int k = 0; k < _muscleIndex.Count; k++) _muscles[k].AddKey(t, _pose.muscles[_muscleIndex[k]]);
                var p = _pose.bodyPosition;
                var q = _pose.bodyRotation;
                _root[0].AddKey(t, p.x); _root[1].AddKey(t, p.y); _root[2].AddKey(t, p.z);
                _root[3].AddKey(t, q.x); _root[4].AddKey(t, q.y); _root[5].AddKey(t, q.z); _root[6].AddKey(t, q.w);
            }
            foreach (var track in _shapes)
                if (track.Renderer != null) track.Curve.AddKey(t, track.Renderer.GetBlendShapeWeight(track.Index));
            Frames++;
        }

        /// <summary>The recording as a clip (editor only: see the class notes). Call after StopRecording.</summary>
        public AnimationClip BuildClip(string clipName)
        {
            var clip = new AnimationClip { name = clipName };
            for (int k = 0; k < _muscles.Length; k++) clip.SetCurve("", typeof(Animator), _muscleNames[k], _muscles[k]);
            for (int k = 0; k < _root.Length; k++) clip.SetCurve("", typeof(Animator), RootCurves[k], _root[k]);
            foreach (var track in _shapes) clip.SetCurve(track.Path, typeof(SkinnedMeshRenderer), track.Property, track.Curve);
            return clip;
        }

        static bool IsFinger(string muscle)
        {
            foreach (var finger in Fingers)
                if (muscle.Contains(finger)) return true;
            return false;
        }

        static AnimationCurve[] NewCurves(int count)
        {
            var curves = new AnimationCurve[count];
            for (int i = 0; i < count; i++) curves[i] = new AnimationCurve();
            return curves;
        }

        // Animation paths are slash-separated transform names below the animated root ("" for the root itself).
        static string PathFrom(Transform root, Transform target)
        {
            var parts = new List<string>();
            for (var t = target; t != null && t != root; t = t.parent) parts.Insert(0, t.name);
            return string.Join("/", parts);
        }

        sealed class Track
        {
            public SkinnedMeshRenderer Renderer;
            public int Index;
            public string Path;
            public string Property;
            public AnimationCurve Curve;
        }
    }
}
