using UnityEditor;
using UnityEngine;

namespace AvatarBridge.Editor
{
    /// <summary>AnimationRecorder's inspector: start, stop and, in play mode, save the recording as an .anim asset.</summary>
    [CustomEditor(typeof(AnimationRecorder))]
    sealed class AnimationRecorderEditor : UnityEditor.Editor
    {
        public override bool RequiresConstantRepaint() => Application.isPlaying;

        public override void OnInspectorGUI()
        {
            DrawDefaultInspector();
            if (!Application.isPlaying) return;
            var recorder = (AnimationRecorder)target;
            EditorGUILayout.Space();
            EditorGUILayout.LabelField("Recorded", recorder.Frames + " frames" + (recorder.IsRecording ? " (recording)" : ""));
            if (!recorder.IsRecording && GUILayout.Button("Start recording")) recorder.StartRecording();
            if (recorder.IsRecording && GUILayout.Button("Stop recording")) recorder.StopRecording();
            if (!recorder.IsRecording && recorder.Frames > 0 && GUILayout.Button("Save as AnimationClip…"))
            {
                string path = EditorUtility.SaveFilePanelInProject("Save recording", "Avatar Bridge recording", "anim", "Where to save the recorded clip");
                if (!string.IsNullOrEmpty(path)) AssetDatabase.CreateAsset(recorder.BuildClip(System.IO.Path.GetFileNameWithoutExtension(path)), path);
            }
        }
    }
}
