using System.Collections.Generic;
using UnityEngine;

namespace AvatarBridge
{
    /// <summary>
    /// Which mesh blendshape each bridge weight drives, for meshes whose names do not match the
    /// rig's (after normalization: "blendShape1.eyeBlink_L" already matches "EyeBlinkLeft").
    /// </summary>
    [CreateAssetMenu(menuName = "Avatar Bridge/Blendshape Mapping", fileName = "BlendshapeMapping")]
    public sealed class BlendshapeMapping : ScriptableObject
    {
        [SerializeField] List<BlendshapeMappingEntry> _entries = new List<BlendshapeMappingEntry>();
        [SerializeField, Tooltip("Also bind, by normalized name, every source the entries do not mention.")]
        bool _matchRemainingByName = true;

        public List<BlendshapeMappingEntry> Entries => _entries;
        public bool MatchRemainingByName => _matchRemainingByName;

        /// <summary>The entries in the shape the core binder takes (a gain of 0 counts as 1: an unset field in the inspector).</summary>
        public List<KeyValuePair<string, KeyValuePair<string, float>>> Pairs()
        {
            var pairs = new List<KeyValuePair<string, KeyValuePair<string, float>>>(_entries.Count);
            foreach (var e in _entries)
                pairs.Add(new KeyValuePair<string, KeyValuePair<string, float>>(e.Source, new KeyValuePair<string, float>(e.Target, e.Gain == 0 ? 1 : e.Gain)));
            return pairs;
        }
    }
}
