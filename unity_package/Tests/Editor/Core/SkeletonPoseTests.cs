using System;
using AvatarBridge.Core.Rig;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    public class SkeletonPoseTests
    {
        static readonly float H = (float)Math.Sqrt(0.5);

        [Test]
        public void GlobalRotationsComposeDownTheChainInUnityCoordinates()
        {
            // pelvis(0) → spine(1) → neck(2). Pelvis yaws 90° toward the avatar's left, the neck nods 90° down.
            var pose = new SkeletonPose(new[] { -1, 0, 1 });
            var joints = new float[]
            {
                0, H, 0, H,
                0, 0, 0, 1,
                H, 0, 0, H,
            };
            pose.Update(joints, new float[] { 0, 0.9f, 0 });
            AxisConversionTests.AssertQuat(new Quat(0, -H, 0, H), pose.Global(0)); // Euler(0,-90,0)
            AxisConversionTests.AssertQuat(new Quat(0, -H, 0, H), pose.Global(1)); // inherits the yaw
            // The neck's forward: nodded down then turned left with the body: still straight down.
            AxisConversionTests.AssertVec(new Vec3(0, -1, 0), pose.Global(2) * new Vec3(0, 0, 1));
            // Its up vector, after the nod, points forward (+Z), then the yaw turns it to the avatar's left (-X in Unity).
            AxisConversionTests.AssertVec(new Vec3(-1, 0, 0), pose.Global(2) * new Vec3(0, 1, 0));
        }

        [Test]
        public void RootOffsetIsRelativeToTheFirstFrameAndMirrored()
        {
            var pose = new SkeletonPose(new[] { -1 });
            var identity = new float[] { 0, 0, 0, 1 };
            pose.Update(identity, new[] { 0.1f, 0.9f, 0f });
            AxisConversionTests.AssertVec(new Vec3(0, 0, 0), pose.RootOffset);
            pose.Update(identity, new[] { 0.3f, 1.0f, 0.5f });
            // Wire +0.2 in X (toward the avatar's left) is Unity -0.2.
            AxisConversionTests.AssertVec(new Vec3(-0.2f, 0.1f, 0.5f), pose.RootOffset);
            pose.ResetRoot();
            pose.Update(identity, new[] { 5f, 5f, 5f });
            AxisConversionTests.AssertVec(new Vec3(0, 0, 0), pose.RootOffset);
        }

        [Test]
        public void ABrokenZeroQuaternionBecomesIdentityNotNaN()
        {
            var pose = new SkeletonPose(new[] { -1, 0 });
            pose.Update(new float[] { 0, 0, 0, 0, 0, 0, 0, 2 }, new float[3]);
            AxisConversionTests.AssertQuat(Quat.Identity, pose.Global(0));
            AxisConversionTests.AssertQuat(Quat.Identity, pose.Global(1));
        }

        [Test]
        public void HumanoidTableFallsBackOnlyWhereTheRigIsSilent()
        {
            var rigHumanoid = (string[])SmplHumanoidMap.BoneNames.Clone();
            rigHumanoid[3] = "";          // rig gives nothing: the table's "Spine" is used
            rigHumanoid[9] = "Chest";     // rig overrides: kept
            var bones = SmplHumanoidMap.Resolve(SmplHumanoidMap.JointNames, rigHumanoid);
            Assert.AreEqual("Spine", bones[3]);
            Assert.AreEqual("Chest", bones[9]);
            Assert.AreEqual("Hips", bones[0]);
            Assert.AreEqual("", bones[22], "SMPL hands have no HumanBodyBones counterpart");
            Assert.AreEqual("LeftUpperArm", SmplHumanoidMap.BoneFor("left_shoulder"));
            Assert.AreEqual("", SmplHumanoidMap.BoneFor("tail"));
        }
    }
}
