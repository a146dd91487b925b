using AvatarBridge;
using UnityEngine;

namespace AvatarBridgeSamples
{
    /// <summary>
    /// Builds the demo at play time, so it needs no asset and no scene file: a BridgeClient, a
    /// procedural 120 BPM beat (or the microphone) feeding the motion session, the webcam feeding the
    /// face session (or, with Lip Sync, the microphone feeding a speech session that drives the face), and a humanoid generated in code (ProceduralAvatar: bones, a Mecanim Avatar, a face
    /// with the 52 ARKit shapes) driven by the package's own HumanoidDriver and BlendshapeDriver, the
    /// same components a real avatar uses. Add it to an empty GameObject in an empty scene and press Play.
    /// </summary>
    public sealed class DemoSetup : MonoBehaviour
    {
        [SerializeField, Tooltip("Also send the webcam to the face session.")]
        bool _useWebcam = true;
        [SerializeField, Tooltip("Dance to the microphone instead of the built-in beat.")]
        bool _useMicrophone;
        [SerializeField, Tooltip("Lip sync: the microphone feeds a speech session, which drives the face (then the dance follows the built-in beat).")]
        bool _lipSync;
        [SerializeField, Tooltip("Drive the body through Mecanim muscles (limits respected) instead of bone rotations.")]
        HumanoidDriveMode _mode = HumanoidDriveMode.Direct;

        void Awake()
        {
            gameObject.SetActive(false); // configure everything before the components' OnEnable runs
            var bridge = gameObject.AddComponent<BridgeClient>();
            bridge.OpenSpeech = _lipSync;

            SkinnedMeshRenderer face;
            var avatar = ProceduralAvatar.Build("Procedural Avatar", out face);
            avatar.transform.SetParent(transform, false);
            var body = avatar.AddComponent<HumanoidDriver>();
            body.Client = bridge;
            body.Mode = _mode;
            var blendshapes = avatar.AddComponent<BlendshapeDriver>();
            blendshapes.Client = bridge;
            blendshapes.Renderers = new[] { face };
            if (_lipSync) blendshapes.Session = BridgeSessionKind.Speech; // the speech frames' ARKit mouth shapes
            // Select the avatar in play mode to record the dance and the face into an AnimationClip.
            var recorder = avatar.AddComponent<AnimationRecorder>();
            recorder.Humanoid = avatar.GetComponent<Animator>();
            recorder.Faces = new[] { face };

            AudioSource music = null;
            if (_lipSync)
            {
                var voice = gameObject.AddComponent<MicrophoneMotionInput>();
                voice.Client = bridge;
                voice.Session = BridgeSessionKind.Speech;
            }
            if (_useMicrophone && !_lipSync)
            {
                gameObject.AddComponent<MicrophoneMotionInput>().Client = bridge;
            }
            else
            {
                music = new GameObject("Beat").AddComponent<AudioSource>();
                music.transform.SetParent(transform, false);
                music.clip = ProceduralBeat.Create(120f);
                music.loop = true;
                music.gameObject.AddComponent<AudioMotionInput>().Client = bridge;
            }
            gameObject.AddComponent<FaceReadout>().Client = bridge;
            if (_useWebcam && WebCamTexture.devices.Length > 0) gameObject.AddComponent<WebcamFaceInput>().Client = bridge;

            if (Camera.main == null)
            {
                // The avatar faces +Z: look at it from the front.
                var camera = new GameObject("Camera").AddComponent<Camera>();
                camera.tag = "MainCamera";
                camera.transform.position = new Vector3(0, 1.2f, 3f);
                camera.transform.rotation = Quaternion.Euler(5, 180, 0);
                camera.gameObject.AddComponent<AudioListener>(); // audio (and so its filters) runs only with a listener
                var light = new GameObject("Light").AddComponent<Light>();
                light.type = LightType.Directional;
                light.transform.rotation = Quaternion.Euler(50, 150, 0);
            }
            gameObject.SetActive(true);
            if (music != null) music.Play(); // only once active: a disabled AudioSource refuses to play
        }
    }
}
