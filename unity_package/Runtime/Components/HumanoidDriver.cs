using System;
using AvatarBridge.Core.Protocol;
using AvatarBridge.Core.Rig;
using UnityEngine;

namespace AvatarBridge
{
    /// <summary>
    /// Poses a humanoid avatar from the motion session: the 24 SMPL joints go to HumanBodyBones via
    /// Animator.GetBoneTransform, written in LateUpdate so they win over the Animator. Each bone gets
    /// avatarRoot · G · rest, where G is the joint's rotation away from the T-pose (converted to
    /// Unity's axes by the core) and rest the bone's T-pose rotation, so any humanoid rig works
    /// whatever its bone axes. Root motion (moving the hips with the dance) is optional.
    /// </summary>
    [AddComponentMenu("Avatar Bridge/Humanoid Driver")]
    [RequireComponent(typeof(Animator))]
    public sealed class HumanoidDriver : MonoBehaviour
    {
        [SerializeField] BridgeClient _client;
        [SerializeField, Tooltip("Move the hips by the root translation (relative to where the dance started).")]
        bool _rootMotion;
        [SerializeField, Tooltip("Metres on the avatar per metre of SMPL motion.")]
        float _rootMotionScale = 1f;
        [SerializeField, Tooltip("Take rest rotations from the Avatar's T-pose (recommended) instead of the pose at enable.")]
        bool _restFromAvatar = true;

        Animator _animator;
        SkeletonPose _pose;
        Transform[] _bones = new Transform[0];
        Quaternion[] _rest = new Quaternion[0];
        Transform _hips;
        Vector3 _hipsRest;
        int _boundOpenCount = -1;
        long _cursor;
        bool _hasFrame;

        public BridgeClient Client { get => _client; set => _client = value; }
        public bool RootMotion { get => _rootMotion; set => _rootMotion = value; }

        /// <summary>How many of the 24 joints found a bone on this avatar (for the inspector and tests).</summary>
        public int BoundCount
        {
            get
            {
                int n = 0;
                foreach (var b in _bones) if (b != null) n++;
                return n;
            }
        }

        void OnEnable()
        {
            _animator = GetComponent<Animator>();
            _boundOpenCount = -1;
            _hasFrame = false;
        }

        void LateUpdate()
        {
            var session = _client != null ? _client.MotionSession : null;
            var info = session?.Info;
            if (info == null) return;
            if (session.OpenCount != _boundOpenCount)
            {
                Bind(info.BodyRig);
                _boundOpenCount = session.OpenCount;
            }
            Frame frame;
            if (session.Frames.TryGetNewest(ref _cursor, out frame)) Take(frame);
            if (_hasFrame) Apply();
        }

        /// <summary>Finds each joint's bone and its rest rotation relative to the avatar root.</summary>
        internal void Bind(BodyRig rig)
        {
            if (_animator == null) _animator = GetComponent<Animator>();
            var names = SmplHumanoidMap.Resolve(rig.Joints, rig.Humanoid);
            var skeleton = _restFromAvatar ? RestPose.SkeletonOf(_animator) : null;
            var root = transform;
            _pose = new SkeletonPose(rig.Parents);
            _bones = new Transform[names.Length];
            _rest = new Quaternion[names.Length];
            for (int j = 0; j < names.Length; j++)
            {
                HumanBodyBones bone;
                if (string.IsNullOrEmpty(names[j]) || !Enum.TryParse(names[j], out bone)) continue;
                _bones[j] = _animator.GetBoneTransform(bone); // null where the avatar lacks it (e.g. UpperChest)
                if (_bones[j] == null) continue;
                _rest[j] = skeleton != null ? RestPose.RelativeToRoot(root, _bones[j], skeleton) : Quaternion.Inverse(root.rotation) * _bones[j].rotation;
            }
            _hips = _animator.GetBoneTransform(HumanBodyBones.Hips);
            if (_hips != null) _hipsRest = root.InverseTransformPoint(_hips.position);
            _hasFrame = false;
            if (BoundCount == 0) Debug.LogWarning("HumanoidDriver: " + name + " has no humanoid bones; is its rig set to Humanoid?", this);
        }

        internal void Take(Frame frame)
        {
            _pose.Update(frame.Joints, frame.Root);
            _hasFrame = true;
        }

        internal void Apply()
        {
            var root = transform;
            var rootRotation = root.rotation;
            // Parents precede children in SMPL order, and every bone gets a world rotation, so bones the
            // avatar lacks are simply skipped: their children still land right.
            for (int j = 0; j < _bones.Length; j++)
            {
                if (_bones[j] != null) _bones[j].rotation = rootRotation * _pose.Global(j).ToUnity() * _rest[j];
            }
            if (_rootMotion && _hips != null)
                _hips.position = root.TransformPoint(_hipsRest + _pose.RootOffset.ToUnity() * _rootMotionScale);
        }

        /// <summary>Makes the current hips position the origin of root motion again.</summary>
        public void ResetRootMotion() => _pose?.ResetRoot();
    }
}
