using System.Collections;
using System.Runtime.InteropServices;
using AvatarBridge.Core.Client;
using UnityEngine;

namespace AvatarBridge
{
    /// <summary>
    /// Feeds a webcam to the face session. Asks for camera permission first (Android, iOS, WebGL).
    /// The main thread only copies the texture's pixels (GetPixels32 must run there) into the client's
    /// queue; the client's sender thread turns them upright (Unity's bottom-up rows, the camera's
    /// videoRotationAngle and videoVerticallyMirrored, the optional mirror) into rgb8. Buffers are
    /// reused, so a running camera allocates nothing per frame. With a JPEG quality set (protocol 1.3) an
    /// upright camera's image is encoded on the main thread by Unity's ImageConversion.EncodeToJPG (a few ms
    /// for 640x480, and a new byte[] per image) and sent as JPEG: ~20x fewer bytes to the bridge. That engine
    /// glue is not run by any test here; the core's SendJpeg is (LiveBridgeTests.FaceSessionTakesJpegImages).
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
        [SerializeField, Tooltip("Flip left and right before sending (only for a camera that delivers a mirrored picture; the bridge expects the camera's own view).")]
        bool _mirror;
        [SerializeField, Range(0, 100), Tooltip("0: send raw rgb8. 1-100: send each image as a JPEG of this quality (needs a bridge with protocol 1.3). Only a camera whose picture is upright (videoRotationAngle 0, not vertically mirrored) with Mirror off is sent as JPEG; others stay rgb8.")]
        int _jpegQuality;

        WebCamTexture _camera;
        Color32[] _pixels = new Color32[0];
        Texture2D _jpegTexture;
        float _nextSend;

        public BridgeClient Client { get => _client; set => _client = value; }
        public bool Mirror { get => _mirror; set => _mirror = value; }
        public int JpegQuality { get => _jpegQuality; set => _jpegQuality = System.Math.Min(100, System.Math.Max(0, value)); }

        /// <summary>The running camera texture (null while disabled or waiting for permission), e.g. to show it on a RawImage.</summary>
        public WebCamTexture Camera => _camera;

        /// <summary>Set when the camera could not be opened (permission denied).</summary>
        public string LastError { get; private set; }

        void OnEnable()
        {
            if (BridgePlatform.HasSockets) StartCoroutine(Open());
        }

        IEnumerator Open()
        {
            yield return DevicePermission.Request(true);
            if (!DevicePermission.Granted(true))
            {
                LastError = "camera permission was not granted";
                Debug.LogWarning("WebcamFaceInput: " + LastError, this);
                yield break;
            }
            if (!isActiveAndEnabled) yield break; // disabled while the dialog was up
            _camera = string.IsNullOrEmpty(_deviceName)
                ? new WebCamTexture(_requestedWidth, _requestedHeight, _maxRate)
                : new WebCamTexture(_deviceName, _requestedWidth, _requestedHeight, _maxRate);
            _camera.Play();
        }

        void OnDisable()
        {
            StopAllCoroutines();
            if (_camera == null) return;
            _camera.Stop();
            Destroy(_camera);
            _camera = null;
            if (_jpegTexture != null) Destroy(_jpegTexture);
            _jpegTexture = null;
        }

        void Update()
        {
            var session = _client != null ? _client.FaceSession : null;
            if (_camera == null || session == null || !session.IsOpen || !_camera.didUpdateThisFrame || Time.unscaledTime < _nextSend) return;
            _nextSend = Time.unscaledTime + 1f / _maxRate;
            int width = _camera.width, height = _camera.height;
            if (width < 16 || height < 16) return; // the camera reports 16x16 until it has started
            if (_pixels.Length != width * height) _pixels = new Color32[width * height];
            long captureNs = WallClock.NowNs();
            _camera.GetPixels32(_pixels);
            if (_jpegQuality > 0 && _camera.videoRotationAngle == 0 && !_camera.videoVerticallyMirrored && !_mirror)
            {
                if (_jpegTexture == null || _jpegTexture.width != width || _jpegTexture.height != height)
                {
                    if (_jpegTexture != null) Destroy(_jpegTexture);
                    _jpegTexture = new Texture2D(width, height, TextureFormat.RGBA32, false);
                }
                _jpegTexture.SetPixels32(_pixels); // bottom-up rows, as read; the encoder writes the picture upright
                _client.Client.SendJpeg(session, UnityEngine.ImageConversion.EncodeToJPG(_jpegTexture, _jpegQuality), captureNs);
                return;
            }
            var source = ImageSource.Rgba32BottomUp;
            source.RotationClockwise = _camera.videoRotationAngle;
            source.VerticallyMirrored = _camera.videoVerticallyMirrored;
            source.Mirror = _mirror;
            _client.Client.SendImage(session, width, height, MemoryMarshal.AsBytes(new System.ReadOnlySpan<Color32>(_pixels)), source, captureNs);
        }
    }
}
