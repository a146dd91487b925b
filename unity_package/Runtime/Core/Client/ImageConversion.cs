using System;

namespace AvatarBridge.Core.Client
{
    /// <summary>
    /// Turns camera pixels into the protocol's upright rgb8, rows top to bottom: drops alpha, undoes
    /// bottom-up rows and vertical mirroring, turns by the camera's rotation and optionally mirrors.
    /// One pass; it runs on the client's sender thread, not the caller's.
    /// </summary>
    public static class ImageConversion
    {
        /// <summary>Size of the upright picture: a quarter turn swaps width and height.</summary>
        public static void UprightSize(int width, int height, ImageSource source, out int uprightWidth, out int uprightHeight)
        {
            bool quarter = Rotation(source) % 180 != 0;
            uprightWidth = quarter ? height : width;
            uprightHeight = quarter ? width : height;
        }

        /// <summary>Converts width×height source pixels into rgb (UprightSize's width × height × 3 bytes).</summary>
        public static void ToUprightRgb(ReadOnlySpan<byte> pixels, int width, int height, ImageSource source, Span<byte> rgb)
        {
            int bpp = source.BytesPerPixel;
            if (width < 1 || height < 1) throw new ArgumentOutOfRangeException(nameof(width), "image size must be positive");
            if (pixels.Length < width * height * bpp) throw new ArgumentException("fewer pixels than width*height", nameof(pixels));
            int outWidth, outHeight;
            UprightSize(width, height, source, out outWidth, out outHeight);
            if (rgb.Length != outWidth * outHeight * 3) throw new ArgumentException("rgb must hold the upright image exactly", nameof(rgb));
            int target = 0;
            for (int oy = 0; oy < outHeight; oy++)
            {
                // The source index is linear in ox along an output row: find its start and step.
                int start = SourceIndex(0, oy, outWidth, width, height, source) * bpp;
                int step = outWidth > 1 ? SourceIndex(1, oy, outWidth, width, height, source) * bpp - start : 0;
                int index = start;
                for (int ox = 0; ox < outWidth; ox++)
                {
                    rgb[target] = pixels[index];
                    rgb[target + 1] = pixels[index + 1];
                    rgb[target + 2] = pixels[index + 2];
                    target += 3;
                    index += step;
                }
            }
        }

        // Pixel index in the source buffer of upright pixel (ox, oy).
        static int SourceIndex(int ox, int oy, int outWidth, int width, int height, ImageSource source)
        {
            if (source.Mirror) ox = outWidth - 1 - ox;
            int sx, sy; // in the camera picture, top-down, before turning
            switch (Rotation(source))
            {
                case 90: sx = oy; sy = height - 1 - ox; break;
                case 180: sx = width - 1 - ox; sy = height - 1 - oy; break;
                case 270: sx = width - 1 - oy; sy = ox; break;
                default: sx = ox; sy = oy; break;
            }
            int row = source.BottomUp != source.VerticallyMirrored ? height - 1 - sy : sy;
            return row * width + sx;
        }

        static int Rotation(ImageSource source)
        {
            int r = ((source.RotationClockwise % 360) + 360) % 360;
            if (r % 90 != 0) throw new ArgumentException("rotation must be a multiple of 90 degrees, got " + source.RotationClockwise);
            return r;
        }
    }
}
