using System;
using System.Linq;
using AvatarBridge.Core.Rig;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>
    /// The generated humanoid and face the demo drives, and the retargeting HumanoidDriver does on
    /// them, checked without Unity: the same rig the play-mode tests build with AvatarBuilder.
    /// </summary>
    public class ProceduralRigTests
    {
        // SMPL's kinematic tree (the bridge's body rig sends the same parents).
        static readonly int[] SmplParents = { -1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21 };

        [Test]
        public void TheSkeletonHasEveryBoneSmplDrivesAndMecanimRequires()
        {
            var bones = ProceduralHumanoid.Bones;
            Assert.AreEqual(bones.Length, ProceduralHumanoid.Parents.Length);
            for (int b = 0; b < bones.Length; b++) Assert.Less(ProceduralHumanoid.Parents[b], b, bones[b] + "'s parent comes first");
            foreach (var smplBone in SmplHumanoidMap.BoneNames.Where(n => n.Length > 0)) CollectionAssert.Contains(bones, smplBone);
            foreach (var required in new[] { "Hips", "Spine", "Head", "LeftUpperLeg", "LeftLowerLeg", "LeftFoot", "RightUpperLeg", "RightLowerLeg",
                "RightFoot", "LeftUpperArm", "LeftLowerArm", "LeftHand", "RightUpperArm", "RightLowerArm", "RightHand" })
                CollectionAssert.Contains(bones, required);
            CollectionAssert.AllItemsAreUnique(bones);
        }

        [Test]
        public void LocalTransformsComposeBackToTheTPose()
        {
            var world = new Quat[ProceduralHumanoid.Bones.Length];
            var position = new Vec3[world.Length];
            for (int b = 0; b < world.Length; b++)
            {
                int p = ProceduralHumanoid.Parents[b];
                world[b] = p < 0 ? ProceduralHumanoid.LocalRotation(b) : world[p] * ProceduralHumanoid.LocalRotation(b);
                position[b] = p < 0 ? ProceduralHumanoid.LocalPosition(b) : position[p] + world[p] * ProceduralHumanoid.LocalPosition(b);
                AssertSame(ProceduralHumanoid.Rotation(b), world[b], ProceduralHumanoid.Bones[b]);
                AssertClose(ProceduralHumanoid.Position(b), position[b], ProceduralHumanoid.Bones[b]);
            }
            // The bone axes really are arbitrary: no two bones share a T-pose rotation.
            Assert.Greater(Math.Abs(Dot(ProceduralHumanoid.Rotation(7), ProceduralHumanoid.Rotation(8))), 0f);
            Assert.Less(Math.Abs(Dot(ProceduralHumanoid.Rotation(7), ProceduralHumanoid.Rotation(8))), 0.99f);
        }

        [Test]
        public void ABentLeftElbowPointsTheForearmBackwardsInUnity()
        {
            // Wire: SMPL's left arm lies along +X; +90° about +Y turns it to -Z. Unity mirrors x, not z.
            var joints = Identity(24);
            Set(joints, 18, Quat.AxisAngle(new Vec3(0, 1, 0), (float)(Math.PI / 2)));
            var positions = Pose(joints, Quat.Identity);
            int elbow = ProceduralHumanoid.IndexOf("LeftLowerArm"), hand = ProceduralHumanoid.IndexOf("LeftHand");
            AssertClose(new Vec3(0, 0, -0.25f), positions[hand] - positions[elbow], "forearm");
            int shoulder = ProceduralHumanoid.IndexOf("LeftUpperArm");
            AssertClose(ProceduralHumanoid.Position(elbow) - ProceduralHumanoid.Position(shoulder), positions[elbow] - positions[shoulder], "upper arm unchanged");
        }

        [Test]
        public void EveryBoneFollowsItsJointWhateverItsAxes()
        {
            var random = new Random(3);
            var joints = new float[24 * 4];
            for (int j = 0; j < 24; j++)
                Set(joints, j, Quat.AxisAngle(Normalize(new Vec3((float)random.NextDouble() - 0.5f, (float)random.NextDouble() - 0.5f, (float)random.NextDouble() - 0.5f)), (float)random.NextDouble() * 2));
            var avatarRoot = Quat.AxisAngle(new Vec3(0, 1, 0), 0.7f);
            var pose = new SkeletonPose(SmplParents);
            pose.Update(joints, new float[3]);
            var positions = Pose(joints, avatarRoot);
            var boneJoint = BoneJoints();
            for (int b = 1; b < ProceduralHumanoid.Bones.Length; b++)
            {
                int parent = ProceduralHumanoid.Parents[b];
                // The offset to a child turns with the parent bone's SMPL joint, in the avatar's frame.
                var expected = avatarRoot * (pose.Global(boneJoint[parent]) * (ProceduralHumanoid.Position(b) - ProceduralHumanoid.Position(parent)));
                AssertClose(expected, positions[b] - positions[parent], ProceduralHumanoid.Bones[b]);
            }
        }

        [Test]
        public void TheFaceHasTheFiftyTwoArkitShapesEachMovingItsOwnRegion()
        {
            var face = ProceduralFace.Build();
            Assert.AreEqual(52, face.ShapeNames.Length);
            CollectionAssert.AllItemsAreUnique(face.ShapeNames);
            Assert.AreEqual(52, face.Deltas.Length);
            for (int k = 0; k < 52; k++)
            {
                Assert.AreEqual(face.Vertices.Length, face.Deltas[k].Length);
                Assert.Greater(face.Deltas[k].Max(d => Length(d)), 0.002f, face.ShapeNames[k] + " moves something by at least 2 mm on a 20 cm head");
                for (int other = 0; other < k; other++)
                    Assert.IsFalse(face.Deltas[k].SequenceEqual(face.Deltas[other]), face.ShapeNames[k] + " differs from " + face.ShapeNames[other]);
            }
            // The avatar's left is -X: a left blink moves only vertices on that side.
            var blink = face.Deltas[ArkitShapes.IndexOf("EyeBlinkLeft")];
            for (int i = 0; i < blink.Length; i++)
                if (Length(blink[i]) > 0) Assert.Less(face.Vertices[i].X, 0f);
            // JawOpen drops the chin.
            Assert.Less(face.Deltas[ArkitShapes.IndexOf("JawOpen")].Min(d => d.Y), -0.02f);
            // A mesh exported with these names binds every weight the bridge sends.
            Assert.AreEqual(52, BlendshapeBinder.Bind(ArkitShapes.Names, face.ShapeNames, null, true).Length);
        }

        [Test]
        public void FaceTrianglesFaceOutwards()
        {
            var face = ProceduralFace.Build();
            Assert.AreEqual(0, face.Triangles.Length % 3);
            int checkedCount = 0;
            for (int t = 0; t < face.Triangles.Length; t += 3)
            {
                var a = face.Vertices[face.Triangles[t]];
                var b = face.Vertices[face.Triangles[t + 1]];
                var c = face.Vertices[face.Triangles[t + 2]];
                var n = Cross(b - a, c - a);
                if (Length(n) < 1e-7f) continue; // the poles' collapsed triangles
                // Unity computes normals as Cross(b - a, c - a); front faces are clockwise and point outwards.
                var centre = (a + b + c) * (1f / 3);
                Assert.Greater(n.X * centre.X + n.Y * centre.Y + n.Z * centre.Z, 0f, "triangle " + t / 3);
                checkedCount++;
            }
            Assert.Greater(checkedCount, 100);
        }

        // Bone positions after driving the generated rig the way HumanoidDriver does: world rotations from
        // BoneWorld, written as locals under the parent, then forward kinematics through the locals.
        static Vec3[] Pose(float[] joints, Quat avatarRoot)
        {
            var pose = new SkeletonPose(SmplParents);
            pose.Update(joints, new float[3]);
            var boneJoint = BoneJoints();
            int n = ProceduralHumanoid.Bones.Length;
            var world = new Quat[n];
            var position = new Vec3[n];
            for (int b = 0; b < n; b++)
            {
                int parent = ProceduralHumanoid.Parents[b];
                var target = HumanoidRetarget.BoneWorld(avatarRoot, pose.Global(boneJoint[b]), ProceduralHumanoid.Rotation(b));
                var parentWorld = parent < 0 ? avatarRoot : world[parent];
                var local = HumanoidRetarget.LocalUnder(parentWorld, target);
                world[b] = parentWorld * local;
                var localPosition = ProceduralHumanoid.LocalPosition(b);
                position[b] = parent < 0 ? avatarRoot * localPosition : position[parent] + world[parent] * localPosition;
            }
            return position;
        }

        static int[] BoneJoints()
        {
            var bones = SmplHumanoidMap.Resolve(SmplHumanoidMap.JointNames, null);
            return ProceduralHumanoid.Bones.Select(b => Array.IndexOf(bones, b)).ToArray();
        }

        static float[] Identity(int count)
        {
            var joints = new float[count * 4];
            for (int j = 0; j < count; j++) joints[j * 4 + 3] = 1;
            return joints;
        }

        static void Set(float[] joints, int j, Quat q)
        {
            joints[j * 4] = q.X;
            joints[j * 4 + 1] = q.Y;
            joints[j * 4 + 2] = q.Z;
            joints[j * 4 + 3] = q.W;
        }

        static void AssertClose(Vec3 expected, Vec3 actual, string what)
        {
            Assert.AreEqual(0f, Length(expected - actual), 1e-4, what + ": expected " + expected + ", got " + actual);
        }

        static void AssertSame(Quat expected, Quat actual, string what)
        {
            Assert.AreEqual(1f, Math.Abs(Dot(expected, actual)), 1e-4, what + ": expected " + expected + ", got " + actual);
        }

        static float Dot(Quat a, Quat b) => a.X * b.X + a.Y * b.Y + a.Z * b.Z + a.W * b.W;

        static float Length(Vec3 v) => (float)Math.Sqrt(v.X * v.X + v.Y * v.Y + v.Z * v.Z);

        static Vec3 Normalize(Vec3 v) => v * (1f / Length(v));

        static Vec3 Cross(Vec3 a, Vec3 b) => new Vec3(a.Y * b.Z - a.Z * b.Y, a.Z * b.X - a.X * b.Z, a.X * b.Y - a.Y * b.X);
    }
}
