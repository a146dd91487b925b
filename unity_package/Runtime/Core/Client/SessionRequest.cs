using System.Collections.Generic;
using AvatarBridge.Core.Protocol;

namespace AvatarBridge.Core.Client
{
    /// <summary>What to open: a pipeline, optionally a model and pipeline options (section 4.3).</summary>
    public sealed class SessionRequest
    {
        public SessionRequest(Pipeline pipeline, string model = null, IDictionary<string, object> options = null)
        {
            Pipeline = pipeline;
            Model = string.IsNullOrEmpty(model) ? null : model;
            Options = options;
        }

        public Pipeline Pipeline { get; }
        public string Model { get; }
        public IDictionary<string, object> Options { get; }
    }
}
