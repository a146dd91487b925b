using AvatarBridge.Core.Rig;
using NUnit.Framework;
using UnityEngine;

namespace AvatarBridge.Tests
{
    /// <summary>
    /// HumanoidDriver on the humanoid ProceduralAvatar builds (the rig the core tests check in
    /// ProceduralRigTests), fed a rig and frames without a bridge. Play-mode tests: never run outside Unity.
    /// </summary>
    public class HumanoidDriverTests
    {
        GameObject _avatar;
        SkinnedMeshRenderer _face;

        [SetUp]
        public void SetUp() => _avatar = ProceduralAvatar.Build("test avatar", out _face);

        [TearDown]
        public void TearDown() => Object.DestroyImmediate(_avatar);

        [Test]
        public void TheGeneratedAvatarIsAValidHumanoid()
        {
            var animator = _avatar.GetComponent<Animator>();
            Assert.IsTrue(animator.avatar.isValid);
            Assert.IsTrue(animator.avatar.isHuman);
            Assert.AreEqual("LeftLowerArm", animator.GetBoneTransform(HumanBodyBones.LeftLowerArm).name);
            Assert.AreEqual(52, _face.sharedMesh.blendShapeCount);
        }

        [Test]
        public void EverySmplJointWithABoneIsBoundAndABentElbowMovesTheHand()
        {
            var driver = _avatar.AddComponent<HumanoidDriver>();
            driver.Bind(RuntimeRig.Body());
            Assert.AreEqual(22, driver.BoundCount, "all joints but SMPL's two hand joints");

            var animator = _avatar.GetComponent<Animator>();
            var elbow = animator.GetBoneTransform(HumanBodyBones.LeftLowerArm);
            var hand = animator.GetBoneTransform(HumanBodyBones.LeftHand);
            var joints = RuntimeRig.IdentityJoints();
            var bend = Quat.AxisAngle(new Vec3(0, 1, 0), Mathf.PI / 2); // wire: left forearm from +X to -Z
            joints[18 * 4] = bend.X; joints[18 * 4 + 1] = bend.Y; joints[18 * 4 + 2] = bend.Z; joints[18 * 4 + 3] = bend.W;
            driver.Take(RuntimeRig.MotionFrame(joints));
            driver.Apply();
            var forearm = hand.position - elbow.position;
            Assert.Less(Vector3.Distance(new Vector3(0, 0, -0.25f), forearm), 1e-3f, "forearm " + forearm);
        }

        [Test]
        public void TheWebcamsHumanoidBindsByNameAndAForearmTurnedUpPointsUp()
        {
            var driver = _avatar.AddComponent<HumanoidDriver>();
            var rig = RuntimeRig.Humanoid();
            driver.Bind(rig);
            // Every joint but the fingers matches a bone by name (the generated avatar has no fingers).
            Assert.AreEqual(20, driver.BoundCount);

            var animator = _avatar.GetComponent<Animator>();
            var elbow = animator.GetBoneTransform(HumanBodyBones.LeftLowerArm);
            var hand = animator.GetBoneTransform(HumanBodyBones.LeftHand);
            float length = Vector3.Distance(hand.position, elbow.position);
            var body = RuntimeRig.IdentityJoints(rig.Joints.Length);
            var up = Quat.AxisAngle(new Vec3(0, 0, 1), Mathf.PI / 2); // wire: left forearm from +X (the avatar's left) to +Y
            int forearm = System.Array.IndexOf(rig.Joints, "LeftLowerArm");
            body[forearm * 4] = up.X; body[forearm * 4 + 1] = up.Y; body[forearm * 4 + 2] = up.Z; body[forearm * 4 + 3] = up.W;
            driver.Take(RuntimeRig.FaceBodyFrame(body));
            driver.Apply();
            Assert.Less(Vector3.Distance(elbow.position + Vector3.up * length, hand.position), 1e-3f, "the hand straight above the elbow");
        }

        [Test]
        public void HumanPoseModeAppliesThroughMusclesWithoutLosingBones()
        {
            var driver = _avatar.AddComponent<HumanoidDriver>();
            driver.Mode = HumanoidDriveMode.HumanPose;
            driver.Bind(RuntimeRig.Body());
            driver.Take(RuntimeRig.MotionFrame(RuntimeRig.IdentityJoints()));
            driver.Apply();
            Assert.AreEqual(HumanoidDriveMode.HumanPose, driver.Mode, "a humanoid Avatar keeps the muscle mode");
            var handler = new HumanPoseHandler(_avatar.GetComponent<Animator>().avatar, _avatar.transform);
            var pose = new HumanPose();
            handler.GetHumanPose(ref pose);
            foreach (var m in pose.muscles) Assert.LessOrEqual(Mathf.Abs(m), 1.001f, "muscles stay within their limits");
            handler.Dispose();
        }

        [Test]
        public void WeightZeroLeavesTheAnimatedPose()
        {
            var driver = _avatar.AddComponent<HumanoidDriver>();
            driver.Bind(RuntimeRig.Body());
            var elbow = _avatar.GetComponent<Animator>().GetBoneTransform(HumanBodyBones.LeftLowerArm);
            var before = elbow.localRotation;
            var joints = RuntimeRig.IdentityJoints();
            joints[18 * 4 + 1] = 0.7071068f; joints[18 * 4 + 3] = 0.7071068f;
            driver.Take(RuntimeRig.MotionFrame(joints));
            driver.Weight = 0f;
            driver.Apply();
            Assert.Less(Quaternion.Angle(before, elbow.localRotation), 0.01f);
        }
    }
}
