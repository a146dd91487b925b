// COMPILE CHECK ONLY. The UnityEngine signatures the package uses, with empty bodies, so that
// scripts/test_csharp.sh can type-check the Unity-facing components with mcs where Unity is not
// installed. Nothing here behaves like Unity; the folder ends in "~" so Unity never imports it.
// Grouped in one file on purpose: it stands in for an external assembly, not package code.
using System;

namespace UnityEngine
{
    public class Object
    {
        public string name { get; set; }
        public static void Destroy(Object o) { }
        public static void DestroyImmediate(Object o) { }
        public static implicit operator bool(Object o) => o != null;
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
        public bool enabled { get; set; }
    }

    public class MonoBehaviour : Behaviour
    {
    }

    public class ScriptableObject : Object
    {
        public static T CreateInstance<T>() where T : ScriptableObject => null;
    }

    public sealed class GameObject : Object
    {
        public GameObject(string name) { }
        public Transform transform => null;
        public T AddComponent<T>() where T : Component => null;
        public void SetActive(bool value) { }
        public static GameObject CreatePrimitive(PrimitiveType type) => null;
    }

    public class Transform : Component
    {
        public Vector3 position { get; set; }
        public Quaternion rotation { get; set; }
        public Quaternion localRotation { get; set; }
        public Vector3 localPosition { get; set; }
        public Vector3 localScale { get; set; }
        public Transform parent { get; set; }
        public void SetParent(Transform p, bool worldPositionStays) { }
        public Vector3 TransformPoint(Vector3 p) => p;
        public Vector3 InverseTransformPoint(Vector3 p) => p;
    }

    public struct Vector3
    {
        public float x, y, z;
        public Vector3(float x, float y, float z) { this.x = x; this.y = y; this.z = z; }
        public static Vector3 forward => new Vector3(0, 0, 1);
        public static Vector3 up => new Vector3(0, 1, 0);
        public static Vector3 one => new Vector3(1, 1, 1);
        public static Vector3 operator +(Vector3 a, Vector3 b) => a;
        public static Vector3 operator -(Vector3 a, Vector3 b) => a;
        public static Vector3 operator *(Vector3 a, float s) => a;
        public static float Distance(Vector3 a, Vector3 b) => 0;
    }

    public struct Quaternion
    {
        public float x, y, z, w;
        public Quaternion(float x, float y, float z, float w) { this.x = x; this.y = y; this.z = z; this.w = w; }
        public static Quaternion identity => new Quaternion(0, 0, 0, 1);
        public static Quaternion Inverse(Quaternion q) => q;
        public static Quaternion Slerp(Quaternion a, Quaternion b, float t) => b;
        public static Quaternion Euler(float x, float y, float z) => identity;
        public static float Angle(Quaternion a, Quaternion b) => 0;
        public static Quaternion operator *(Quaternion a, Quaternion b) => a;
        public static Vector3 operator *(Quaternion q, Vector3 v) => v;
    }

    public struct Color32
    {
        public byte r, g, b, a;
        public Color32(byte r, byte g, byte b, byte a) { this.r = r; this.g = g; this.b = b; this.a = a; }
    }

    public class Texture : Object
    {
        public virtual int width => 0;
        public virtual int height => 0;
    }

    public sealed class WebCamTexture : Texture
    {
        public static WebCamDevice[] devices => new WebCamDevice[0];
        public WebCamTexture(int width, int height, int fps) { }
        public WebCamTexture(string device, int width, int height, int fps) { }
        public bool didUpdateThisFrame => false;
        public void Play() { }
        public void Stop() { }
        public Color32[] GetPixels32(Color32[] colors) => colors;
    }

    public sealed class Mesh : Object
    {
        public Vector3[] vertices { get; set; }
        public int blendShapeCount => 0;
        public string GetBlendShapeName(int index) => null;
        public void AddBlendShapeFrame(string name, float weight, Vector3[] deltaVertices, Vector3[] deltaNormals, Vector3[] deltaTangents) { }
    }

    public class Renderer : Component
    {
    }

    public sealed class SkinnedMeshRenderer : Renderer
    {
        public Mesh sharedMesh { get; set; }
        public float GetBlendShapeWeight(int index) => 0;
        public void SetBlendShapeWeight(int index, float value) { }
    }

    public sealed class Animator : Behaviour
    {
        public Avatar avatar { get; set; }
        public Transform GetBoneTransform(HumanBodyBones bone) => null;
    }

