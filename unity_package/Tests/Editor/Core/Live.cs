using System;
using System.Diagnostics;
using System.Threading;
using AvatarBridge.Core.Client;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>Helpers for the tests that talk to a real `avatar-bridge serve`.</summary>
    static class Live
    {
        /// <summary>A started client of the bridge the test script runs, already connected.</summary>
        public static SessionClient Client()
        {
            int requestPort, framesPort;
            TestEnvironment.BridgePorts(out requestPort, out framesPort);
            return Connected(new ClientOptions { RequestPort = requestPort, ClientName = "avatar-bridge C# tests" });
        }

        /// <summary>A FrameRecorder of every frame the bridge the test script runs publishes.</summary>
        public static FrameRecorder Recorder()
        {
            int requestPort, framesPort;
            TestEnvironment.BridgePorts(out requestPort, out framesPort);
            return new FrameRecorder(framesPort);
        }

        public static SessionClient Connected(ClientOptions options)
        {
            var client = new SessionClient(options);
            client.Start();
            if (!Eventually(() => client.State == ConnectionState.Connected, 10000))
            {
                client.Dispose();
                Assert.Fail("no connection to the bridge: " + client.LastError);
            }
            return client;
        }

        public static void WaitOpen(BridgeSession session)
        {
            if (!Eventually(() => session.IsOpen || session.Failed, 10000) || !session.IsOpen)
                Assert.Fail("session did not open: " + session.LastError);
        }

        public static bool Eventually(Func<bool> condition, int timeoutMs)
        {
            var watch = Stopwatch.StartNew();
            while (!condition())
            {
                if (watch.ElapsedMilliseconds > timeoutMs) return false;
                Thread.Sleep(5);
            }
            return true;
        }

        /// <summary>Music-feature-like rows: values in [0, 1], one beat every 30 rows.</summary>
        public static float[] Features(int rows, int cols, int firstRow)
        {
            var values = new float[rows * cols];
            var random = new Random(firstRow);
            for (int r = 0; r < rows; r++)
                for (int c = 0; c < cols; c++)
                    values[r * cols + c] = c >= cols - 2 ? ((firstRow + r) % 30 == 0 ? 1 : 0) : (float)random.NextDouble();
            return values;
        }

        /// <summary>An rgb8 test card: a gradient with a lighter oval in the middle, rows top to bottom.</summary>
        public static byte[] Image(int width, int height, int phase)
        {
            var rgb = new byte[width * height * 3];
            for (int y = 0; y < height; y++)
                for (int x = 0; x < width; x++)
                {
                    double dx = (x - width / 2.0) / (width / 5.0), dy = (y - height / 2.0) / (height / 3.0);
                    bool oval = dx * dx + dy * dy < 1;
                    int i = (y * width + x) * 3;
                    rgb[i] = (byte)(oval ? 220 : (x + phase) & 0xff);
                    rgb[i + 1] = (byte)(oval ? 180 : y & 0xff);
                    rgb[i + 2] = (byte)(oval ? 160 : 64);
                }
            return rgb;
        }

        public static void AssertUnitQuaternions(ReadOnlySpan<float> values, string what)
        {
            Assert.AreEqual(0, values.Length % 4, what);
            for (int q = 0; q < values.Length; q += 4)
            {
                double n = 0;
                for (int k = 0; k < 4; k++)
                {
                    Assert.IsFalse(float.IsNaN(values[q + k]) || float.IsInfinity(values[q + k]), what + " is finite");
                    n += values[q + k] * values[q + k];
                }
                Assert.AreEqual(1.0, Math.Sqrt(n), 1e-3, what + " quaternion " + q / 4 + " is unit length");
            }
        }

        public static void AssertInRange(ReadOnlySpan<float> values, float lo, float hi, string what)
        {
            for (int i = 0; i < values.Length; i++)
                Assert.IsTrue(values[i] >= lo && values[i] <= hi, what + "[" + i + "] = " + values[i] + " outside [" + lo + ", " + hi + "]");
        }

        public static void AssertFinite(ReadOnlySpan<float> values, string what)
        {
            for (int i = 0; i < values.Length; i++)
                Assert.IsFalse(float.IsNaN(values[i]) || float.IsInfinity(values[i]), what + "[" + i + "] is finite");
        }
    }
}
