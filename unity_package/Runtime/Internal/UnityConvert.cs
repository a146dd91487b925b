using AvatarBridge.Core.Rig;
using UnityEngine;

namespace AvatarBridge
{
    /// <summary>Core math types to Unity's, component for component (the axis conversion happens in the core).</summary>
    static class UnityConvert
    {
        public static Quaternion ToUnity(this Quat q) => new Quaternion(q.X, q.Y, q.Z, q.W);

        public static Vector3 ToUnity(this Vec3 v) => new Vector3(v.X, v.Y, v.Z);

        public static Quat ToCore(this Quaternion q) => new Quat(q.x, q.y, q.z, q.w);

        public static Vec3 ToCore(this Vector3 v) => new Vec3(v.x, v.y, v.z);
    }
}
