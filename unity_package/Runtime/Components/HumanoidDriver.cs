using System;
using AvatarBridge.Core.Protocol;
using AvatarBridge.Core.Rig;
using UnityEngine;

namespace AvatarBridge
{
    /// <summary>
    /// Poses a humanoid avatar from the motion session (Source = Motion: the 24 SMPL joints of the dance)
    /// or from the face session opened with body: true (Source = Face: the 50 humanoid joints tracked from
    /// the webcam, section 5.1.2: hips, spine, neck, head, shoulders, arms, hands and three joints per
    /// finger); each joint goes to the HumanBodyBones the rig names via Animator.GetBoneTransform. Each driven bone ends at avatarRoot · G · rest (G: the joint's turn away
    /// from the T-pose, converted to Unity's axes by the core; rest: the bone's T-pose rotation), so any
    /// humanoid rig works whatever its bone axes. Bones are written as local rotations under their real
    /// parents in LateUpdate (after the Animator, Animation Rigging and Timeline have evaluated), blended
    /// by Weight with the pose those produced, so an IK layer or a Timeline clip can share the body:
    /// lower Weight, or leave it at 1 and the dance wins. HumanPose mode goes through Mecanim's
    /// muscle space instead (limits respected, recordable). Root motion (moving the hips) is optional.
    /// </summary>
    [AddComponentMenu("Avatar Bridge/Humanoid Driver")]
    [RequireComponent(typeof(Animator))]
    public sealed class HumanoidDriver : MonoBehaviour
    {
        [SerializeField] BridgeClient _client;
        [SerializeField, Tooltip("Motion: the dance (SMPL joints). Face: the face session's body (BridgeClient's Face Body on), arms, hands and fingers from the webcam.")]
        BridgeSessionKind _source = BridgeSessionKind.Motion;
        [SerializeField, Tooltip("Direct: exact bone rotations on any rig. Human Pose: through Mecanim muscles, clamped to the Avatar's limits.")]
        HumanoidDriveMode _mode = HumanoidDriveMode.Direct;
        [SerializeField, Range(0f, 1f), Tooltip("1 = the dance only; lower blends it with the pose the Animator / IK / Timeline produced this frame.")]
        float _weight = 1f;
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
        HumanPoseHandler _handler;
        HumanPose _animatedPose, _targetPose;
        int _boundOpenCount = -1;
        long _cursor;
        bool _hasFrame;

        public BridgeClient Client { get => _client; set => _client = value; }
        /// <summary>Which session's body drives the avatar: Motion (the dance) or Face (a face session opened with body: true).</summary>
        public BridgeSessionKind Source
        {
            get => _source;
            set
            {
                _source = value;
                _boundOpenCount = -1; // bind the other session's rig, and read its frames from the first
                _cursor = 0;
            }
        }
        public bool RootMotion { get => _rootMotion; set => _rootMotion = value; }
        public float Weight { get => _weight; set => _weight = Mathf.Clamp01(value); }

        /// <summary>Takes effect at the next frame (the HumanPoseHandler is made when first needed).</summary>
        public HumanoidDriveMode Mode { get => _mode; set => _mode = value; }

        /// <summary>How many of the rig's joints (24 SMPL, or 50 humanoid) found a bone on this avatar (for the inspector and tests).</summary>
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

        void OnDisable()
        {
            _handler?.Dispose();
            _handler = null;
        }

