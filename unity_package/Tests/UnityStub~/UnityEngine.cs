// COMPILE CHECK ONLY. The UnityEngine members the package uses, declared as Unity 2021.3 declares them
// (api-surface.txt lists each one and where Unity's C# reference source declares it), with empty
// bodies, so that scripts/test_csharp.sh can type-check the Unity-facing code with mcs where Unity is
// not installed, and check that the package uses nothing else. Nothing here behaves like Unity; the
// folder ends in "~" so Unity never imports it. One file on purpose: it stands in for an external
// assembly, not package code. Private fields only give structs their size and are not part of the surface.
using System;
using System.Collections;

namespace UnityEngine
{
    public class Object
    {
        public string name { get; set; }
        public static void Destroy(Object obj) { }
        public static void DestroyImmediate(Object obj) { }
        // Unity's lifetime-aware equality: "obj != null" in the package calls these, not reference equality.
        public static bool operator ==(Object x, Object y) => ReferenceEquals(x, y);
        public static bool operator !=(Object x, Object y) => !ReferenceEquals(x, y);
    }

    public class Component : Object
    {
        public Transform transform => null;
        public GameObject gameObject => null;
        public string tag { get; set; }
        public T GetComponent<T>() => default(T);
    }

    public class Behaviour : Component
    {
        public bool isActiveAndEnabled => false;
    }

    public class MonoBehaviour : Behaviour
    {
        public Coroutine StartCoroutine(IEnumerator routine) => null;
        public void StopAllCoroutines() { }
    }

    public class ScriptableObject : Object
    {
    }

    public sealed class GameObject : Object
    {
        public GameObject(string name) { }
        public Transform transform => null;
        public T AddComponent<T>() where T : Component => null;
        public T GetComponent<T>() => default(T);
        public void SetActive(bool value) { }
        public static GameObject CreatePrimitive(PrimitiveType type) => null;
    }

    public class Transform : Component
    {
        public Vector3 position { get; set; }
        public Vector3 localPosition { get; set; }
        public Quaternion rotation { get; set; }
        public Quaternion localRotation { get; set; }
        public Vector3 localScale { get; set; }
        public Transform parent { get; set; }
        public Transform root => null;
        public void SetParent(Transform parent, bool worldPositionStays) { }
        public Vector3 TransformPoint(Vector3 position) => position;
        public Vector3 InverseTransformPoint(Vector3 position) => position;
    }

    public struct Vector3
    {
        public float x;
        public float y;
        public float z;
        public Vector3(float x, float y, float z) { this.x = x; this.y = y; this.z = z; }
        public static Vector3 zero => default(Vector3);
        public static Vector3 one => default(Vector3);
        public static Vector3 forward => default(Vector3);
        public static Vector3 up => default(Vector3);
        public static Vector3 Lerp(Vector3 a, Vector3 b, float t) => a;
        public static float Distance(Vector3 a, Vector3 b) => 0;
        public static Vector3 operator +(Vector3 a, Vector3 b) => a;
        public static Vector3 operator -(Vector3 a, Vector3 b) => a;
        public static Vector3 operator *(Vector3 a, float d) => a;
    }

    public struct Quaternion
    {
        public float x;
        public float y;
        public float z;
        public float w;
        public Quaternion(float x, float y, float z, float w) { this.x = x; this.y = y; this.z = z; this.w = w; }
        public static Quaternion identity => default(Quaternion);
        public static Quaternion FromToRotation(Vector3 fromDirection, Vector3 toDirection) => default(Quaternion);
        public static Quaternion Inverse(Quaternion rotation) => rotation;
        public static Quaternion Slerp(Quaternion a, Quaternion b, float t) => b;
        public static Quaternion Euler(float x, float y, float z) => default(Quaternion);
        public static float Angle(Quaternion a, Quaternion b) => 0;
        public static Quaternion operator *(Quaternion lhs, Quaternion rhs) => lhs;
        public static Vector3 operator *(Quaternion rotation, Vector3 point) => point;
    }

    public struct Color32
    {
        // Unity's Color32 is r, g, b, a bytes (an explicit layout): four bytes, as the webcam path relies on.
        byte _r, _g, _b, _a;
    }

    public struct Mathf
    {
        public const float PI = (float)Math.PI;
        public static float Sin(float f) => 0;
        public static float Abs(float f) => f;
        public static float Max(float a, float b) => a;
        public static float Exp(float power) => 0;
        public static int RoundToInt(float f) => 0;
        public static float Clamp(float value, float min, float max) => value;
        public static float Clamp01(float value) => value;
        public static float Lerp(float a, float b, float t) => a;
    }

