using AvatarBridge;
using AvatarBridge.Core.Protocol;
using UnityEngine;

namespace AvatarBridgeSamples
{
    /// <summary>Shows the connection and the five strongest ARKit weights of the face session.</summary>
    public sealed class FaceReadout : MonoBehaviour
    {
        public BridgeClient Client;

        readonly float[] _weights = new float[ProtocolConstants.BlendshapeCount];
        string[] _names = new string[0];
        bool _faceFound;
        long _cursor;

        void Update()
        {
            var session = Client != null ? Client.FaceSession : null;
            var info = session?.Info;
            if (info == null) return;
            _names = info.FaceRig.Blendshapes;
            Frame frame;
            if (!session.Frames.TryGetNewest(ref _cursor, out frame) || frame.Blendshapes.Length != _weights.Length) return;
            frame.Blendshapes.CopyTo(_weights);
            _faceFound = frame.FaceFound;
        }

        void OnGUI()
        {
            string text = "Bridge: " + (Client != null ? Client.State.ToString() : "none");
            if (_names.Length == _weights.Length)
            {
                text += _faceFound ? "\nFace:" : "\nFace: not found";
                var used = new bool[_weights.Length];
                for (int n = 0; n < 5; n++)
                {
                    int best = -1;
                    for (int i = 0; i < _weights.Length; i++)
                        if (!used[i] && (best < 0 || _weights[i] > _weights[best])) best = i;
                    used[best] = true;
                    text += "\n  " + _names[best] + " " + (_weights[best] * 100).ToString("0");
                }
            }
            GUI.Label(new Rect(10, 10, 400, 200), text);
        }
    }
}
