// COMPILE CHECK ONLY: the UnityEditor signatures the package's Editor folder uses (see UnityEngine.cs).
using System;
using UnityEngine;

namespace UnityEditor
{
    [AttributeUsage(AttributeTargets.Class)]
    public sealed class InitializeOnLoadAttribute : Attribute
    {
    }

    [AttributeUsage(AttributeTargets.Class)]
    public sealed class CustomEditor : Attribute
    {
        public CustomEditor(Type inspectedType) { }
    }

    public class Editor : ScriptableObject
    {
        public UnityEngine.Object target => null;
        public virtual void OnInspectorGUI() { }
        public virtual bool RequiresConstantRepaint() => false;
        public bool DrawDefaultInspector() => false;
    }

    public enum PlayModeStateChange
    {
        EnteredEditMode, ExitingEditMode, EnteredPlayMode, ExitingPlayMode,
    }

    public static class EditorApplication
    {
        public static event Action<PlayModeStateChange> playModeStateChanged;
    }

    public static class AssemblyReloadEvents
    {
        public delegate void AssemblyReloadCallback();
        public static event AssemblyReloadCallback beforeAssemblyReload;
    }

    public enum MessageType
    {
        None, Info, Warning, Error,
    }

    public static class EditorStyles
    {
        public static GUIStyle boldLabel => null;
    }

    public static class EditorGUILayout
    {
        public static void Space() { }
        public static void LabelField(string label, GUIStyle style) { }
        public static void LabelField(string label, string text) { }
        public static void HelpBox(string message, MessageType type) { }
    }
}
