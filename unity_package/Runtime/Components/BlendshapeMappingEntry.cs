using System;
using UnityEngine;

namespace AvatarBridge
{
    /// <summary>One row of a BlendshapeMapping: a bridge name driving a mesh blendshape.</summary>
    [Serializable]
    public struct BlendshapeMappingEntry
    {
        [Tooltip("Name in the session's rig: an ARKit name (\"JawOpen\"), a FLAME component (\"Exp03\") or \"EyelidLeft\"/\"EyelidRight\".")]
        public string Source;
        [Tooltip("Blendshape name on the mesh, exactly as the mesh lists it.")]
        public string Target;
        [Tooltip("Multiplier on the source weight.")]
        public float Gain;
    }
}
