// COMPILE CHECK ONLY: the UnityEditor members the package's Editor folder uses, as Unity 2021.3
// declares them (see UnityEngine.cs and api-surface.txt). A separate assembly, so that runtime code
// referencing UnityEditor (which breaks player builds) fails to compile here.
using System;
using UnityEngine;

namespace UnityEditor
{
    public class InitializeOnLoadAttribute : Attribute
    {
    }

    public class CustomEditor : Attribute
    {
        public CustomEditor(Type inspectedType) { }
    }

    public class Editor : ScriptableObject
    {
        public UnityEngine.Object target { get; set; }
        public bool DrawDefaultInspector() => false;
        public virtual void OnInspectorGUI() { }
        public virtual bool RequiresConstantRepaint() => false;
    }

    public enum PlayModeStateChange
    {
        ExitingPlayMode = 3,
    }

    public sealed class EditorApplication
    {
        public static event Action<PlayModeStateChange> playModeStateChanged;
    }

    public static class AssemblyReloadEvents
    {
        public delegate void AssemblyReloadCallback();
        public static event AssemblyReloadCallback beforeAssemblyReload;
    }

    public class EditorUtility
    {
        public static string SaveFilePanelInProject(string title, string defaultName, string extension, string message) => null;
    }

    public sealed class AssetDatabase
    {
        public static void CreateAsset(UnityEngine.Object asset, string path) { }
    }

    public enum MessageType
    {
        Warning = 2,
    }

    public sealed class EditorStyles
    {
        public static GUIStyle boldLabel => null;
    }

    public sealed class EditorGUILayout
    {
        public static void LabelField(string label, GUIStyle style, params GUILayoutOption[] options) { }
        public static void LabelField(string label, string label2, params GUILayoutOption[] options) { }
        public static void HelpBox(string message, MessageType type) { }
        public static void Space() { }
    }
}