        void LateUpdate()
        {
            var session = _client != null ? _client.Session(_source) : null;
            var info = session?.Info;
            // A motion session's SMPL rig, or a face session's humanoid body (null when opened without body: true).
            var rig = info?.BodyRig ?? info?.FaceRig?.Body;
            if (rig == null)
            {
                if (info != null && session.OpenCount != _boundOpenCount)
                {
                    Debug.LogWarning("HumanoidDriver: the " + _source + " session has no body; for the webcam's body turn on the BridgeClient's Face Body.", this);
                    _boundOpenCount = session.OpenCount;
                }
                return;
            }
            if (session.OpenCount != _boundOpenCount)
            {
                Bind(rig);
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
            // The humanoid rig names every joint, fingers included; SMPL's table only fills what a rig leaves empty.
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
            // Motion frames: SMPL joints and a root translation. Face frames with a body: the humanoid's
            // rotations, no root motion (the hips stay where the Animator put them).
            var rotations = frame.Pipeline == Pipeline.Motion ? frame.Joints : frame.Body;
            if (rotations.Length != _pose.JointCount * 4) return; // a face frame without the body its rig announced
            _pose.Update(rotations, frame.Root);
            _hasFrame = true;
        }

        internal void Apply()
        {
            if (_weight <= 0f) return;
            bool viaMuscles = _mode == HumanoidDriveMode.HumanPose && EnsureHandler();
            if (viaMuscles) _handler.GetHumanPose(ref _animatedPose);
            WriteBones(viaMuscles ? 1f : _weight);
            if (viaMuscles) ApplyThroughMuscles();
        }

        // Parents precede children in both rigs' order, so each bone's parent already holds its new rotation
        // when the bone's local rotation is computed; bones the avatar lacks are skipped and keep theirs.
        void WriteBones(float weight)
        {
            var root = transform;
            var rootRotation = root.rotation.ToCore();
            for (int j = 0; j < _bones.Length; j++)
            {
                var bone = _bones[j];
                if (bone == null) continue;
                var world = HumanoidRetarget.BoneWorld(rootRotation, _pose.Global(j), _rest[j].ToCore());
                var parent = bone.parent;
                var local = parent == null ? world : HumanoidRetarget.LocalUnder(parent.rotation.ToCore(), world);
                bone.localRotation = weight >= 1f ? local.ToUnity() : Quaternion.Slerp(bone.localRotation, local.ToUnity(), weight);
            }
            if (_rootMotion && _hips != null)
            {
                var target = root.TransformPoint(_hipsRest + _pose.RootOffset.ToUnity() * _rootMotionScale);
                _hips.position = weight >= 1f ? target : Vector3.Lerp(_hips.position, target, weight);
            }
        }

        bool EnsureHandler()
        {
            if (_handler != null) return true;
            var avatar = _animator.avatar;
            if (avatar == null || !avatar.isHuman)
            {
                Debug.LogWarning("HumanoidDriver: Human Pose mode needs a humanoid Avatar on the Animator; driving bones directly.", this);
                _mode = HumanoidDriveMode.Direct;
                return false;
            }
            _handler = new HumanPoseHandler(avatar, transform);
            _animatedPose.muscles = new float[HumanTrait.MuscleCount];
            _targetPose.muscles = new float[HumanTrait.MuscleCount];
            return true;
        }

        // The bones hold the dance; read it back as muscles, clamp to the Avatar's limits (±1 is each
        // muscle's configured range), blend with the animated pose and let Mecanim apply it.
        void ApplyThroughMuscles()
        {
            _handler.GetHumanPose(ref _targetPose);
            var target = _targetPose.muscles;
            var animated = _animatedPose.muscles;
            for (int m = 0; m < target.Length; m++) target[m] = Mathf.Lerp(animated[m], Mathf.Clamp(target[m], -1f, 1f), _weight);
            if (!_rootMotion)
            {
                _targetPose.bodyPosition = _animatedPose.bodyPosition;
            }
            else
            {
                _targetPose.bodyPosition = Vector3.Lerp(_animatedPose.bodyPosition, _targetPose.bodyPosition, _weight);
            }
            _targetPose.bodyRotation = Quaternion.Slerp(_animatedPose.bodyRotation, _targetPose.bodyRotation, _weight);
            _handler.SetHumanPose(ref _targetPose);
        }

        /// <summary>Makes the current hips position the origin of root motion again.</summary>
        public void ResetRootMotion() => _pose?.ResetRoot();
    }
}