    public sealed class Avatar : Object
    {
        public bool isHuman => false;
        public HumanDescription humanDescription => default(HumanDescription);
    }

    public struct HumanDescription
    {
        public SkeletonBone[] skeleton;
    }

    public struct SkeletonBone
    {
        public string name;
        public Vector3 position;
        public Quaternion rotation;
        public Vector3 scale;
    }

    public enum HumanBodyBones
    {
        Hips, LeftUpperLeg, RightUpperLeg, LeftLowerLeg, RightLowerLeg, LeftFoot, RightFoot, Spine, Chest, Neck, Head,
        LeftShoulder, RightShoulder, LeftUpperArm, RightUpperArm, LeftLowerArm, RightLowerArm, LeftHand, RightHand,
        LeftToes, RightToes, LeftEye, RightEye, Jaw, UpperChest = 54, LastBone = 55,
    }

    public static class Application
    {
        public static event Action quitting;
        public static bool isPlaying => false;
        public static string unityVersion => "";
    }

    public static class Time
    {
        public static float deltaTime => 0;
        public static float unscaledTime => 0;
    }

    public static class AudioSettings
    {
        public static int outputSampleRate => 48000;
    }

    public static class Debug
    {
        public static void Log(object message) { }
        public static void LogWarning(object message, Object context) { }
    }

    public class GUIStyle
    {
    }

    public enum RuntimeInitializeLoadType
    {
        AfterSceneLoad, BeforeSceneLoad, AfterAssembliesLoaded, BeforeSplashScreen, SubsystemRegistration,
    }

    [AttributeUsage(AttributeTargets.Method)]
    public sealed class RuntimeInitializeOnLoadMethodAttribute : Attribute
    {
        public RuntimeInitializeOnLoadMethodAttribute(RuntimeInitializeLoadType type) { }
    }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class SerializeField : Attribute
    {
    }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class HeaderAttribute : Attribute
    {
        public HeaderAttribute(string header) { }
    }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class TooltipAttribute : Attribute
    {
        public TooltipAttribute(string tooltip) { }
    }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class RangeAttribute : Attribute
    {
        public RangeAttribute(float min, float max) { }
    }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class MinAttribute : Attribute
    {
        public MinAttribute(float min) { }
    }

    [AttributeUsage(AttributeTargets.Class)]
    public sealed class AddComponentMenu : Attribute
    {
        public AddComponentMenu(string menuName) { }
    }

    [AttributeUsage(AttributeTargets.Class)]
    public sealed class DisallowMultipleComponent : Attribute
    {
    }

    [AttributeUsage(AttributeTargets.Class)]
    public sealed class DefaultExecutionOrder : Attribute
    {
        public DefaultExecutionOrder(int order) { }
    }

    [AttributeUsage(AttributeTargets.Class, AllowMultiple = true)]
    public sealed class RequireComponent : Attribute
    {
        public RequireComponent(Type type) { }
    }

    [AttributeUsage(AttributeTargets.Class)]
    public sealed class CreateAssetMenuAttribute : Attribute
    {
        public string menuName { get; set; }
        public string fileName { get; set; }
    }
}

namespace UnityEngine
{
    public static class Mathf
    {
        public const float PI = 3.14159274f;
        public static float Max(float a, float b) => a > b ? a : b;
        public static float Sin(float f) => f;
        public static float Exp(float f) => f;
        public static int RoundToInt(float f) => (int)f;
    }
}

namespace UnityEngine
{
    public sealed class AudioClip : Object
    {
        public static AudioClip Create(string name, int lengthSamples, int channels, int frequency, bool stream) => null;
        public bool SetData(float[] data, int offsetSamples) => true;
    }

    public sealed class AudioSource : Behaviour
    {
        public AudioClip clip { get; set; }
        public bool loop { get; set; }
        public void Play() { }
    }

    public sealed class AudioListener : Behaviour
    {
    }

    public sealed class Camera : Behaviour
    {
        public static Camera main => null;
    }

    public enum LightType
    {
        Spot, Directional, Point,
    }

    public sealed class Light : Behaviour
    {
        public LightType type { get; set; }
    }

    public enum PrimitiveType
    {
        Sphere, Capsule, Cylinder, Cube, Plane, Quad,
    }

    public struct WebCamDevice
    {
        public string name => "";
    }

    public struct Rect
    {
        public Rect(float x, float y, float width, float height) { }
    }

    public static class GUI
    {
        public static void Label(Rect position, string text) { }
    }
}
