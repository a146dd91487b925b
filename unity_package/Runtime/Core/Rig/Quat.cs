using System;

namespace AvatarBridge.Core.Rig
{
    /// <summary>
    /// A unit quaternion (x, y, z, w) with Hamilton products, the same algebra as UnityEngine.Quaternion,
    /// so results computed here carry over to Unity component by component.
    /// </summary>
    public struct Quat
    {
        public float X, Y, Z, W;

        public Quat(float x, float y, float z, float w)
        {
            X = x;
            Y = y;
            Z = z;
            W = w;
        }

        public static Quat Identity => new Quat(0, 0, 0, 1);

        /// <summary>Reads (x, y, z, w) at values[offset..offset+4), the wire's component order.</summary>
        public static Quat Read(ReadOnlySpan<float> values, int offset) =>
            new Quat(values[offset], values[offset + 1], values[offset + 2], values[offset + 3]);

        /// <summary>Rotation by angle (radians) about a unit axis, counter-clockwise looking down the axis in a right-handed frame.</summary>
        public static Quat AxisAngle(Vec3 axis, float angle)
        {
            float s = (float)Math.Sin(angle * 0.5);
            return new Quat(axis.X * s, axis.Y * s, axis.Z * s, (float)Math.Cos(angle * 0.5));
        }

        public static Quat operator *(Quat a, Quat b) => new Quat(
            a.W * b.X + a.X * b.W + a.Y * b.Z - a.Z * b.Y,
            a.W * b.Y - a.X * b.Z + a.Y * b.W + a.Z * b.X,
            a.W * b.Z + a.X * b.Y - a.Y * b.X + a.Z * b.W,
            a.W * b.W - a.X * b.X - a.Y * b.Y - a.Z * b.Z);

        /// <summary>The inverse of a unit quaternion (its conjugate).</summary>
        public Quat Inverse => new Quat(-X, -Y, -Z, W);

        /// <summary>Rotates v (q v q*).</summary>
        public static Vec3 operator *(Quat q, Vec3 v)
        {
            // t = 2 (q.xyz × v); v' = v + w t + q.xyz × t
            float tx = 2 * (q.Y * v.Z - q.Z * v.Y);
            float ty = 2 * (q.Z * v.X - q.X * v.Z);
            float tz = 2 * (q.X * v.Y - q.Y * v.X);
            return new Vec3(
                v.X + q.W * tx + (q.Y * tz - q.Z * ty),
                v.Y + q.W * ty + (q.Z * tx - q.X * tz),
                v.Z + q.W * tz + (q.X * ty - q.Y * tx));
        }

        /// <summary>Unit length; a zero quaternion (a broken frame) becomes the identity rather than NaN.</summary>
        public Quat Normalized
        {
            get
            {
                float n = (float)Math.Sqrt(X * X + Y * Y + Z * Z + W * W);
                return n < 1e-6f || float.IsNaN(n) ? Identity : new Quat(X / n, Y / n, Z / n, W / n);
            }
        }

        public override string ToString() => "(" + X + ", " + Y + ", " + Z + ", " + W + ")";
    }
}
