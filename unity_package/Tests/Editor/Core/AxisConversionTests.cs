using System;
using AvatarBridge.Core.Rig;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>
    /// Known rotations through the wire → Unity conversion. Wire: right-handed, +Y up, +Z forward,
    /// +X the avatar's left. Unity: left-handed, +Y up, +Z forward, +X right. The avatar faces +Z in
    /// both, so "its left" is wire +X and Unity -X. Expected Unity values are the quaternions Unity's
    /// own Quaternion.Euler gives for the same motion seen on screen.
    /// </summary>
    public class AxisConversionTests
    {
        static readonly float H = (float)Math.Sqrt(0.5); // sin 45° = cos 45°

        [Test]
        public void PositionsMirrorOnlyX()
        {
            // The avatar's left hand 0.5 m out: wire +X, Unity -X; up and forward do not change.
            AssertVec(new Vec3(-0.5f, 1.2f, 0.3f), AxisConversion.PositionToUnity(new Vec3(0.5f, 1.2f, 0.3f)));
        }

        [Test]
        public void GazeTurnsTheEyeToTheSubjectsLeftAndUp()
        {
            // Unity: the avatar's left is -X, up is +Y; an eye looks along +Z at rest.
            AssertVec(new Vec3(-1, 0, 0), AxisConversion.GazeToUnity((float)(Math.PI / 2), 0) * new Vec3(0, 0, 1));
            AssertVec(new Vec3(0, 1, 0), AxisConversion.GazeToUnity(0, (float)(Math.PI / 2)) * new Vec3(0, 0, 1));
            // Yaw first, then pitch in the turned frame: looking left and up keeps the eye's up vertical.
            var look = AxisConversion.GazeToUnity(0.3f, 0.2f) * new Vec3(0, 0, 1);
            Assert.Less(look.X, 0f);
            Assert.Greater(look.Y, 0f);
        }

        [Test]
        public void IdentityStaysIdentity() => AssertQuat(Quat.Identity, AxisConversion.RotationToUnity(Quat.Identity));

        [Test]
        public void YawTowardTheAvatarsLeft()
        {
            // Wire: +90° about +Y (counter-clockwise seen from above in a right-handed frame) takes
            // forward (0,0,1) to (1,0,0), the avatar's left: it turns to its left.
            var wire = new Quat(0, H, 0, H);
            AssertVec(new Vec3(1, 0, 0), wire * new Vec3(0, 0, 1));
            // Unity: the same turn is Quaternion.Euler(0, -90, 0) = (0, -0.7071, 0, 0.7071), which takes
            // Vector3.forward to Vector3.left (-1, 0, 0).
            var unity = AxisConversion.RotationToUnity(wire);
            AssertQuat(new Quat(0, -H, 0, H), unity);
            AssertVec(new Vec3(-1, 0, 0), unity * new Vec3(0, 0, 1));
        }

        [Test]
        public void PitchNodsDown()
        {
            // Wire: +90° about +X (the avatar's left axis) takes forward (0,0,1) to (0,-1,0): a nod down.
            var wire = new Quat(H, 0, 0, H);
            AssertVec(new Vec3(0, -1, 0), wire * new Vec3(0, 0, 1));
            // Unity: a nod down is Quaternion.Euler(90, 0, 0) = (0.7071, 0, 0, 0.7071) (forward → down).
            var unity = AxisConversion.RotationToUnity(wire);
            AssertQuat(new Quat(H, 0, 0, H), unity);
            AssertVec(new Vec3(0, -1, 0), unity * new Vec3(0, 0, 1));
        }

        [Test]
        public void RollTiltsTowardTheAvatarsRight()
        {
            // Wire: +90° about +Z (forward) takes up (0,1,0) to (-1,0,0), the avatar's right: the head
            // tilts onto its right shoulder.
            var wire = new Quat(0, 0, H, H);
            AssertVec(new Vec3(-1, 0, 0), wire * new Vec3(0, 1, 0));
            // Unity: the avatar's right is +X; Quaternion.Euler(0, 0, -90) = (0, 0, -0.7071, 0.7071) takes
            // up to Vector3.right.
            var unity = AxisConversion.RotationToUnity(wire);
            AssertQuat(new Quat(0, 0, -H, H), unity);
            AssertVec(new Vec3(1, 0, 0), unity * new Vec3(0, 1, 0));
        }

        [Test]
        public void ConversionCommutesWithRotatingAndComposing()
        {
            // For any rotation q and vector v: unity(q) · unity(v) = unity(q · v), and the conversion
            // of a product is the product of the conversions (it is a change of basis).
            var random = new Random(1234);
            for (int i = 0; i < 200; i++)
            {
                var q = RandomRotation(random);
                var r = RandomRotation(random);
                var v = new Vec3((float)random.NextDouble() - 0.5f, (float)random.NextDouble() - 0.5f, (float)random.NextDouble() - 0.5f);
                AssertVec(AxisConversion.PositionToUnity(q * v), AxisConversion.RotationToUnity(q) * AxisConversion.PositionToUnity(v));
                AssertQuat(AxisConversion.RotationToUnity(q * r), AxisConversion.RotationToUnity(q) * AxisConversion.RotationToUnity(r));
                // Mirroring twice is the identity.
                AssertQuat(q, AxisConversion.RotationToUnity(AxisConversion.RotationToUnity(q)));
            }
        }

        static Quat RandomRotation(Random random)
        {
            var axis = new Vec3((float)random.NextDouble() - 0.5f, (float)random.NextDouble() - 0.5f, (float)random.NextDouble() - 0.5f);
            float n = (float)Math.Sqrt(axis.X * axis.X + axis.Y * axis.Y + axis.Z * axis.Z);
            return Quat.AxisAngle(axis * (1 / n), (float)(random.NextDouble() * 2 * Math.PI));
        }

        internal static void AssertVec(Vec3 expected, Vec3 actual)
        {
            Assert.AreEqual(expected.X, actual.X, 1e-5, "x of " + actual);
            Assert.AreEqual(expected.Y, actual.Y, 1e-5, "y of " + actual);
            Assert.AreEqual(expected.Z, actual.Z, 1e-5, "z of " + actual);
        }

        internal static void AssertQuat(Quat expected, Quat actual)
        {
            // q and -q are the same rotation.
            float sign = expected.X * actual.X + expected.Y * actual.Y + expected.Z * actual.Z + expected.W * actual.W < 0 ? -1 : 1;
            Assert.AreEqual(expected.X, sign * actual.X, 1e-5, "x of " + actual);
            Assert.AreEqual(expected.Y, sign * actual.Y, 1e-5, "y of " + actual);
            Assert.AreEqual(expected.Z, sign * actual.Z, 1e-5, "z of " + actual);
            Assert.AreEqual(expected.W, sign * actual.W, 1e-5, "w of " + actual);
        }
    }
}
