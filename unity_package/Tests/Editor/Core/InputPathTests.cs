using System;
using System.Collections.Generic;
using System.Threading;
using AvatarBridge.Core.Client;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>
    /// The input path without sockets: camera pixels turned upright, the lock-free chunk queue and the
    /// newest-image mailbox that let Unity's main and audio threads hand inputs to the sender thread.
    /// </summary>
    public class InputPathTests
    {
        // An upright 3×2 picture, pixels named A..F:  A B C / D E F.
        const string Upright = "ABC/DEF";

        [Test]
        public void UnityBottomUpRgbaBecomesTopDownRgb()
        {
            Assert.AreEqual("ABC/DEF", Convert(ImageSource.Rgba32BottomUp, 3, 2));
            Assert.AreEqual("ABC/DEF", Convert(ImageSource.Rgb8, 3, 2));
        }

        [Test]
        public void CameraRotationIsUndoneClockwise()
        {
            // Turning ABC/DEF a quarter clockwise puts the left column (A, D) on top, read bottom to top.
            Assert.AreEqual("DA/EB/FC", Convert(Rotated(90), 2, 3));
            Assert.AreEqual("FED/CBA", Convert(Rotated(180), 3, 2));
            Assert.AreEqual("CF/BE/AD", Convert(Rotated(270), 2, 3));
            Assert.AreEqual("DA/EB/FC", Convert(Rotated(-270), 2, 3));
        }

        [Test]
        public void VerticalMirroringAndMirrorFlipTheRightAxes()
        {
            var flipped = ImageSource.Rgba32BottomUp;
            flipped.VerticallyMirrored = true;
            Assert.AreEqual("DEF/ABC", Convert(flipped, 3, 2));
            var mirrored = ImageSource.Rgba32BottomUp;
            mirrored.Mirror = true;
            Assert.AreEqual("CBA/FED", Convert(mirrored, 3, 2));
            // Mirroring happens after the turn: left and right of the upright picture.
            var both = Rotated(90);
            both.Mirror = true;
            Assert.AreEqual("AD/BE/CF", Convert(both, 2, 3));
        }

        [Test]
        public void ConversionRefusesWrongSizesAndOddAngles()
        {
            var pixels = Pixels(ImageSource.Rgba32BottomUp);
            Assert.Throws<ArgumentException>(() => ImageConversion.ToUprightRgb(pixels, 3, 2, ImageSource.Rgba32BottomUp, new byte[17]));
            Assert.Throws<ArgumentException>(() => ImageConversion.ToUprightRgb(pixels, 3, 3, ImageSource.Rgba32BottomUp, new byte[27]));
            Assert.Throws<ArgumentException>(() => ImageConversion.ToUprightRgb(pixels, 3, 2, Rotated(45), new byte[18]));
        }

        [Test]
        public void RingIsFirstInFirstOutAndRefusesWhenFull()
        {
            var ring = new InputRing(4);
            for (int i = 0; i < 4; i++) Assert.IsTrue(ring.TryEnqueue(null, InputKind.Audio, 48000, new float[] { i, i }, i));
            Assert.IsFalse(ring.TryEnqueue(null, InputKind.Audio, 48000, new float[] { 9 }, 9), "full: the caller is refused, not made to wait");
            for (int i = 0; i < 4; i++)
            {
                var chunk = ring.Peek();
                Assert.IsNotNull(chunk);
                Assert.AreEqual(i, chunk.CaptureNs);
                Assert.AreEqual(2, chunk.Count);
                Assert.AreEqual((float)i, chunk.Values[1]);
                ring.Release();
                Assert.IsTrue(ring.TryEnqueue(null, InputKind.Features, 1, new float[] { 10 + i }, 10 + i), "a released cell is free again");
            }
            for (int i = 0; i < 4; i++)
            {
                Assert.AreEqual(10 + i, ring.Peek().CaptureNs);
                Assert.AreEqual(InputKind.Features, ring.Peek().Kind);
                ring.Release();
            }
            Assert.IsNull(ring.Peek());
            Assert.Throws<ArgumentException>(() => new InputRing(6));
        }

        [Test]
        public void RingKeepsEachProducersOrderUnderContention()
        {
            const int PerProducer = 20000;
            var ring = new InputRing(8);
            var refused = new int[2];
            var producers = new Thread[2];
            for (int p = 0; p < 2; p++)
            {
                int id = p;
                producers[p] = new Thread(() =>
                {
                    var values = new float[3];
                    for (int i = 0; i < PerProducer; i++)
                    {
                        values[0] = id;
                        values[1] = values[2] = i;
                        if (!ring.TryEnqueue(null, InputKind.Audio, id, values, i)) refused[id]++;
                    }
                });
            }
            foreach (var t in producers) t.Start();
            var last = new[] { -1L, -1L };
            var received = new int[2];
            bool running = true;
            while (running)
            {
                running = producers[0].IsAlive || producers[1].IsAlive;
                InputChunk chunk;
                while ((chunk = ring.Peek()) != null)
                {
                    int id = chunk.RateOrRows;
                    Assert.AreEqual((float)id, chunk.Values[0], "a chunk is never mixed with another");
                    Assert.AreEqual(chunk.Values[1], chunk.Values[2]);
                    Assert.AreEqual((float)chunk.CaptureNs, chunk.Values[1]);
                    Assert.Greater(chunk.CaptureNs, last[id], "each producer's chunks arrive in order, once");
                    last[id] = chunk.CaptureNs;
                    received[id]++;
                    ring.Release();
                }
            }
            for (int p = 0; p < 2; p++) Assert.AreEqual(PerProducer, received[p] + refused[p], "every chunk is either delivered or refused");
        }

        [Test]
        public void MailboxHandsOverOnlyTheNewestImageAndCountsTheRest()
        {
            var box = new ImageMailbox();
            Assert.IsNull(box.Take());
            bool replaced;
            Assert.IsTrue(box.Post(new byte[] { 1, 1, 1 }, 1, 1, ImageSource.Rgb8, 1, out replaced));
            Assert.IsFalse(replaced);
            Assert.IsTrue(box.Post(new byte[] { 2, 2, 2 }, 1, 1, ImageSource.Rgb8, 2, out replaced));
            Assert.IsTrue(replaced, "the first was never sent");
            Assert.IsTrue(box.HasPending);
            var held = box.Take();
            Assert.AreEqual(2, held.CaptureNs);
            Assert.IsNull(box.Take(), "nothing new");

            held = null;
            Assert.IsTrue(box.Post(new byte[] { 3, 3, 3, 3, 3, 3 }, 2, 1, ImageSource.Rgb8, 3, out replaced));
            held = box.Take();
            // The caller keeps posting while the sender holds image 3: it must not change underneath.
            for (int k = 4; k < 10; k++) Assert.IsTrue(box.Post(new byte[] { (byte)k, 0, 0 }, 1, 1, ImageSource.Rgb8, k, out replaced));
            Assert.AreEqual(3, held.CaptureNs);
            Assert.AreEqual(6, held.Length);
            Assert.AreEqual(3, held.Pixels[5]);
            var newest = box.Take();
            Assert.AreEqual(9, newest.CaptureNs);
            Assert.AreEqual(9, newest.Pixels[0]);
        }

        static ImageSource Rotated(int degrees)
        {
            var source = ImageSource.Rgba32BottomUp;
            source.RotationClockwise = degrees;
            return source;
        }

        // The upright picture as the camera would deliver it for this source: the inverse of the conversion,
        // worked out by hand for the 3×2 case: stored rows bottom to top, and for a turned camera the
        // picture the camera holds is the upright one turned back.
        static byte[] Pixels(ImageSource source)
        {
            string[] rows = Upright.Split('/');
            int bpp = source.Format == PixelFormat.Rgba32 ? 4 : 3;
            var pixels = new byte[6 * bpp];
            for (int y = 0; y < 2; y++)
                for (int x = 0; x < 3; x++)
                {
                    int row = source.BottomUp ? 1 - y : y;
                    int i = (row * 3 + x) * bpp;
                    char name = rows[y][x];
                    pixels[i] = (byte)name;
                    pixels[i + 1] = (byte)(name + 32);
                    pixels[i + 2] = (byte)(name + 64);
                    if (bpp == 4) pixels[i + 3] = 255;
                }
            return pixels;
        }

        // The camera delivers ABC/DEF (stored per the source's row order); the result is read back as letters.
        static string Convert(ImageSource source, int expectWidth, int expectHeight)
        {
            var camera = source;
            camera.RotationClockwise = 0;
            camera.Mirror = false;
            camera.VerticallyMirrored = false;
            var pixels = Pixels(camera);
            int width, height;
            ImageConversion.UprightSize(3, 2, source, out width, out height);
            Assert.AreEqual(expectWidth, width);
            Assert.AreEqual(expectHeight, height);
            var rgb = new byte[width * height * 3];
            ImageConversion.ToUprightRgb(pixels, 3, 2, source, rgb);
            var rows = new List<string>();
            for (int y = 0; y < height; y++)
            {
                var row = new char[width];
                for (int x = 0; x < width; x++)
                {
                    int i = (y * width + x) * 3;
                    Assert.AreEqual(rgb[i] + 32, rgb[i + 1]);
                    Assert.AreEqual(rgb[i] + 64, rgb[i + 2]);
                    row[x] = (char)rgb[i];
                }
                rows.Add(new string(row));
            }
            return string.Join("/", rows);
        }
    }
}
