using System;
using System.Collections.Generic;

namespace AvatarBridge.Core.Rig
{
    /// <summary>
    /// Matches the rig's source names (ARKit "EyeBlinkLeft", FLAME "Exp07", "EyelidLeft") to a mesh's
    /// blendshape names. Explicit pairs win; otherwise names match after normalizing the spellings
    /// exporters produce: "blendShape1.eyeBlinkLeft", "eyeBlink_L", "EyeBlinkLeft" are one name.
    /// </summary>
    public static class BlendshapeBinder
    {
        /// <param name="explicitPairs">source name → target name and gain; may be null.</param>
        /// <param name="matchByName">also bind sources that have no explicit pair by normalized name.</param>
        public static BlendshapeBinding[] Bind(string[] sourceNames, string[] targetNames, IList<KeyValuePair<string, KeyValuePair<string, float>>> explicitPairs, bool matchByName) =>
            Bind(sourceNames, null, targetNames, explicitPairs, matchByName);

        /// <param name="spellings">per source, other names it goes by on meshes (e.g. SpeechShapes.VisemeSpellings),
        /// tried by normalized name after the source's own name when matching by name; may be null.</param>
        public static BlendshapeBinding[] Bind(string[] sourceNames, string[][] spellings, string[] targetNames,
            IList<KeyValuePair<string, KeyValuePair<string, float>>> explicitPairs, bool matchByName)
        {
            var bindings = new List<BlendshapeBinding>();
            var explicitSources = new HashSet<string>(StringComparer.OrdinalIgnoreCase);
            if (explicitPairs != null)
            {
                foreach (var pair in explicitPairs)
                {
                    int source = IndexOf(sourceNames, pair.Key, false);
                    int target = IndexOf(targetNames, pair.Value.Key, false);
                    if (source < 0 || target < 0) continue; // an asset made for another rig or mesh: bind what fits
                    bindings.Add(new BlendshapeBinding(source, target, pair.Value.Value));
                    explicitSources.Add(sourceNames[source]);
                }
            }
            if (matchByName)
            {
                for (int s = 0; s < sourceNames.Length; s++)
                {
                    if (explicitSources.Contains(sourceNames[s])) continue;
                    int target = IndexOf(targetNames, sourceNames[s], true);
                    for (int k = 0; target < 0 && spellings != null && s < spellings.Length && k < spellings[s].Length; k++)
                        target = IndexOf(targetNames, spellings[s][k], true);
                    if (target >= 0) bindings.Add(new BlendshapeBinding(s, target, 1f));
                }
            }
            return bindings.ToArray();
        }

        /// <summary>
        /// output[target] = clamp(sum of source·gain, min, max)·scale for every bound target; other
        /// entries are left alone so a mesh's unbound shapes keep whatever else drives them. ARKit
        /// weights use [0, 1]; FLAME coefficients are signed and use a wider range.
        /// </summary>
        public static void Evaluate(BlendshapeBinding[] bindings, ReadOnlySpan<float> source, float min, float max, float scale, Span<float> output)
        {
            for (int i = 0; i < bindings.Length; i++) output[bindings[i].Target] = 0;
            for (int i = 0; i < bindings.Length; i++)
            {
                var b = bindings[i];
                if (b.Source < source.Length) output[b.Target] += source[b.Source] * b.Gain;
            }
            for (int i = 0; i < bindings.Length; i++)
            {
                // Several bindings can share a target: clamp and scale the sum once.
                if (!IsFirstBinding(bindings, i)) continue;
                int t = bindings[i].Target;
                float v = output[t];
                output[t] = (float.IsNaN(v) ? 0f : Math.Min(max, Math.Max(min, v))) * scale;
            }
        }

        /// <summary>Lower-case, the part after the last '.', "_L"/"_R" spelt out, separators removed.</summary>
        public static string Normalize(string name)
        {
            int dot = name.LastIndexOf('.');
            string n = (dot >= 0 ? name.Substring(dot + 1) : name).ToLowerInvariant();
            if (n.EndsWith("_l") || n.EndsWith("-l")) n = n.Substring(0, n.Length - 2) + "left";
            else if (n.EndsWith("_r") || n.EndsWith("-r")) n = n.Substring(0, n.Length - 2) + "right";
            var chars = new char[n.Length];
            int count = 0;
            foreach (char c in n)
                if (char.IsLetterOrDigit(c)) chars[count++] = c;
            return new string(chars, 0, count);
        }

        static bool IsFirstBinding(BlendshapeBinding[] bindings, int index)
        {
            for (int i = 0; i < index; i++)
                if (bindings[i].Target == bindings[index].Target) return false;
            return true;
        }

        static int IndexOf(string[] names, string wanted, bool normalized)
        {
            if (wanted == null) return -1;
            string key = normalized ? Normalize(wanted) : wanted;
            for (int i = 0; i < names.Length; i++)
            {
                string candidate = normalized ? Normalize(names[i]) : names[i];
                if (string.Equals(candidate, key, StringComparison.OrdinalIgnoreCase)) return i;
            }
            return -1;
        }
    }
}
