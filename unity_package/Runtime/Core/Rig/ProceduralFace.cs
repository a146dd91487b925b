using System;

namespace AvatarBridge.Core.Rig
{
    /// <summary>
    /// A face mesh defined in code for the demo and the tests: a sphere (facing +Z, Unity coordinates)
    /// with the 52 ARKit blendshapes, each a smooth bump that moves its region of the face the way the
    /// shape's name says (JawOpen drops the chin, EyeBlinkLeft closes the avatar's left eye...). Crude,
    /// but every shape is distinct and visible, and the names are exactly ARKit's.
    /// </summary>
    public sealed class ProceduralFace
    {
        // Per shape: region centre on the unit sphere (x, y, z), displacement (dx, dy, dz), region radius.
        // The avatar's left is -X. Units: sphere radii.
        static readonly float[] Shapes =
        {
            // EyeBlinkLeft, EyeLookDownLeft, EyeLookInLeft, EyeLookOutLeft, EyeLookUpLeft, EyeSquintLeft, EyeWideLeft
            -0.35f, 0.25f, 0.88f, 0f, -0.12f, 0f, 0.25f,   -0.35f, 0.25f, 0.88f, 0f, -0.1f, 0f, 0.3f,
            -0.35f, 0.25f, 0.88f, 0.1f, 0f, 0f, 0.3f,     -0.35f, 0.25f, 0.88f, -0.1f, 0f, 0f, 0.3f,
            -0.35f, 0.25f, 0.88f, 0f, 0.1f, 0f, 0.3f,     -0.35f, 0.15f, 0.9f, 0f, 0.06f, -0.02f, 0.25f,
            -0.35f, 0.3f, 0.88f, 0f, 0.08f, 0.02f, 0.25f,
            // the same seven for the right eye
            0.35f, 0.25f, 0.88f, 0f, -0.12f, 0f, 0.25f,    0.35f, 0.25f, 0.88f, 0f, -0.1f, 0f, 0.3f,
            0.35f, 0.25f, 0.88f, -0.1f, 0f, 0f, 0.3f,     0.35f, 0.25f, 0.88f, 0.1f, 0f, 0f, 0.3f,
            0.35f, 0.25f, 0.88f, 0f, 0.1f, 0f, 0.3f,      0.35f, 0.15f, 0.9f, 0f, 0.06f, -0.02f, 0.25f,
            0.35f, 0.3f, 0.88f, 0f, 0.08f, 0.02f, 0.25f,
            // JawForward, JawLeft, JawRight, JawOpen
            0f, -0.7f, 0.6f, 0f, 0f, 0.12f, 0.5f,   0f, -0.7f, 0.6f, -0.12f, 0f, 0f, 0.5f,
            0f, -0.7f, 0.6f, 0.12f, 0f, 0f, 0.5f,   0f, -0.65f, 0.7f, 0f, -0.3f, 0.05f, 0.55f,
            // MouthClose, MouthFunnel, MouthPucker, MouthLeft, MouthRight
            0f, -0.48f, 0.87f, 0f, 0.08f, 0f, 0.25f,   0f, -0.4f, 0.9f, 0f, 0f, 0.1f, 0.25f,
            0f, -0.4f, 0.9f, 0f, 0f, 0.15f, 0.25f,    0f, -0.4f, 0.9f, -0.12f, 0f, 0f, 0.3f,
            0f, -0.4f, 0.9f, 0.12f, 0f, 0f, 0.3f,
            // MouthSmileLeft, MouthSmileRight, MouthFrownLeft, MouthFrownRight, MouthDimpleLeft, MouthDimpleRight
            -0.3f, -0.4f, 0.85f, -0.06f, 0.1f, 0f, 0.25f,   0.3f, -0.4f, 0.85f, 0.06f, 0.1f, 0f, 0.25f,
            -0.3f, -0.4f, 0.85f, 0f, -0.1f, 0f, 0.25f,      0.3f, -0.4f, 0.85f, 0f, -0.1f, 0f, 0.25f,
            -0.3f, -0.4f, 0.85f, 0f, 0f, -0.07f, 0.25f,    0.3f, -0.4f, 0.85f, 0f, 0f, -0.07f, 0.25f,
            // MouthStretchLeft, MouthStretchRight, MouthRollLower, MouthRollUpper, MouthShrugLower, MouthShrugUpper
            -0.3f, -0.4f, 0.85f, -0.1f, -0.03f, 0f, 0.25f,  0.3f, -0.4f, 0.85f, 0.1f, -0.03f, 0f, 0.25f,
            0f, -0.48f, 0.87f, 0f, 0.02f, -0.08f, 0.25f,    0f, -0.33f, 0.94f, 0f, -0.02f, -0.08f, 0.25f,
            0f, -0.48f, 0.87f, 0f, 0.07f, 0.03f, 0.25f,     0f, -0.33f, 0.94f, 0f, 0.07f, 0.03f, 0.25f,
            // MouthPressLeft, MouthPressRight, MouthLowerDownLeft, MouthLowerDownRight, MouthUpperUpLeft, MouthUpperUpRight
            -0.25f, -0.4f, 0.88f, 0f, 0f, -0.05f, 0.25f,   0.25f, -0.4f, 0.88f, 0f, 0f, -0.05f, 0.25f,
            -0.15f, -0.48f, 0.87f, 0f, -0.08f, 0f, 0.25f,  0.15f, -0.48f, 0.87f, 0f, -0.08f, 0f, 0.25f,
            -0.15f, -0.33f, 0.93f, 0f, 0.08f, 0f, 0.25f,   0.15f, -0.33f, 0.93f, 0f, 0.08f, 0f, 0.25f,
            // BrowDownLeft, BrowDownRight, BrowInnerUp, BrowOuterUpLeft, BrowOuterUpRight
            -0.35f, 0.45f, 0.82f, 0f, -0.08f, 0f, 0.25f,   0.35f, 0.45f, 0.82f, 0f, -0.08f, 0f, 0.25f,
            0f, 0.45f, 0.89f, 0f, 0.08f, 0f, 0.25f,        -0.5f, 0.45f, 0.74f, 0f, 0.08f, 0f, 0.25f,
            0.5f, 0.45f, 0.74f, 0f, 0.08f, 0f, 0.25f,
            // CheekPuff, CheekSquintLeft, CheekSquintRight, NoseSneerLeft, NoseSneerRight, TongueOut
            0f, -0.25f, 0.85f, 0f, 0f, 0.1f, 0.7f,         -0.5f, -0.05f, 0.85f, 0f, 0.07f, 0f, 0.25f,
            0.5f, -0.05f, 0.85f, 0f, 0.07f, 0f, 0.25f,     -0.12f, 0.05f, 0.99f, 0f, 0.06f, 0.02f, 0.25f,
            0.12f, 0.05f, 0.99f, 0f, 0.06f, 0.02f, 0.25f,  0f, -0.42f, 0.9f, 0f, -0.03f, 0.25f, 0.25f,
        };