    public struct Rect
    {
        public Rect(float x, float y, float width, float height) { }
    }

    public class Texture : Object
    {
        public virtual int width { get; set; }
        public virtual int height { get; set; }
    }

    public sealed class Texture2D : Texture
    {
        public Texture2D(int width, int height, TextureFormat textureFormat, bool mipChain) { }
        public void SetPixels32(Color32[] colors) { }
    }

    public enum TextureFormat
    {
        RGBA32 = 4,
    }

    public static class ImageConversion
    {
        public static byte[] EncodeToJPG(this Texture2D tex, int quality) => null;
    }

    public sealed class WebCamTexture : Texture
    {
        public static WebCamDevice[] devices => null;
        public WebCamTexture(string deviceName, int requestedWidth, int requestedHeight, int requestedFPS) { }
        public WebCamTexture(int requestedWidth, int requestedHeight, int requestedFPS) { }
        public void Play() { }
        public void Stop() { }
        public int videoRotationAngle => 0;
        public bool videoVerticallyMirrored => false;
        public bool didUpdateThisFrame => false;
        public Color32[] GetPixels32(Color32[] colors) => colors;
    }

    public struct WebCamDevice
    {
    }

    public sealed class Mesh : Object
    {
        public Mesh() { }
        public Vector3[] vertices { get; set; }
        public int[] triangles { get; set; }
        public int blendShapeCount => 0;
        public string GetBlendShapeName(int shapeIndex) => null;
        public void AddBlendShapeFrame(string shapeName, float frameWeight, Vector3[] deltaVertices, Vector3[] deltaNormals, Vector3[] deltaTangents) { }
        public void RecalculateBounds() { }
        public void RecalculateNormals() { }
    }

    public class Material : Object
    {
    }

    public class Renderer : Component
    {
        public Material sharedMaterial { get; set; }
    }

    public class SkinnedMeshRenderer : Renderer
    {
        public Mesh sharedMesh { get; set; }
        public float GetBlendShapeWeight(int index) => 0;
        public void SetBlendShapeWeight(int index, float value) { }
    }

    public class Animator : Behaviour
    {
        public Transform GetBoneTransform(HumanBodyBones humanBoneId) => null;
        public Avatar avatar { get; set; }
    }

    public enum HumanBodyBones
    {
        Hips = 0, LeftUpperLeg = 1, RightUpperLeg = 2, LeftLowerLeg = 3, RightLowerLeg = 4, LeftFoot = 5, RightFoot = 6,
        Spine = 7, Chest = 8, UpperChest = 54, Neck = 9, Head = 10, LeftShoulder = 11, RightShoulder = 12,
        LeftUpperArm = 13, RightUpperArm = 14, LeftLowerArm = 15, RightLowerArm = 16, LeftHand = 17, RightHand = 18,
        LeftToes = 19, RightToes = 20,
    }

    public class Avatar : Object
    {
        public bool isValid => false;
        public bool isHuman => false;
        public HumanDescription humanDescription => default(HumanDescription);
    }

    public struct SkeletonBone
    {
        public string name;
        public Vector3 position;
        public Quaternion rotation;
        public Vector3 scale;
    }

    public struct HumanLimit
    {
        public bool useDefaultValues { get => false; set { } }
    }

    public struct HumanBone
    {
        public HumanLimit limit;
        public string boneName { get => null; set { } }
        public string humanName { get => null; set { } }
    }

    public struct HumanDescription
    {
        public HumanBone[] human;
        public SkeletonBone[] skeleton;
    }

    public class AvatarBuilder
    {
        public static Avatar BuildHumanAvatar(GameObject go, HumanDescription humanDescription) => null;
    }

    public struct HumanPose
    {
        public Vector3 bodyPosition;
        public Quaternion bodyRotation;
        public float[] muscles;
    }

    public class HumanPoseHandler : IDisposable
    {
        public HumanPoseHandler(Avatar avatar, Transform root) { }
        public void Dispose() { }
        public void GetHumanPose(ref HumanPose humanPose) { }
        public void SetHumanPose(ref HumanPose humanPose) { }
    }

    public class HumanTrait
    {
        public static int MuscleCount => 0;
        public static string[] MuscleName => null;
    }

    public class Motion : Object
    {
    }

    public sealed class AnimationClip : Motion
    {
        public AnimationClip() { }
        public void SetCurve(string relativePath, Type type, string propertyName, AnimationCurve curve) { }
    }

