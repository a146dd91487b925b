namespace AvatarBridge.Core.Rig
{
    /// <summary>
    /// Wire (right-handed, +Y up, +Z forward, +X = avatar's left) to Unity (left-handed, +Y up, +Z
    /// forward, +X = right), docs/protocol.md section 3. The change of basis is M = diag(-1, 1, 1):
    /// positions map to M·p = (-x, y, z). M has determinant -1, so a rotation R becomes M R M, whose
    /// quaternion keeps w and maps the vector part to -M·v = (x, -y, -z); the angle's sign flips
    /// with the handedness, which is what keeps the motion the same on screen.
    /// </summary>
    public static class AxisConversion
    {
        public static Vec3 PositionToUnity(Vec3 p) => new Vec3(-p.X, p.Y, p.Z);

        public static Quat RotationToUnity(Quat q) => new Quat(q.X, -q.Y, -q.Z, q.W);

        /// <summary>
        /// One eye's gaze from a face-tracking frame (protocol section 5.1: yaw &gt; 0 towards the subject's
        /// left about +Y, pitch &gt; 0 up about −X, radians, relative to the head) as a Unity rotation.
        /// </summary>
        public static Quat GazeToUnity(float yaw, float pitch) =>
            RotationToUnity(Quat.AxisAngle(new Vec3(0, 1, 0), yaw) * Quat.AxisAngle(new Vec3(-1, 0, 0), pitch));
    }
}
