using AvatarBridge.Core.Rig;
using NUnit.Framework;
using UnityEngine;

namespace AvatarBridge.Tests
{
    /// <summary>
    /// The core's known rotations checked against Unity's own Quaternion.Euler and Quaternion * Vector3
    /// (the core tests reason them out by hand; these confirm the reasoning inside Unity).
    /// </summary>
    public class AxisConversionInUnityTests
    {
        const float H = 0.70710678f; // sin 45° = cos 45°

        [Test]
        public void WireYawToTheLeftIsUnityEulerMinus90AboutY()
        {
            var unity = Convert(new Quat(0, H, 0, H));
            Assert.Less(Quaternion.Angle(Quaternion.Euler(0, -90, 0), unity), 0.01f);
            Assert.Less(Vector3.Distance(new Vector3(-1, 0, 0), unity * Vector3.forward), 1e-4f);
        }

        [Test]
        public void WirePitchDownIsUnityEulerPlus90AboutX()
        {
            var unity = Convert(new Quat(H, 0, 0, H));
            Assert.Less(Quaternion.Angle(Quaternion.Euler(90, 0, 0), unity), 0.01f);
            Assert.Less(Vector3.Distance(new Vector3(0, -1, 0), unity * Vector3.forward), 1e-4f);
        }

        [Test]
        public void WireRollToTheRightIsUnityEulerMinus90AboutZ()
        {
            var unity = Convert(new Quat(0, 0, H, H));
            Assert.Less(Quaternion.Angle(Quaternion.Euler(0, 0, -90), unity), 0.01f);
            Assert.Less(Vector3.Distance(new Vector3(1, 0, 0), unity * Vector3.up), 1e-4f);
        }

        static Quaternion Convert(Quat wire) => UnityConvert.ToUnity(AxisConversion.RotationToUnity(wire));
    }
}
