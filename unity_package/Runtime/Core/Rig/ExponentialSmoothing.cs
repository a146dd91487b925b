using System;

namespace AvatarBridge.Core.Rig
{
    /// <summary>
    /// Frame-rate independent exponential smoothing: the same time constant gives the same feel at
    /// 30 or 144 fps, unlike a fixed per-frame lerp factor.
    /// </summary>
    public static class ExponentialSmoothing
    {
        /// <summary>Blend factor toward the target for a step of dt seconds; timeConstant ≤ 0 means no smoothing (1).</summary>
        public static float Alpha(float dt, float timeConstant) =>
            timeConstant <= 0f ? 1f : 1f - (float)Math.Exp(-Math.Max(0f, dt) / timeConstant);

        /// <summary>state[i] += (target[i] - state[i]) · alpha.</summary>
        public static void Apply(Span<float> state, ReadOnlySpan<float> target, float alpha)
        {
            int n = Math.Min(state.Length, target.Length);
            for (int i = 0; i < n; i++) state[i] += (target[i] - state[i]) * alpha;
        }
    }
}
