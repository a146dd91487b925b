namespace AvatarBridge.Core.Rig
{
    /// <summary>
    /// Names behind a speech frame's arrays (section 5.2) and the blendshape spellings avatars give
    /// them, so a driver can bind a mesh's viseme or vowel shapes by name: Oculus visemes as OVRLipSync
    /// names them, as Ready Player Me exports them ("viseme_aa", "viseme_I") and as VRChat avatars do
    /// ("vrc.v_aa"); vowels as VRM presets ("A", or VRM 1.0's "aa"), VRoid ("Fcl_MTH_A") and MMD ("あ") name them.
    /// </summary>
    public static class SpeechShapes
    {
        /// <summary>The 15 Oculus visemes in frame order.</summary>
        public static readonly string[] VisemeNames =
        {
            "sil", "PP", "FF", "TH", "DD", "kk", "CH", "SS", "nn", "RR", "aa", "E", "ih", "oh", "ou",
        };

        /// <summary>VRM's five vowels in frame order.</summary>
        public static readonly string[] VowelNames = { "A", "I", "U", "E", "O" };

        /// <summary>VRM 1.0's preset expression for each vowel (UniVRM's ExpressionPreset spelling).</summary>
        public static readonly string[] VrmVowelPresets = { "aa", "ih", "ou", "ee", "oh" };

        /// <summary>Other spellings of each viseme on meshes, tried after the name itself (BlendshapeBinder.Bind's spellings).</summary>
        public static readonly string[][] VisemeSpellings = Spell(VisemeNames, new[] { "viseme_{0}", "v_{0}" },
            // Ready Player Me shortens the three last vowels.
            new[] { null, null, null, null, null, null, null, null, null, null, null, null, "viseme_I", "viseme_O", "viseme_U" });

        /// <summary>Other spellings of each vowel on meshes, tried after the name itself.</summary>
        public static readonly string[][] VowelSpellings = Spell(VowelNames, new[] { "Fcl_MTH_{0}", "MTH_{0}" },
            new[] { "\u3042", "\u3044", "\u3046", "\u3048", "\u304a" }, VrmVowelPresets);

        static string[][] Spell(string[] names, string[] patterns, params string[][] extra)
        {
            var spellings = new string[names.Length][];
            for (int i = 0; i < names.Length; i++)
            {
                var list = new System.Collections.Generic.List<string>();
                foreach (var pattern in patterns) list.Add(string.Format(pattern, names[i]));
                foreach (var column in extra)
                    if (column[i] != null) list.Add(column[i]);
                spellings[i] = list.ToArray();
            }
            return spellings;
        }
    }
}
