namespace AvatarBridge.Core.Client
{
    /// <summary>How the pixels handed to SessionClient.SendImage are laid out, and what turns them upright.</summary>
    public struct ImageSource
    {
        /// <summary>rgb8 rows top to bottom, upright: what the protocol sends (section 4.5), copied as is.</summary>
        public static ImageSource Rgb8 => new ImageSource { Format = PixelFormat.Rgb8 };

        /// <summary>The bytes of one JPEG file, already upright (SessionClient.SendJpeg): sent as they are.</summary>
        public static ImageSource Jpeg => new ImageSource { Format = PixelFormat.Jpeg };

        /// <summary>Unity's Color32[] from GetPixels32: RGBA, rows bottom to top.</summary>
        public static ImageSource Rgba32BottomUp => new ImageSource { Format = PixelFormat.Rgba32, BottomUp = true };

        public PixelFormat Format;
        /// <summary>Rows run bottom to top (Unity's texture order).</summary>
        public bool BottomUp;
        /// <summary>The picture is upside down on top of that (WebCamTexture.videoVerticallyMirrored).</summary>
        public bool VerticallyMirrored;
        /// <summary>Clockwise turn that makes the picture upright: 0, 90, 180 or 270 (WebCamTexture.videoRotationAngle).</summary>
        public int RotationClockwise;
        /// <summary>Flip left and right after turning (for a camera that delivers a mirrored picture).</summary>
        public bool Mirror;

        internal int BytesPerPixel => Format == PixelFormat.Rgba32 ? 4 : 3;
    }

    public enum PixelFormat
    {
        /// <summary>3 bytes per pixel: R, G, B.</summary>
        Rgb8,
        /// <summary>4 bytes per pixel: R, G, B, A (the alpha is dropped).</summary>
        Rgba32,
        /// <summary>A JPEG file (protocol 1.3): no pixels here, the bridge decodes it.</summary>
        Jpeg,
    }
}
