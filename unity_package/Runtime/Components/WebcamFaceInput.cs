using AvatarBridge.Core.Client;
using UnityEngine;

namespace AvatarBridge
{
    /// <summary>
    /// Feeds a webcam to the face session as rgb8 images. Unity's pixel rows run bottom to top and the
    /// protocol's top to bottom, so rows are flipped while converting; buffers are reused, so sending
    /// allocates nothing per frame.
    /// </summary>
    [AddComponentMenu("Avatar Bridge/Webcam Face Input")]
    public sealed class WebcamFaceInput : MonoBehaviour
    {
        [SerializeField] BridgeClient _client;
        [SerializeField, Tooltip("Empty = the first camera.")]
        string _deviceName = "";
        [SerializeField] int _requestedWidth = 640;
        [SerializeField] int _requestedHeight = 480;
        [SerializeField, Range(1, 60), Tooltip("Images sent per second at most (the face models run at about 30).")]
        int _maxRate = 30;

        WebCamTexture _camera;
        Color32[] _pixels = new Color32[0];
        byte[] _rgb = new byte[0];
        float _nextSend;

        public BridgeClient Client { get => _client; set => _client = value; }

        /// <summary>The running camera texture (null while disabled), e.g. to show it on a RawImage.</summary>
        public WebCamTexture Camera => _camera;

        void OnEnable()
        {
            _camera = string.IsNullOrEmpty(_deviceName)
                ? new WebCamTexture(_requestedWidth, _requestedHeight, _maxRate)
                : new WebCamTexture(_deviceName, _requestedWidth, _requestedHeight, _maxRate);
            _camera.Play();
        }

        void OnDisable()
        {
            if (_camera == null) return;
            _camera.Stop();
            Destroy(_camera);
            _camera = null;
        }

        void Update()
        {
            var session = _client != null ? _client.FaceSession : null;
            if (session == null || !session.IsOpen || !_camera.didUpdateThisFrame || Time.unscaledTime < _nextSend) return;
            _nextSend = Time.unscaledTime + 1f / _maxRate;
            int width = _camera.width, height = _camera.height;
            if (width < 16 || height < 16) return; // the camera reports 16x16 until it has started
            if (_pixels.Length != width * height)
            {
                _pixels = new Color32[width * height];
                _rgb = new byte[width * height * 3];
            }
            _camera.GetPixels32(_pixels);
            Send(_client.Client, session, _pixels, width, height, _rgb);
        }

        /// <summary>Converts bottom-up Color32 pixels to top-down rgb8 in rgb and sends them to a face session.</summary>
        public static bool Send(SessionClient client, BridgeSession session, Color32[] pixels, int width, int height, byte[] rgb)
        {
            long captured = WallClock.NowNs();
            for (int y = 0; y < height; y++)
            {
                int source = (height - 1 - y) * width;
                int target = y * width * 3;
                for (int x = 0; x < width; x++)
                {
                    var p = pixels[source + x];
                    rgb[target++] = p.r;
                    rgb[target++] = p.g;
                    rgb[target++] = p.b;
                }
            }
            return client.SendImage(session, width, height, rgb, captured);
        }
    }
}
