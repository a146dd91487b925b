namespace AvatarBridge.Core.Rig
{
    /// <summary>One source weight (index into a frame array) driving one mesh blendshape with a gain.</summary>
    public struct BlendshapeBinding
    {
        public int Source;
        public int Target;
        public float Gain;

        public BlendshapeBinding(int source, int target, float gain)
        {
            Source = source;
            Target = target;
            Gain = gain;
        }
    }
}