        ProceduralFace(Vec3[] vertices, int[] triangles, Vec3[][] deltas)
        {
            Vertices = vertices;
            Triangles = triangles;
            Deltas = deltas;
        }

        public Vec3[] Vertices { get; }
        /// <summary>Three indices per triangle, clockwise seen from outside (Unity's front faces).</summary>
        public int[] Triangles { get; }
        /// <summary>Names of the shapes, ArkitShapes.Names' order.</summary>
        public string[] ShapeNames => ArkitShapes.Names;
        /// <summary>Per shape, one vertex offset per vertex (the full-weight frame).</summary>
        public Vec3[][] Deltas { get; }

        /// <summary>A sphere of the given radius with rings × segments quads and the 52 shapes.</summary>
        public static ProceduralFace Build(float radius = 0.1f, int rings = 32, int segments = 48)
        {
            if (rings < 3 || segments < 3) throw new ArgumentOutOfRangeException(nameof(rings), "need at least 3 rings and 3 segments");
            var unit = new Vec3[(rings + 1) * (segments + 1)];
            for (int r = 0; r <= rings; r++)
            {
                double polar = Math.PI * r / rings; // 0 at the top
                for (int s = 0; s <= segments; s++)
                {
                    double azimuth = 2 * Math.PI * s / segments; // 0 faces +Z
                    unit[r * (segments + 1) + s] = new Vec3((float)(Math.Sin(polar) * Math.Sin(azimuth)), (float)Math.Cos(polar), (float)(Math.Sin(polar) * Math.Cos(azimuth)));
                }
            }
            var triangles = new int[rings * segments * 6];
            int t = 0;
            for (int r = 0; r < rings; r++)
                for (int s = 0; s < segments; s++)
                {
                    int a = r * (segments + 1) + s, b = a + 1, c = a + segments + 1, d = c + 1;
                    triangles[t++] = a; triangles[t++] = c; triangles[t++] = b;
                    triangles[t++] = b; triangles[t++] = c; triangles[t++] = d;
                }
            var vertices = new Vec3[unit.Length];
            for (int i = 0; i < unit.Length; i++) vertices[i] = unit[i] * radius;
            var deltas = new Vec3[ArkitShapes.Names.Length][];
            for (int k = 0; k < deltas.Length; k++)
            {
                int o = k * 7;
                var centre = new Vec3(Shapes[o], Shapes[o + 1], Shapes[o + 2]);
                var move = new Vec3(Shapes[o + 3], Shapes[o + 4], Shapes[o + 5]) * radius;
                float reach = Shapes[o + 6];
                deltas[k] = new Vec3[unit.Length];
                for (int i = 0; i < unit.Length; i++)
                {
                    var d = unit[i] - centre;
                    float distance = (float)Math.Sqrt(d.X * d.X + d.Y * d.Y + d.Z * d.Z);
                    float falloff = Math.Max(0f, 1f - distance / reach);
                    deltas[k][i] = move * (falloff * falloff * (3 - 2 * falloff)); // smoothstep
                }
            }
            return new ProceduralFace(vertices, triangles, deltas);
        }
    }
}
