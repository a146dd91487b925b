using AvatarBridge.Core.Client;
using UnityEditor;
using UnityEngine;

namespace AvatarBridge.Editor
{
    /// <summary>BridgeClient's inspector: its settings, and in play mode the connection and each session's FPS, latency and loss.</summary>
    [CustomEditor(typeof(BridgeClient))]
    sealed class BridgeClientEditor : UnityEditor.Editor
    {
        public override bool RequiresConstantRepaint() => Application.isPlaying;

        public override void OnInspectorGUI()
        {
            DrawDefaultInspector();
            if (!Application.isPlaying) return;

            var bridge = (BridgeClient)target;
            var client = bridge.Client;
            EditorGUILayout.Space();
            EditorGUILayout.LabelField("Status", EditorStyles.boldLabel);
            EditorGUILayout.LabelField("Connection", bridge.State.ToString());
            if (client == null) return;
            if (client.Hello != null) EditorGUILayout.LabelField("Server", client.Hello.Server);
            EditorGUILayout.LabelField("Round trip", client.RoundTripMs.ToString("0.00") + " ms");
            if (client.InputErrors > 0 && client.LastInputError != null)
                EditorGUILayout.LabelField("Input errors", client.InputErrors + " (last: " + client.LastInputError.Name + ")");
            if (!string.IsNullOrEmpty(client.LastError) && client.State != ConnectionState.Connected)
                EditorGUILayout.HelpBox(client.LastError, MessageType.Warning);
            Session("Face", bridge.FaceSession);
            Session("Motion", bridge.MotionSession);
            Session("Speech", bridge.SpeechSession);
        }

        static void Session(string label, BridgeSession session)
        {
            if (session == null) return;
            EditorGUILayout.Space();
            EditorGUILayout.LabelField(label + " session", EditorStyles.boldLabel);
            var info = session.Info;
            if (info == null)
            {
                EditorGUILayout.LabelField("State", session.Failed ? "refused" : "not open");
                if (!string.IsNullOrEmpty(session.LastError)) EditorGUILayout.HelpBox(session.LastError, MessageType.Warning);
                return;
            }
            var stats = session.Stats.Snapshot();
            EditorGUILayout.LabelField("Session", info.Session + " (" + info.Model + ")");
            EditorGUILayout.LabelField("FPS", stats.Fps.ToString("0.0") + " of " + info.Fps.ToString("0"));
            EditorGUILayout.LabelField("Latency", stats.LatencyMs.ToString("0.0") + " ms capture→arrival, " + stats.TransportMs.ToString("0.0") + " ms publish→arrival");
            EditorGUILayout.LabelField("Engine", stats.EngineUs.ToString("0") + " µs");
            EditorGUILayout.LabelField("Frames", stats.Received + " received, " + stats.Lost + " lost (" + (stats.LossRatio * 100).ToString("0.0") + " %), " + stats.Rejected + " rejected");
        }
    }
}