    public class AnimationCurve
    {
        public AnimationCurve() { }
        public int AddKey(float time, float value) => 0;
    }

    public class Application
    {
        public static event Action quitting;
        public static bool isPlaying => false;
        public static string unityVersion => null;
        public static AsyncOperation RequestUserAuthorization(UserAuthorization mode) => null;
        public static bool HasUserAuthorization(UserAuthorization mode) => false;
    }

    public enum UserAuthorization
    {
        WebCam = 1,
        Microphone = 2,
    }

    public class YieldInstruction
    {
    }

    public class AsyncOperation : YieldInstruction
    {
    }

    public sealed class Coroutine : YieldInstruction
    {
    }

    public class Time
    {
        public static float time => 0;
        public static float deltaTime => 0;
        public static float unscaledTime => 0;
        public static float realtimeSinceStartup => 0;
    }

    public class Debug
    {
        public static void LogWarning(object message) { }
        public static void LogWarning(object message, Object context) { }
    }

    public sealed class GUILayoutOption
    {
    }

    public sealed class GUIStyle
    {
    }

    public class GUILayout
    {
        public static bool Button(string text, params GUILayoutOption[] options) => false;
    }

    public class GUI
    {
        public static void Label(Rect position, string text) { }
    }

    public sealed class Camera : Behaviour
    {
        public static Camera main => null;
    }

    public enum LightType
    {
        Directional = 1,
    }

    public sealed class Light : Behaviour
    {
        public LightType type { get; set; }
    }

    public enum PrimitiveType
    {
        Capsule = 1,
    }

    public enum RuntimeInitializeLoadType
    {
        SubsystemRegistration = 4,
    }

    public class RuntimeInitializeOnLoadMethodAttribute : Scripting.PreserveAttribute
    {
        public RuntimeInitializeOnLoadMethodAttribute(RuntimeInitializeLoadType loadType) { }
    }

    public sealed class SerializeField : Attribute
    {
    }

    public abstract class PropertyAttribute : Attribute
    {
    }

    public class HeaderAttribute : PropertyAttribute
    {
        public HeaderAttribute(string header) { }
    }

    public class TooltipAttribute : PropertyAttribute
    {
        public TooltipAttribute(string tooltip) { }
    }

    public sealed class RangeAttribute : PropertyAttribute
    {
        public RangeAttribute(float min, float max) { }
    }

    public sealed class MinAttribute : PropertyAttribute
    {
        public MinAttribute(float min) { }
    }

    public sealed class AddComponentMenu : Attribute
    {
        public AddComponentMenu(string menuName) { }
    }

    public sealed class DisallowMultipleComponent : Attribute
    {
    }

    public class DefaultExecutionOrder : Attribute
    {
        public DefaultExecutionOrder(int order) { }
    }

    [AttributeUsage(AttributeTargets.Class, AllowMultiple = true)]
    public sealed class RequireComponent : Attribute
    {
        public RequireComponent(Type requiredComponent) { }
    }

    public sealed class CreateAssetMenuAttribute : Attribute
    {
        public string menuName { get; set; }
        public string fileName { get; set; }
    }

    public sealed class AudioSettings
    {
        public static int outputSampleRate { get; set; }
    }

    public sealed class AudioClip : Object
    {
        public int samples => 0;
        public int channels => 0;
        public int frequency => 0;
        public bool GetData(float[] data, int offsetSamples) => false;
        public bool SetData(float[] data, int offsetSamples) => false;
        public static AudioClip Create(string name, int lengthSamples, int channels, int frequency, bool stream) => null;
    }

    public class AudioBehaviour : Behaviour
    {
    }

    public sealed class AudioListener : AudioBehaviour
    {
    }

    public sealed class AudioSource : AudioBehaviour
    {
        public AudioClip clip { get; set; }
        public void Play() { }
        public bool loop { get; set; }
    }

    public sealed class Microphone
    {
        public static AudioClip Start(string deviceName, bool loop, int lengthSec, int frequency) => null;
        public static void End(string deviceName) { }
        public static int GetPosition(string deviceName) => 0;
    }
}

namespace UnityEngine.Scripting
{
    public class PreserveAttribute : Attribute
    {
    }
}

namespace UnityEngine.Android
{
    public struct Permission
    {
        public const string Camera = "android.permission.CAMERA";
        public const string Microphone = "android.permission.RECORD_AUDIO";
        public static bool HasUserAuthorizedPermission(string permission) => false;
        public static void RequestUserPermission(string permission) { }
    }
}
