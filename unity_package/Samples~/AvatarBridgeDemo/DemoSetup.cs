using AvatarBridge;
using UnityEngine;

namespace AvatarBridgeSamples
{
    /// <summary>
    /// Builds the demo at play time, so the scene needs no model assets: a BridgeClient, a
    /// procedural 120 BPM beat feeding the motion session, a stick figure dancing to the frames,
    /// the webcam feeding the face session (if enabled) and a readout of the strongest ARKit weights.
    /// To drive your own avatar instead, see the package README.
    /// </summary>
    public sealed class DemoSetup : MonoBehaviour
    {
        [SerializeField, Tooltip("Also send the webcam to the face session.")]
        bool _useWebcam = true;

        void Awake()
        {
            gameObject.SetActive(false); // configure everything before the components' OnEnable runs
            var bridge = gameObject.AddComponent<BridgeClient>();

            var music = new GameObject("Beat").AddComponent<AudioSource>();
            music.transform.SetParent(transform, false);
            music.clip = ProceduralBeat.Create(120f);
            music.loop = true;
            music.gameObject.AddComponent<AudioMotionInput>().Client = bridge;

            var figure = new GameObject("Stick Figure").AddComponent<StickFigure>();
            figure.Client = bridge;
            gameObject.AddComponent<FaceReadout>().Client = bridge;

            if (_useWebcam && WebCamTexture.devices.Length > 0) gameObject.AddComponent<WebcamFaceInput>().Client = bridge;

            if (Camera.main == null)
            {
                var camera = new GameObject("Camera").AddComponent<Camera>();
                camera.tag = "MainCamera";
                camera.transform.position = new Vector3(0, 1, -3.5f);
                camera.gameObject.AddComponent<AudioListener>(); // audio (and so its filters) runs only with a listener
                var light = new GameObject("Light").AddComponent<Light>();
                light.type = LightType.Directional;
                light.transform.rotation = Quaternion.Euler(50, -30, 0);
            }
            gameObject.SetActive(true);
            music.Play(); // only once active: a disabled AudioSource refuses to play
        }
    }
}
