using UnityEngine;

namespace AvatarBridgeSamples
{
    /// <summary>A looping drum pattern (kick on the beat, hi-hat on the off-beat, a bass note) generated in code, so the demo needs no audio asset.</summary>
    public static class ProceduralBeat
    {
        const int Rate = 48000;

        public static AudioClip Create(float bpm)
        {
            float beat = 60f / bpm;
            int length = Mathf.RoundToInt(beat * 8 * Rate); // two bars
            var samples = new float[length];
            var random = new System.Random(7);
            for (int i = 0; i < length; i++)
            {
                float t = (float)i / Rate;
                float inBeat = t % beat;
                float offBeat = (t + beat / 2) % beat;
                float kick = Mathf.Sin(2 * Mathf.PI * (50 + 100 * Mathf.Exp(-inBeat * 30)) * inBeat) * Mathf.Exp(-inBeat * 8);
                float hat = ((float)random.NextDouble() * 2 - 1) * Mathf.Exp(-offBeat * 60) * 0.3f;
                float bass = Mathf.Sin(2 * Mathf.PI * 55 * t) * 0.2f;
                samples[i] = (kick * 0.8f + hat + bass) * 0.5f;
            }
            var clip = AudioClip.Create("Procedural beat", length, 1, Rate, false);
            clip.SetData(samples, 0);
            return clip;
        }
    }
}
